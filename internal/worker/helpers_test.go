package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/gittest"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/logging"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

// The repository gittest serves, installed as installation instID.
const (
	repo        = "queen/t27"
	instID      = 31
	exportToken = "exp_exportTOKEN0123456789"
)

type options struct {
	freeClosedPR, releaseDeadClaims bool
	export, dryRun                  bool
	clock                           *testkit.Clock // the worker's Now; nil: the wall clock
	prsPerHour                      int            // 0: the default
	realPacing                      bool           // PR creations 1 s apart, as deployed (tests: 1 ms)
	readWindow                      time.Duration  // Deps.ReadWindow
}

// env is a worker over a private Redis, the fake GitHub (behind a proxy
// that lets a test step in) and, with export on, a real git remote and
// export.
type env struct {
	t      testing.TB
	ctx    context.Context
	redis  *redistest.Server
	rdb    *redis.Client
	gh     *githubtest.Server
	ghURL  string
	app    *githubapp.App
	ledger *ledger.Ledger
	reg    *installs.Registry
	m      *metrics.Worker
	w      *Worker
	logs   *testkit.Buffer

	client *asynq.Client
	insp   *asynq.Inspector

	// export
	remote  *gittest.Remote
	pushes0 int // pushes the remote served before the test's
	work    *gittest.Work
	exp     *gittest.Export

	mu       sync.Mutex
	before   func(r *http.Request) // runs before the fake GitHub answers
	requests int                   // requests the fake GitHub was sent
	creates  []time.Time           // when each PR creation was sent
}

func newEnv(t testing.TB, o options) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), logs: &testkit.Buffer{}}
	e.redis = redistest.Start(t)
	e.rdb = e.redis.Client()
	e.gh = githubtest.New(t)
	e.gh.AddInstallation(instID, "queen", repo)

	proxy := httputil.NewSingleHostReverseProxy(mustURL(t, e.gh.URL()))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		hook := e.before
		e.requests++
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls") {
			e.creates = append(e.creates, time.Now())
		}
		e.mu.Unlock()
		if hook != nil {
			hook(r)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	e.ghURL = front.URL + "/"
	cfg := githubapp.Config{AppID: e.gh.AppID(), PrivateKey: e.gh.Key(),
		APIURL: e.ghURL, GraphQLURL: front.URL + "/graphql"}
	if o.clock != nil {
		cfg.Now = o.clock.Now
	}
	app, err := githubapp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.app = app
	e.ledger = ledger.New(e.rdb, ledger.Options{FreeClosedPR: o.freeClosedPR, ReleaseDeadClaims: o.releaseDeadClaims})
	e.reg = installs.New(e.rdb)
	if err := e.reg.Replace(e.ctx, []installs.Installation{{ID: instID, Repos: []string{repo}}}, true); err != nil {
		t.Fatal(err)
	}
	e.client = asynq.NewClientFromRedisClient(e.rdb)
	e.insp = asynq.NewInspectorFromRedisClient(e.rdb)
	t.Cleanup(func() { e.client.Close() })
	e.m = metrics.NewWorker(prometheus.NewRegistry())

	d := Deps{
		Ledger: e.ledger, Installs: e.reg, GitHub: app, Metrics: e.m,
		Redeliverer:  &githubapp.Redeliverer{App: app, Store: NewRedisStore(e.rdb)},
		Logger:       slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		WriteSpacing: time.Millisecond,
		PRsPerHour:   o.prsPerHour,
		RDB:          e.rdb,
	}
	if o.clock != nil {
		d.Now = o.clock.Now
	}
	if o.realPacing {
		d.WriteSpacing = 0 // the default
	}
	d.ReadWindow = o.readWindow
	if o.export {
		d.Export = e.setupExport(o.dryRun)
	}
	e.w = New(d)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker logs:\n%s", e.logs.String())
		}
	})
	return e
}

