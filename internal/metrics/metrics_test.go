package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/version"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestReadyzNamesTheFailingCheck(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	reg := NewRegistry()
	logs := &bytes.Buffer{}
	h := Health(reg, slog.New(slog.NewJSONHandler(logs, nil)), map[string]Check{
		"redis": func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		"key":   func(context.Context) error { return nil }})
	if code, body := get(t, h, "/readyz"); code != 200 || body != `{"status":"ready"}`+"\n" {
		t.Fatalf("readyz with Redis up: %d %s", code, body)
	}
	srv.Kill()
	code, body := get(t, h, "/readyz")
	if want := `{"failed":{"redis":"unavailable"},"status":"not ready"}` + "\n"; code != 503 || body != want {
		t.Fatalf("readyz with Redis down: %d %s, want 503 %s", code, body, want)
	}
	// The reason is in the log, never in the answer: Redis's error names
	// its address.
	addr := srv.Addr
	if strings.Contains(body, addr) || !strings.Contains(logs.String(), addr) || !strings.Contains(logs.String(), `"check":"redis"`) {
		t.Fatalf("Redis's error (naming %s) in the answer %q or not in the log %q", addr, body, logs)
	}
	if code, _ := get(t, h, "/healthz"); code != 200 {
		t.Fatalf("healthz must not depend on Redis: %d", code)
	}
}

type refusal struct{}

func (refusal) Error() string { return "GitHub says 401 to app 12345" }
func (refusal) Word() string  { return "refused" }

// A check whose error carries a word (githubapp's refusal) answers with
// that word; the detail stays in the log.
func TestReadyzSaysACheckWordedReason(t *testing.T) {
	logs := &bytes.Buffer{}
	h := Health(NewRegistry(), slog.New(slog.NewJSONHandler(logs, nil)), map[string]Check{
		"github_app": func(context.Context) error { return fmt.Errorf("wrapped: %w", refusal{}) },
		"redis":      func(context.Context) error { return errors.New("dial tcp 10.0.0.1:6379: refused") }})
	code, body := get(t, h, "/readyz")
	if want := `{"failed":{"github_app":"refused","redis":"unavailable"},"status":"not ready"}` + "\n"; code != 503 || body != want {
		t.Fatalf("readyz: %d %s, want 503 %s", code, body, want)
	}
	if strings.Contains(body, "12345") || !strings.Contains(logs.String(), "GitHub says 401 to app 12345") {
		t.Fatalf("the detail belongs in the log only: answer %q, log %q", body, logs)
	}
}

func TestMetricsShowQueueSizesAndWorkerCounters(t *testing.T) {
	srv := redistest.Start(t)
	opt := asynq.RedisClientOpt{Addr: srv.Addr}
	c := asynq.NewClient(opt)
	defer c.Close()
	for range 3 {
		if _, err := c.Enqueue(asynq.NewTask("claim:reevaluate", nil)); err != nil {
			t.Fatal(err)
		}
	}
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	reg := NewRegistry()
	reg.MustRegister(NewQueueCollector(insp, "default"))
	w := NewWorker(reg)
	w.Claims.WithLabelValues("accept_claim", "would_free").Inc()
	_, body := get(t, Health(reg, nil, nil), "/metrics")
	for _, want := range []string{
		`queen_asynq_tasks{queue="default",state="pending"} 3`,
		`queen_claims_decisions_total{outcome="would_free",rule="accept_claim"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestMetricsSayWhichBuild(t *testing.T) {
	b := version.Get()
	_, body := get(t, Health(NewRegistry(), nil, nil), "/metrics")
	want := fmt.Sprintf("queen_build_info{commit=%q,goversion=%q,version=%q} 1\n", b.Commit, b.GoVersion, b.Version)
	if !strings.Contains(body, want) {
		t.Fatalf("/metrics lacks %q", want)
	}
}

type unreachable struct{}

func (unreachable) Error() string  { return "dial tcp 140.82.112.6:443: i/o timeout" }
func (unreachable) Word() string   { return "unreachable" }
func (unreachable) Degraded() bool { return true }

// A degraded check (GitHub unreachable) leaves /readyz at 200, saying so;
// beside a failing one it is named too.
func TestReadyzDegradedIsReadyAndNamed(t *testing.T) {
	degraded := func(context.Context) error { return fmt.Errorf("wrapped: %w", unreachable{}) }
	h := Health(NewRegistry(), nil, map[string]Check{"github_app": degraded, "redis": func(context.Context) error { return nil }})
	code, body := get(t, h, "/readyz")
	if want := `{"degraded":{"github_app":"unreachable"},"status":"degraded"}` + "\n"; code != 200 || body != want {
		t.Fatalf("readyz: %d %s, want 200 %s", code, body, want)
	}
	h = Health(NewRegistry(), nil, map[string]Check{"github_app": degraded, "redis": func(context.Context) error { return errors.New("down") }})
	code, body = get(t, h, "/readyz")
	if want := `{"degraded":{"github_app":"unreachable"},"failed":{"redis":"unavailable"},"status":"not ready"}` + "\n"; code != 503 || body != want {
		t.Fatalf("readyz: %d %s, want 503 %s", code, body, want)
	}
}
