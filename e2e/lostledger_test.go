package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redistest"
)

// ledgerLimit bounds the wait for a lost ledger to show: the 15 s
// (a check every 5 s plus a request's budget), with room for a loaded
// machine. Only a broken run reaches it.
const ledgerLimit = 30 * time.Second

// apiAnswer is one claims API exchange: the status, Retry-After and the
// error text.
func apiAnswer(t *testing.T, method, url, body string) (int, string, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, resp.Header.Get("Retry-After"), e.Error
}

// countLog counts p's log lines of level with msg.
func countLog(p *proc, level, msg string) int {
	n := 0
	for _, line := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(line, `"level":"`+level+`"`) && strings.Contains(line, `"msg":"`+msg+`"`) {
			n++
		}
	}
	return n
}

// A FLUSHALL under both running binaries: within the check period every
// claims read and write answers 503 naming what happened and the command
// that recovers, both /readyz answer 503 "ledger: missing", the metric and
// one ERROR line say it, and the worker decides nothing while a webhook is
// still queued. Restoring the backup brings everything back, and the
// queued delivery then frees its claim.
func TestALostLedgerIsAnOutageUntilRestored(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on"})
	hook := f.webhook()
	work := f.startWorker(nil)
	f.acceptRow(101)
	f.closedPR(101, 501, false)

	backup := filepath.Join(t.TempDir(), "queen.jsonl")
	if code, out, errOut := runArgs(t, "queenctl", f.env, "ledger", "backup", backup); code != 0 || !strings.Contains(out, "1 rows") {
		t.Fatalf("ledger backup: exit %d: %s%s", code, out, errOut)
	}

	if err := f.rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	bases := map[*proc]string{hook: f.apiURL, work: f.workerURL}
	for p, base := range bases {
		eventually(t, ledgerLimit, p.name+" /readyz 503 naming the missing ledger", func() bool {
			code, failed := readyz(t, base)
			return code == http.StatusServiceUnavailable && failed["ledger"] == "missing"
		})
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/claims", ""},
		{"GET", "/v1/repos/" + repo + "/claims/101", ""},
		{"GET", "/v1/repos/" + repo + "/held-paths", ""},
		{"POST", "/v1/repos/" + repo + "/admission", `{"candidates": [{"issue": 102}]}`},
		{"PUT", "/v1/repos/" + repo + "/dispatches/102", `{"started": true, "dispatched_at": "2026-12-01T08:00:00Z"}`},
	} {
		code, retry, msg := apiAnswer(t, c.method, f.apiURL+c.path, c.body)
		if code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(msg, "missing") ||
			!strings.Contains(msg, "queenctl ledger restore") {
			t.Errorf("%s %s with the ledger lost: %d Retry-After %q %q; want 503 naming the loss and the restore",
				c.method, c.path, code, retry, msg)
		}
	}
	if got := f.metric("queen_ledger_state", `state="missing"`); got != 1 {
		t.Errorf("worker queen_ledger_state{state=missing} %v, want 1", got)
	}
	if got := scrape(t, f.apiURL+"/metrics", "queen_ledger_state", `state="missing"`); got != 1 {
		t.Errorf("webhook queen_ledger_state{state=missing} %v, want 1", got)
	}

	// A delivery is still taken and queued; the worker decides nothing.
	id := f.deliverPR(101, 501, "closed", false, "lost-ledger-1")
	time.Sleep(2 * time.Second) // the worker's turn at the task
	if keys, _ := f.rdb.Keys(t.Context(), "queen:{*").Result(); len(keys) != 0 {
		t.Errorf("the worker wrote %v while the ledger was lost", keys)
	}
	if info := f.task(id); info == nil || info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived {
		t.Errorf("the delivery's task %v while the ledger was lost; want it waiting", info)
	}
	for _, p := range []*proc{hook, work} {
		if n := countLog(p, "ERROR", "ledger unavailable"); n != 1 {
			t.Errorf("%s logged %d ERROR lines for the lost ledger, want 1", p.name, n)
		}
	}

	if code, out, errOut := runArgs(t, "queenctl", f.env, "ledger", "restore", backup); code != 0 {
		t.Fatalf("ledger restore: exit %d: %s%s", code, out, errOut)
	}
	for p, base := range bases {
		eventually(t, ledgerLimit, p.name+" /readyz 200 after the restore", func() bool {
			code, _ := readyz(t, base)
			return code == http.StatusOK
		})
	}
	f.hurry(id)
	if v := f.waitFreed(101); v.Freed == nil {
		t.Fatal("the queued delivery did not free its claim after the restore")
	}
}

// A Redis restarted without persistence comes back empty: the binaries
// that served its ledger say it is missing; they never serve the empty
// Redis as a ledger with no claims.
func TestARedisRestartedEmptyIsNotAnEmptyLedger(t *testing.T) {
	t.Parallel()
	bare := redistest.Start(t) // --save "" --appendonly no
	form := &redisForm{env: map[string]string{"QUEEN_REDIS_URL": bare.URL()},
		open: func() redis.UniversalClient { return bare.Client() }}
	f := newFreeStackOn(t, form, map[string]string{frFlag: "on"})
	f.webhook()
	f.acceptRow(201)
	bare.Restart()
	eventually(t, ledgerLimit, "/readyz 503 naming the missing ledger after the restart", func() bool {
		code, failed := readyz(t, f.apiURL)
		return code == http.StatusServiceUnavailable && failed["ledger"] == "missing"
	})
	if code, _, msg := apiAnswer(t, "GET", f.apiURL+"/v1/claims", ""); code != http.StatusServiceUnavailable {
		t.Errorf("GET /v1/claims on the emptied Redis: %d %q, want 503, never an empty list", code, msg)
	}
	// A binary started on the empty Redis is not ready either.
	env := mergedEnv(f.env, map[string]string{"QUEEN_API_LISTEN": freeAddr(t)})
	w := startBare(t, "worker", env)
	base := "http://" + env["QUEEN_API_LISTEN"]
	waitHTTP(t, w, base+"/healthz")
	eventually(t, ledgerLimit, "a worker started on an empty Redis says the ledger is missing", func() bool {
		code, failed := readyz(t, base)
		return code == http.StatusServiceUnavailable && failed["ledger"] == "missing"
	})
}

// A ledger written by a newer release (a rollback): both binaries exit at
// start with one line naming both schema versions, and write nothing.
func TestANewerLedgerStopsBothBinariesAtStart(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	initLedger(t, s.env)
	rdb := s.redis.Client()
	if err := rdb.Set(t.Context(), "queen:schema", 99, 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"webhook", "worker"} {
		env := mergedEnv(s.env, map[string]string{"QUEEN_API_LISTEN": freeAddr(t)})
		p := startBare(t, name, env)
		eventually(t, ledgerLimit, name+" exits", func() bool { done, _ := p.exited(); return done })
		if _, code := p.exited(); code == 0 {
			t.Errorf("%s exited 0 on a newer ledger", name)
		}
		var lines []string
		for _, l := range strings.Split(p.out.String(), "\n") {
			if strings.Contains(l, "schema is 99") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "(3)") {
			t.Errorf("%s: lines naming the schema %q; want one naming 99 and this release's 3:\n%s", name, lines, p.out.String())
		}
	}
	if keys, _ := rdb.Keys(t.Context(), "queen:{*").Result(); len(keys) != 0 {
		t.Errorf("the refused binaries wrote %v", keys)
	}
}
