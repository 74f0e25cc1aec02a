package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/gittest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// exToken is the export's bearer token.
const exToken = "e2e-export-token-5d0e"

// exLimit bounds each wait of a broken run; no test asserts how fast
// anything is.
const exLimit = 2 * time.Minute

// exStack is a stack whose worker also runs the export push, against the
// sandbox's git (GitHub's git for hive/t27, taking only the App's live
// installation tokens; GitHub's REST view of its branches is its refs) and
// export (over a clone of it). The export is optionally behind a gateway
// that answers 504 when the export does not answer within its timeout, as
// the proxy in front of the real export does.
type exStack struct {
	*stack
	t      *testing.T
	remote *gittest.Remote
	work   *gittest.Work // the export's repository
	exp    *gittest.Export
	rdb    *redis.Client
	insp   *asynq.Inspector

	workerEnv  map[string]string
	workerAddr string

	// pullsDown makes GitHub's PR list answer 502 (pullsFailed counts them).
	pullsDown   atomic.Bool
	pullsFailed atomic.Int64
	// exportEcho >= 0 makes the export answer 502 with a body echoing the
	// request's Authorization header after exportEcho filler bytes.
	exportEcho atomic.Int64
}

type exOpts struct {
	sweep   string        // QUEEN_EXPORT_SWEEP_INTERVAL; "0s" turns the sweep off
	gateway time.Duration // > 0: the export behind a gateway timing out after this
}

func newExStack(t *testing.T, o exOpts) *exStack {
	t.Helper()
	// The webhook's claims API, too, knows the export's repository: it
	// refuses a push request for any other.
	x := &exStack{stack: newStack(t, map[string]string{"QUEEN_SWEEP_INTERVAL": "0s", "QUEEN_REDELIVER_INTERVAL": "0s",
		"QUEEN_EXPORT_REPO": repo}), t: t}
	x.rdb = x.redis.Client()
	x.insp = asynq.NewInspectorFromRedisClient(x.rdb)
	x.remote = gittest.RemoteOf(x.sb.Git)
	x.work = gittest.WorkOf(x.sb.ExportWork)
	x.exp = gittest.ExportOf(x.sb.Export)
	x.exportEcho.Store(-1)
	if o.sweep == "" {
		o.sweep = "1s"
	}
	x.workerAddr = freeAddr(t)
	x.workerEnv = map[string]string{}
	for _, env := range []map[string]string{x.env, x.sb.ExportEnv()} {
		for k, v := range env {
			x.workerEnv[k] = v
		}
	}
	exportURL := x.exp.URL
	if o.gateway > 0 {
		exportURL = exGateway(t, exportURL, o.gateway)
	}
	x.workerEnv["QUEEN_EXPORT_URL"] = x.exportFront(exportURL)
	x.workerEnv["GITHUB_API_URL"] = x.githubFront()
	for k, v := range map[string]string{
		"QUEEN_API_LISTEN":            x.workerAddr,
		"QUEEN_BASE_BRANCH":           "master",
		"QUEEN_EXPORT_SWEEP_INTERVAL": o.sweep,
		"QUEEN_WORKER_CACHE_DIR":      t.TempDir(), // kept across worker restarts
	} {
		x.workerEnv[k] = v
	}
	return x
}

// startWorker runs the worker binary and waits for its health server.
func (x *exStack) startWorker() *proc {
	x.t.Helper()
	p := start(x.t, "worker", x.workerEnv)
	waitHTTP(x.t, p, "http://"+x.workerAddr+"/healthz")
	return p
}

func exServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Config.ReadTimeout = time.Minute
	srv.Config.WriteTimeout = 2 * time.Minute
	srv.Config.IdleTimeout = time.Minute
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// githubFront passes the worker's REST calls to the sandbox's GitHub;
// with pullsDown its PR list answers 502.
func (x *exStack) githubFront() string {
	target, _ := url.Parse(x.gh.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := exServer(x.t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if x.pullsDown.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pulls") {
			x.pullsFailed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, `{"message":"Server Error"}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	return srv.URL + "/"
}

// exportFront passes requests to the export at upstream, or, with
// exportEcho set, answers 502 echoing their Authorization header as a
// misconfigured gateway would.
func (x *exStack) exportFront(upstream string) string {
	target, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	srv := exServer(x.t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pad := x.exportEcho.Load(); pad >= 0 {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "%s upstream refused Authorization: %s\n", strings.Repeat("x", int(pad)), r.Header.Get("Authorization"))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	return srv.URL + target.Path
}

// secrets are the credentials the worker was given or minted so far.
func (x *exStack) secrets() []string {
	out := []string{exToken}
	for _, tok := range x.gh.Tokens() {
		out = append(out, tok, base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok)))
	}
	return out
}

// exGateway fronts the export at upstream with a proxy that answers 504
// when the export has not answered within timeout: what a client sees
// when the export's own work outlasts the gateway in front of it.
func exGateway(t *testing.T, upstream string, timeout time.Duration) string {
	target, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		code := http.StatusBadGateway
		if errors.Is(r.Context().Err(), context.DeadlineExceeded) {
			code = http.StatusGatewayTimeout
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":%q}`, http.StatusText(code))
	}
	srv := exServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		proxy.ServeHTTP(w, r.WithContext(ctx))
	}))
	return srv.URL + target.Path
}

