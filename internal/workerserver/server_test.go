package workerserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/gittest"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// The repository the sandbox's git serves, installed as instID.
const (
	repo        = "queen/t27"
	instID      = 31
	exportToken = "exp_exportTOKEN0123456789"
)

// Run wires everything: at start the scheduler enqueues the sweeps, the
// claim sweep frees a closed-unmerged claim, the export sweep's push runs
// (dry run) through the export and git, and the health server answers.
func TestRunServesTheWholeWorker(t *testing.T) {
	rs := redistest.Start(t)
	gh := githubtest.New(t)
	gh.AddInstallation(instID, "queen", repo)
	remote := gittest.NewRemote(t, "")
	work := remote.Clone(t)
	exp := gittest.NewExport(t, exportToken, work)
	work.Branch(t, "queen-8", "origin/master")
	head := work.Commit(t, "queen-8", map[string]string{"src/eight.rs": "fn eight() {}\n"}, "bee work on #8")
	gh.SetIssue(repo, 8, true, "Issue 8")

	led := ledger.New(rs.Client(), ledger.Options{})
	ctx := context.Background()
	for issue, extra := range map[int64]string{5: "", 8: `,"judged_head":"` + head + `"`} {
		body := `{"started":true,"dispatched_at":"2026-10-11T10:02:00Z","finished_at":"2026-10-11T12:20:00Z","review_state":"accept"` + extra + `}`
		var patch map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &patch); err != nil {
			t.Fatal(err)
		}
		if _, err := led.Upsert(ctx, repo, issue, patch, audit.API("test")); err != nil {
			t.Fatal(err)
		}
	}
	gh.AddPR(repo, githubtest.PR{HeadRef: "queen-5", HeadRepo: repo, State: "closed"})

	env := map[string]string{
		"QUEEN_REDIS_URL":             rs.URL(),
		"GITHUB_APP_ID":               strconv.FormatInt(gh.AppID(), 10),
		"GITHUB_APP_PRIVATE_KEY":      string(gh.Key()),
		"GITHUB_API_URL":              gh.URL(),
		"GITHUB_GRAPHQL_URL":          gh.GraphQLURL(),
		"GITHUB_GIT_URL":              remote.URL,
		"QUEEN_FREE_CLOSED_PR":        "on",
		"QUEEN_EXPORT_URL":            exp.URL,
		"QUEEN_EXPORT_TOKEN":          exportToken,
		"QUEEN_EXPORT_REPO":           repo,
		"QUEEN_EXPORT_DRY_RUN":        "on",
		"QUEEN_SWEEP_INTERVAL":        "1h",
		"QUEEN_EXPORT_SWEEP_INTERVAL": "1h",
		"QUEEN_REDELIVER_INTERVAL":    "1h",
		"QUEEN_WORKER_CACHE_DIR":      t.TempDir(),
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(config.Worker, getenv)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := OptionsFromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Listener = ln
	logs := &testkit.Buffer{}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, cfg, slog.New(slog.NewJSONHandler(logs, nil)), opts) }()
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})

	deadline := time.Now().Add(time.Minute)
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	get := func(issue int64) *ledger.Record {
		rec, err := led.Get(ctx, repo, issue)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	wait("the sweep to free #5", func() bool { return get(5).Freed != nil })
	wait("the export push of #8 to run", func() bool { return get(8).Export != nil })
	if st := get(8).Export; st.State != string(export.StateDryRun) || st.LastError != "" {
		t.Fatalf("#8 export %+v, want a clean dry run", st)
	}
	if remote.Ref(t, "queen-8") != "" || len(gh.PRs(repo)) != 1 {
		t.Fatal("the dry run published something")
	}
	if _, _, ok, _ := installs.New(rs.Client()).Lookup(ctx, repo); !ok {
		t.Fatal("installations not synced")
	}

	base := "http://" + ln.Addr().String()
	if code, _ := fetch(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d", code)
	}
	// An unclean path is refused, never redirected (ServeMux's habit).
	if code, _ := fetch(t, base+"/x/../metrics"); code != http.StatusBadRequest {
		t.Fatalf("/x/../metrics = %d, want 400", code)
	}
	wait("the metrics", func() bool {
		_, body := fetch(t, base+"/metrics")
		return strings.Contains(body, `queen_sweep_runs_total{result="ok",sweep="claim"} 1`) &&
			strings.Contains(body, `queen_claims_decisions_total{outcome="freed",rule="accept_claim"} 1`) &&
			strings.Contains(body, "queen_github_requests_total") &&
			strings.Contains(body, `queen_asynq_tasks{queue="default"`) &&
			strings.Contains(body, "queen_scheduler_leader 1")
	})

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("the health server still answers after Run returned")
	}
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestOptionsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o, err := OptionsFromEnv(env(map[string]string{"QUEEN_WORKER_CONCURRENCY": "4", "QUEEN_WORKER_CACHE_DIR": "/var/cache/queen"}))
	if err != nil || o.Concurrency != 4 || o.CacheDir != "/var/cache/queen" {
		t.Fatalf("got %+v, %v", o, err)
	}
	for k, v := range map[string]string{"QUEEN_WORKER_CONCURRENCY": "zero", "QUEEN_WORKER_CACHE_DIR": "relative/dir"} {
		_, err := OptionsFromEnv(env(map[string]string{k: v}))
		if err == nil || err.Error()[:len(k)] != k {
			t.Errorf("%s=%q: error %v, want one naming the variable", k, v, err)
		}
	}
}