// setupExport serves a real git remote (through a front that accepts only
// live installation tokens of the fake GitHub) and an export over a clone.
func (e *env) setupExport(dryRun bool) *Export {
	t := e.t
	e.remote = gittest.NewRemote(t, "")
	e.pushes0 = e.remote.Pushes()
	e.work = e.remote.Clone(t)
	e.exp = gittest.NewExport(t, exportToken, e.work)

	gitProxy := httputil.NewSingleHostReverseProxy(mustURL(t, e.remote.URL))
	gitFront := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, tok, ok := r.BasicAuth()
		if !ok || !e.gh.LiveToken(tok) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "installation token required", http.StatusUnauthorized)
			return
		}
		gitProxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gitFront.Close)

	// GitHub's branch API answers from the git remote, as on GitHub.
	e.setBefore(func(r *http.Request) {
		if strings.Contains(r.URL.Path, "/git/ref/heads/") || (r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls")) {
			for name, sha := range remoteHeads(e.remote.Dir) {
				e.gh.SetBranch(repo, name, sha)
			}
		}
	})

	client, err := export.NewClient(e.exp.URL, exportToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	client.Retries = 0
	client.BundleTimeout, client.ListTimeout = 10*time.Second, 10*time.Second
	return &Export{
		Repo: repo, Client: client, Git: export.NewGit(t.TempDir(), gitFront.URL+"/"),
		Base: "master", DryRun: dryRun, Enqueue: tasks.NewEnqueuer(e.client, e.insp),
	}
}

// pushes counts the pushes the worker made to the remote.
func (e *env) pushes() int { return e.remote.Pushes() - e.pushes0 }

func (e *env) setBefore(fn func(r *http.Request)) {
	e.mu.Lock()
	e.before = fn
	e.mu.Unlock()
}

// pushUpsertingAtPRCreation runs the export push of issue at head while the
// Queen upserts patch on its row, at the moment the worker asks GitHub to
// create the PR: the push must succeed and open its PR, the upsert land.
func (e *env) pushUpsertingAtPRCreation(t *testing.T, issue int64, head string, patch map[string]json.RawMessage) {
	t.Helper()
	e.mu.Lock()
	branches := e.before
	e.mu.Unlock()
	var once sync.Once
	var upsertErr error
	e.setBefore(func(r *http.Request) {
		branches(r)
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls") {
			once.Do(func() { _, upsertErr = e.ledger.Upsert(e.ctx, repo, issue, patch, audit.API("queen")) })
		}
	})
	if err := e.w.ExportPush(e.ctx, pushTask(t, issue, head)); err != nil {
		t.Fatal(err)
	}
	if upsertErr != nil {
		t.Fatal(upsertErr)
	}
	if len(e.gh.PRs(repo)) != 1 {
		t.Fatal("the push did not get as far as opening its PR")
	}
}