// branch makes the export's queen-<issue> from master with one commit of
// files and returns its head.
func (x *exStack) branch(issue int64, files map[string]string) string {
	x.t.Helper()
	head, err := x.sb.ExportBranch(issue, files)
	if err != nil {
		x.t.Fatal(err)
	}
	return head
}

// accept opens the issue on GitHub and writes the row, accepted at head,
// through the claims API; extra adds or overrides fields.
func (x *exStack) accept(issue int64, head string, extra map[string]any) {
	x.t.Helper()
	x.gh.SetIssue(repo, int(issue), true, fmt.Sprintf("Issue %d: make the compiler faster", issue))
	body := map[string]any{"started": true, "dispatched_at": "2026-10-11T10:02:00Z",
		"finished_at": "2026-10-11T12:20:00Z", "review_state": "accept", "judged_head": head}
	for k, v := range extra {
		body[k] = v
	}
	x.put(issue, body)
}

func (x *exStack) put(issue int64, body map[string]any) {
	x.t.Helper()
	var out map[string]any
	if code := apiJSON(x.t, "PUT", x.apiURL+"/v1/repos/"+repo+"/dispatches/"+itoa(issue), apiToken, body, &out); code != 200 {
		x.t.Fatalf("PUT #%d: %d %v", issue, code, out)
	}
}

// exports reads every row's export state from the claims API.
func (x *exStack) exports() map[int64]*dispatch.ExportState {
	x.t.Helper()
	var list struct {
		Claims []dispatch.View `json:"claims"`
	}
	if code := apiJSON(x.t, "GET", x.apiURL+"/v1/claims?limit=1000&repo="+repo, apiToken, nil, &list); code != 200 {
		x.t.Fatalf("GET /v1/claims: %d", code)
	}
	out := map[int64]*dispatch.ExportState{}
	for _, v := range list.Claims {
		out[v.Issue] = v.Export
	}
	return out
}

// versions reads every row's version from the claims API.
func (x *exStack) versions() map[int64]int64 {
	x.t.Helper()
	var list struct {
		Claims []dispatch.View `json:"claims"`
	}
	if code := apiJSON(x.t, "GET", x.apiURL+"/v1/claims?limit=1000&repo="+repo, apiToken, nil, &list); code != 200 {
		x.t.Fatalf("GET /v1/claims: %d", code)
	}
	out := map[int64]int64{}
	for _, v := range list.Claims {
		out[v.Issue] = v.Version
	}
	return out
}

// state is the export state of one row ("" before any attempt).
func (x *exStack) state(issue int64) string {
	if st := x.exports()[issue]; st != nil {
		return st.State
	}
	return ""
}

// waitStates waits until every issue's export state is want.
func (x *exStack) waitStates(want string, issues ...int64) {
	x.t.Helper()
	eventually(x.t, exLimit, fmt.Sprintf("%v to reach %s", issues, want), func() bool {
		all := x.exports()
		for _, n := range issues {
			if st := all[n]; st == nil || st.State != want {
				return false
			}
		}
		return true
	})
}

