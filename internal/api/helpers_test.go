package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/api/openapicheck"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

const token = "tok-3f9a1c0e77d2"

var t0 = time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)

type env struct {
	url    string
	redis  *redistest.Server
	insp   *asynq.Inspector // set with envOpts.enqueue
	ledger *ledger.Ledger
	clock  *testkit.Clock
	reg    *prometheus.Registry
	logs   *testkit.Buffer
	// fetches counts what the API's ledger reads from Redis per round trip.
	fetches *redistest.Fetches
}

type envOpts struct {
	reviewFirst bool
	ledger      ledger.Options
	enqueue     bool // give the API a task enqueuer over the same Redis
	// noExportWorker: with enqueue, no worker has announced the export
	// (by default one has).
	noExportWorker bool
	// exportRepo is QUEEN_EXPORT_REPO with enqueue: "" is hive/t27, "-"
	// leaves it unset.
	exportRepo string
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	srv := redistest.Start(t)
	c := testkit.NewClock(t0)
	o.ledger.Now = c.Now
	rdb := srv.Client()
	e := &env{redis: srv, ledger: ledger.New(rdb, o.ledger), clock: c, reg: prometheus.NewRegistry(), logs: &testkit.Buffer{},
		fetches: redistest.CountFetches(rdb)}
	cfg := api.Config{
		Ledger: e.ledger, Token: token, ReviewFirst: o.reviewFirst, Now: c.Now,
		Logger:     slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer: e.reg,
	}
	if o.enqueue {
		client := asynq.NewClientFromRedisClient(srv.Client())
		e.insp = asynq.NewInspectorFromRedisClient(srv.Client())
		cfg.Enqueuer = tasks.NewEnqueuer(client, e.insp)
		cfg.ExportWorkers = export.Workers{RDB: srv.Client()}
		switch cfg.ExportRepo = o.exportRepo; o.exportRepo {
		case "":
			cfg.ExportRepo = "hive/t27"
		case "-":
			cfg.ExportRepo = ""
		}
		if !o.noExportWorker {
			if err := (export.Workers{RDB: srv.Client()}).Announce(context.Background(), "test-worker"); err != nil {
				t.Fatal(err)
			}
		}
	}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(checked(t, h))
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

// checked holds every exchange with h to docs/openapi.yaml (openapicheck).
// A test server's Close waits for its handlers, so no report comes after
// the test.
func checked(t *testing.T, h http.Handler) http.Handler {
	return openapicheck.Handler(h, func(err error) { t.Errorf("openapi: %v", err) })
}

type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r reply) object(t *testing.T) map[string]any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json (body %s)", ct, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer: %v: %s", err, r.body)
	}
}

// req sends one request with the token and, for a body, the JSON content
// type; hdr pairs override headers ("Authorization", "" drops it).
func (e *env) req(t *testing.T, method, path, body string, hdr ...string) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(newRequest(t, context.Background(), e.url, method, path, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{code: resp.StatusCode, header: resp.Header, body: b}
}

// newRequest is a request to base+path with the token and, with a body,
// its JSON content type; hdr pairs override headers ("" drops one).
func newRequest(t *testing.T, ctx context.Context, base, method, path, body string, hdr ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			r.Header.Del(hdr[i])
		} else {
			r.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return r
}

// mustCode fails unless the answer has code; for errors it also checks the
// JSON error shape and the field named.
func (r reply) mustCode(t *testing.T, code int, field string) map[string]any {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	m := r.object(t)
	if code >= 400 {
		msg, _ := m["error"].(string)
		if msg == "" {
			t.Fatalf("error answer without an error text: %s", r.body)
		}
		if got, _ := m["field"].(string); got != field {
			t.Fatalf("field %q, want %q: %s", got, field, r.body)
		}
		if field != "" && !strings.Contains(msg, field) {
			t.Fatalf("error text %q does not name %q", msg, field)
		}
	}
	return m
}

func (e *env) put(t *testing.T, repo string, issue int, body string) map[string]any {
	t.Helper()
	return e.req(t, "PUT", path(repo, issue, "dispatches"), body).mustCode(t, 200, "")
}

func path(repo string, issue int, what string) string {
	return "/v1/repos/" + repo + "/" + what + "/" + strconv.Itoa(issue)
}

func (e *env) get(t *testing.T, repo string, issue int64) *ledger.Record {
	t.Helper()
	rec, err := e.ledger.Get(context.Background(), repo, issue)
	if err != nil {
		t.Fatalf("ledger get %s#%d: %v", repo, issue, err)
	}
	return rec
}

func (e *env) absent(t *testing.T, repo string, issue int64) {
	t.Helper()
	if _, err := e.ledger.Get(context.Background(), repo, issue); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("%s#%d: ledger get = %v, want ErrNotFound (nothing written)", repo, issue, err)
	}
}

func (e *env) history(t *testing.T, repo string, issue int64) []ledger.Entry {
	t.Helper()
	h, err := e.ledger.History(context.Background(), repo, issue, 100)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Rows at t0 = 2026-10-10T20:00Z.
const (
	working    = `{"started": true, "dispatched_at": "2026-10-10T19:00:00Z", "owned_paths": ["src/a.go", "src/b.go"]}`
	sentBack10 = `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:50:00Z", "review_state": "sendBack", "send_backs": 1, "ceiling_releases": 0, "criteria": ["builds", "tests"], "owned_paths": ["bootstrap/src/compiler.rs"], "judged_head": null}`
	atCeiling  = `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:30:00Z", "review_state": "sendBack", "send_backs": 2, "owned_paths": ["docs/x.md"]}`
	accepted   = `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "owned_paths": ["src/c.go"]}`
	waiting    = `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:45:00Z", "review_state": "wait", "owned_paths": ["src/w.go"]}`
	failedRow  = `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "failed"}`
)
