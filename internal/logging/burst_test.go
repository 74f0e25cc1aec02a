package logging

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/testkit"
)

// jsonLines is each JSON object line of what buf holds.
func jsonLines(buf *testkit.Buffer) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if l != "" && json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// A burst of go-redis warnings is its first line, a summary each period
// while it lasts and one when it ends; other lines pass as they are.
func TestBurstsOfRedisClientWarnings(t *testing.T) {
	var buf testkit.Buffer
	const quiet, every = 300 * time.Millisecond, 400 * time.Millisecond
	log := slog.New(limitBursts(slog.NewJSONHandler(&buf, nil), quiet, every)).With("service", "worker")
	redisLog, asynqLog := Redis(log), Asynq(log)
	deadline := time.Now().Add(time.Second)
	n := 0
	for time.Now().Before(deadline) {
		redisLog.Printf(t.Context(), "dial tcp 127.0.0.1:1: connect: connection refused")
		asynqLog.Warn("Failed to forward scheduled tasks")
		n++
		time.Sleep(10 * time.Millisecond)
	}
	asynqLog.Info("Starting processing") // below warn: not held back
	log.Warn("ledger migration failed; retrying")
	time.Sleep(quiet + 300*time.Millisecond)

	count := map[string]int{}
	held := map[string]float64{}
	for _, l := range jsonLines(&buf) {
		comp, _ := l["component"].(string)
		msg, _ := l["msg"].(string)
		if l["service"] != "worker" {
			t.Errorf("line without service: %v", l)
		}
		switch {
		case l["burst"] != nil:
			count[comp+" first"]++
		case strings.HasSuffix(msg, " still failing"):
			count[comp+" summary"]++
			held[comp] += l["held_back"].(float64)
		case strings.HasSuffix(msg, " errors stopped"):
			count[comp+" end"]++
			if l["held_back"].(float64) != float64(n-1) {
				t.Errorf("%s: end held back %v, want %d", comp, l["held_back"], n-1)
			}
		default:
			count[msg]++
		}
	}
	for _, comp := range []string{"go-redis", "asynq"} {
		if count[comp+" first"] != 1 || count[comp+" end"] != 1 || count[comp+" summary"] < 1 || count[comp+" summary"] > 3 {
			t.Errorf("%s: %v, want one first line, one to three summaries, one end (%d lines given)", comp, count, n)
		}
	}
	if count["Starting processing"] != 1 || count["ledger migration failed; retrying"] != 1 {
		t.Errorf("other lines held back: %v", count)
	}
}