// remoteHeads lists refs/heads/* of a bare repository.
func remoteHeads(dir string) map[string]string {
	cmd := exec.Command("git", "--git-dir="+dir, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads/")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	heads := map[string]string{}
	if err != nil {
		return heads
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, sha, ok := strings.Cut(line, " "); ok {
			heads[name] = sha
		}
	}
	return heads
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var finished = time.Date(2026, 10, 11, 12, 20, 0, 0, time.UTC)

// row writes a finished row with review state verdict.
func (e *env) row(issue int64, verdict string, extra map[string]any) *ledger.Record {
	e.t.Helper()
	body := map[string]any{
		"started": true, "dispatched_at": "2026-10-11T10:02:00Z", "finished_at": finished.Format(time.RFC3339),
		"review_state": verdict,
	}
	for k, v := range extra {
		body[k] = v
	}
	return e.upsert(issue, body)
}

func (e *env) upsert(issue int64, body map[string]any) *ledger.Record {
	e.t.Helper()
	patch := map[string]json.RawMessage{}
	for k, v := range body {
		b, err := json.Marshal(v)
		if err != nil {
			e.t.Fatal(err)
		}
		patch[k] = b
	}
	if _, err := e.ledger.Upsert(e.ctx, repo, issue, patch, audit.API("test")); err != nil {
		e.t.Fatalf("upsert #%d: %v", issue, err)
	}
	return e.get(issue)
}

func (e *env) get(issue int64) *ledger.Record {
	e.t.Helper()
	rec, err := e.ledger.Get(e.ctx, repo, issue)
	if err != nil {
		e.t.Fatalf("get #%d: %v", issue, err)
	}
	return rec
}

// closedPR adds a closed PR of branch queen-<issue>; merged says how.
func (e *env) pr(issue int64, state string, merged bool) int {
	p := githubtest.PR{HeadRef: fmt.Sprintf("queen-%d", issue), HeadRepo: repo, State: state}
	if merged {
		at := finished.Add(time.Hour)
		p.MergedAt = &at
		p.State = "closed"
	}
	return e.gh.AddPR(repo, p)
}

func reevaluateTask(t *testing.T, issue int64, delivery, action string, pr int) *asynq.Task {
	t.Helper()
	task, err := tasks.NewReevaluate(tasks.ReevaluatePayload{Repo: repo, Issue: issue, Delivery: delivery,
		Event: "pull_request", Action: action, InstallationID: instID, PRNumber: pr}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func pushTask(t testing.TB, issue int64, head string) *asynq.Task {
	t.Helper()
	task, err := tasks.NewExportPush(tasks.ExportPushPayload{Repo: repo, Issue: issue, Head: head})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// pushManually runs the export push of issue at head as a person's
// (queenctl export push, POST .../export): no backoff waits for it.
func (e *env) pushManually(issue int64, head string) {
	e.t.Helper()
	task, err := tasks.NewExportPush(tasks.ExportPushPayload{Repo: repo, Issue: issue, Head: head, Manual: true})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.w.ExportPush(e.ctx, task); err != nil {
		e.t.Fatal(err)
	}
}

// serve runs the worker in an asynq server whose retries come after delay
// (the real policy's waits would take minutes); IsFailure is the real one.
func (e *env) serve(delay time.Duration) { e.t.Helper(); e.serveN(6, delay) }

// serveN is serve with n tasks at once.
func (e *env) serveN(n int, delay time.Duration) {
	e.t.Helper()
	e.serveWith(n, func(int, error, *asynq.Task) time.Duration { return delay })
}

// serveWith is serveN with the retry policy delay (retry.Delay: the
// worker's own).
func (e *env) serveWith(n int, delay asynq.RetryDelayFunc) {
	e.t.Helper()
	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{
		Concurrency:              n,
		Queues:                   map[string]int{tasks.Queue: 1},
		IsFailure:                retry.IsFailure,
		RetryDelayFunc:           delay,
		TaskCheckInterval:        20 * time.Millisecond,
		DelayedTaskCheckInterval: 50 * time.Millisecond,
		ShutdownTimeout:          5 * time.Second,
		Logger:                   logging.Asynq(e.w.log),
		LogLevel:                 asynq.ErrorLevel,
	})
	mux := asynq.NewServeMux()
	e.w.Register(mux)
	if err := srv.Start(mux); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(srv.Shutdown)
}

// eventually polls cond until it holds, failing the test after a minute.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	e.within(time.Minute, 20*time.Millisecond, what, cond)
}

// within polls cond every poll until it holds, failing after limit.
func (e *env) within(limit, poll time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(poll)
	}
}

func (e *env) archived() []*asynq.TaskInfo {
	e.t.Helper()
	list, err := e.insp.ListArchivedTasks(tasks.Queue)
	if err != nil && !strings.Contains(err.Error(), "not found") {
		e.t.Fatal(err)
	}
	return list
}

func isWait(err error) bool {
	return err != nil && !retry.IsFailure(err)
}

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if c := d.GetCounter(); c != nil {
		return c.GetValue()
	}
	return d.GetGauge().GetValue()
}
