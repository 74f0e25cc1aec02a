package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func lines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func TestSecretsNeverReachTheLine(t *testing.T) {
	var b bytes.Buffer
	log := New(&b, "webhook", "hunter2-secret", "")
	log.Info("dial redis://:hunter2-secret@h:6379 failed",
		"err", errors.New("auth hunter2-secret refused"), "url", "redis://:hunter2-secret@h", "n", 3)
	if strings.Contains(b.String(), "hunter2-secret") {
		t.Fatalf("secret in the log: %s", b.String())
	}
	l := lines(t, &b)[0]
	if l["service"] != "webhook" || l["msg"] != "dial redis://:"+Redacted+"@h:6379 failed" ||
		l["err"] != "auth "+Redacted+" refused" || l["n"] != float64(3) {
		t.Fatalf("line %v", l)
	}
}

// go-redis's own lines come out as JSON at warn level, redacted too.
func TestRedisLinesAreJSON(t *testing.T) {
	var b bytes.Buffer
	Redis(New(&b, "worker", "pw0123456789")).Printf(context.Background(),
		"redis: connection pool: failed to dial after %d attempts: %v\n", 5, errors.New("dial tcp pw0123456789: refused"))
	l := lines(t, &b)[0]
	if l["level"] != "WARN" || l["component"] != "go-redis" || l["service"] != "worker" ||
		l["msg"] != "redis: connection pool: failed to dial after 5 attempts: dial tcp "+Redacted+": refused" {
		t.Fatalf("line %v", l)
	}
}

// The binaries' logger masks a secret, not the words it starts with: a
// webhook secret "webhook-..." once turned every line's service into "***".
func TestASecretStartingWithAWordLeavesTheWord(t *testing.T) {
	var b bytes.Buffer
	log := New(&b, "webhook", "webhook-5f1c0e2d9a7b")
	log.Info("webhook accepted", "event", "pull_request", "echo", "got webhook-5f1c0e2d9a7b")
	l := lines(t, &b)[0]
	if l["service"] != "webhook" || l["msg"] != "webhook accepted" || l["echo"] != "got "+Redacted {
		t.Fatalf("line %v", l)
	}
}