// ctl runs the queenctl binary against the stack's claims API.
func (x *exStack) ctl(args ...string) (code int, stdout, stderr string) {
	x.t.Helper()
	cmd := exec.Command(filepath.Join(bin, "queenctl"), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + x.t.TempDir(),
		"QUEEN_API_URL=" + x.apiURL, "QUEEN_API_TOKEN=" + apiToken}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		x.t.Fatalf("queenctl %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// exStatusRow is one row of queenctl export status --json.
type exStatusRow struct {
	Repo   string                `json:"repo"`
	Issue  int64                 `json:"issue"`
	Claim  string                `json:"claim"`
	Export *dispatch.ExportState `json:"export"`
}

// status runs queenctl export status twice: the table's lines by row
// ("hive/t27#N" -> its line, fields joined by one space; "" -> the
// summary) and the --json rows by issue.
func (x *exStack) status() (lines map[string]string, rows map[int64]exStatusRow) {
	x.t.Helper()
	code, out, errOut := x.ctl("export", "status", "--repo", repo)
	if code != 0 || errOut != "" {
		x.t.Fatalf("queenctl export status: exit %d, stderr %q", code, errOut)
	}
	lines = map[string]string{}
	all := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, l := range all[1 : len(all)-1] {
		f := strings.Fields(l)
		lines[f[0]] = strings.Join(f, " ")
	}
	lines[""] = all[len(all)-1]
	code, out, _ = x.ctl("export", "status", "--repo", repo, "--json")
	var got struct {
		Exports []exStatusRow `json:"exports"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		x.t.Fatalf("queenctl export status --json: exit %d, %v\n%s", code, err, out)
	}
	rows = map[int64]exStatusRow{}
	for _, r := range got.Exports {
		rows[r.Issue] = r
	}
	return lines, rows
}

// prs counts the fake GitHub's pull requests by head branch.
func (x *exStack) prs() map[string]int {
	out := map[string]int{}
	for _, p := range x.gh.PRs(repo) {
		out[p.HeadRef]++
	}
	return out
}

// runRetries runs every export:push waiting for its retry now. It stands
// in for the passage of time: the worker waits out an outage with a
// backoff that grows to minutes, and that wait is not under test.
func (x *exStack) runRetries() {
	infos, err := x.insp.ListRetryTasks(tasks.Queue, asynq.PageSize(1000))
	if err != nil {
		return // no queue yet
	}
	for _, info := range infos {
		if info.Type == tasks.TypeExportPush {
			_ = x.insp.RunTask(tasks.Queue, info.ID) // it may have started meanwhile
		}
	}
}

// archived lists the archived tasks: none may be, ever.
func (x *exStack) archived() []*asynq.TaskInfo {
	x.t.Helper()
	infos, err := x.insp.ListArchivedTasks(tasks.Queue, asynq.PageSize(1000))
	if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		x.t.Fatal(err)
	}
	return infos
}

// checkPublished asserts each branch is at its judged head on the remote,
// with exactly one PR, recorded pr_opened with that PR; and that GitHub
// has no other PR for these branches.
func (x *exStack) checkPublished(heads map[int64]string) {
	x.t.Helper()
	prs := x.prs()
	numbers := map[string]int{}
	for _, p := range x.gh.PRs(repo) {
		numbers[p.HeadRef] = p.Number
	}
	all := x.exports()
	for issue, head := range heads {
		b := fmt.Sprintf("queen-%d", issue)
		if got := x.remote.Ref(x.t, b); got != head {
			x.t.Errorf("%s on the remote is %q, want the judged head %s", b, got, head)
		}
		if prs[b] != 1 {
			x.t.Errorf("%s has %d PRs, want exactly 1", b, prs[b])
		}
		st := all[issue]
		if st == nil || st.State != "pr_opened" || st.PushedHead != head || st.PRNumber != numbers[b] || st.LastError != "" {
			x.t.Errorf("#%d export state %+v, want pr_opened at %s with PR #%d", issue, st, head, numbers[b])
		}
	}
}

// onPushBlock makes the remote hold its next push until release is
// called; held is closed once that push has arrived.
func (x *exStack) onPushBlock() (held <-chan struct{}, release func()) {
	h, r := make(chan struct{}), make(chan struct{})
	var once, first atomic.Bool
	x.remote.OnPush(func(int) {
		if first.Swap(true) {
			return
		}
		close(h)
		select {
		case <-r:
		case <-time.After(exLimit):
		}
	})
	return h, func() {
		if !once.Swap(true) {
			close(r)
		}
	}
}

// expireLeases rewinds the asynq leases of every task that was running:
// asynq takes a crashed worker's task back only 30 s after its lease ran
// out (the lease lasts 30 s), at server start and then each minute. That
// wait is asynq's, not under test, and not configurable.
func (x *exStack) expireLeases() []string {
	x.t.Helper()
	key := "asynq:{" + tasks.Queue + "}:lease"
	ctx := context.Background()
	ids, err := x.rdb.ZRange(ctx, key, 0, -1).Result()
	if err != nil {
		x.t.Fatal(err)
	}
	past := float64(time.Now().Add(-2 * time.Minute).Unix())
	for _, id := range ids {
		if err := x.rdb.ZAdd(ctx, key, redis.Z{Score: past, Member: id}).Err(); err != nil {
			x.t.Fatal(err)
		}
	}
	return ids
}
