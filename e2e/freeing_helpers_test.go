package e2e

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// frLimit bounds every wait of the freeing tests; only a broken run reaches it.
const frLimit = 60 * time.Second

// fstack is a stack that also runs cmd/worker.
type fstack struct {
	*stack
	workerURL string                // the worker's /healthz and /metrics, "http://host:port"
	rdb       redis.UniversalClient // built as the binaries build theirs
	insp      *asynq.Inspector
}

// newFreeStack is newStack with the periodic tasks off, so that only the
// deliveries of a test decide anything; extra wins.
func newFreeStack(t *testing.T, extra map[string]string) *fstack {
	t.Helper()
	return newFreeStackOn(t, nil, extra)
}

// newClosedPRStack is a free stack with the freeing flags on and both
// binaries running, issue's row accepted and its PR number on queen-<issue>
// closed unmerged: the claim a closing delivery frees.
func newClosedPRStack(t *testing.T, issue int64, number int) *fstack {
	t.Helper()
	f := newFreeStack(t, map[string]string{frFlag: "on"})
	f.both()
	f.acceptRow(issue)
	f.closedPR(issue, number, false)
	return f
}

// newFreeStackOn is newFreeStack on the Redis of form (nil: one node).
func newFreeStackOn(t *testing.T, form *redisForm, extra map[string]string) *fstack {
	t.Helper()
	env := map[string]string{"QUEEN_SWEEP_INTERVAL": "0s", "QUEEN_REDELIVER_INTERVAL": "0s"}
	for k, v := range extra {
		env[k] = v
	}
	f := &fstack{stack: newStackOn(t, form, env)}
	f.rdb = f.form.open()
	f.insp = asynq.NewInspectorFromRedisClient(f.rdb)
	return f
}

// startWorker runs cmd/worker with the stack's env plus extra, on its own
// health address, and waits for /healthz (served once the installation
// sync is done, so the shared registry knows hive/t27).
func (f *fstack) startWorker(extra map[string]string) *proc {
	f.t.Helper()
	addr := freeAddr(f.t)
	env := mergedEnv(f.env, map[string]string{"QUEEN_API_LISTEN": addr, "QUEEN_WORKER_CONCURRENCY": "4"}, extra)
	p := start(f.t, "worker", env)
	f.workerURL = "http://" + addr
	waitHTTP(f.t, p, f.workerURL+"/healthz")
	return p
}

// both starts the webhook and the worker.
func (f *fstack) both() {
	f.t.Helper()
	f.webhook()
	f.startWorker(nil)
}

// acceptRow writes, through the claims API, the dispatch row of an issue
// whose work was finished and accepted: its claim lives on its PR.
func (f *fstack) acceptRow(issue int64) {
	f.t.Helper()
	now := time.Now().UTC()
	body := map[string]any{
		"started":       true,
		"dispatched_at": now.Add(-2 * time.Hour).Format(time.RFC3339),
		"finished_at":   now.Add(-time.Hour).Format(time.RFC3339),
		"review_state":  "accept",
	}
	var v frClaim
	url := f.apiURL + "/v1/repos/" + repo + "/dispatches/" + itoa(issue)
	if code := apiJSON(f.t, "PUT", url, apiToken, body, &v); code != http.StatusOK {
		f.t.Fatalf("PUT dispatch %d: %d", issue, code)
	}
	if v.Claim != "accepted" || !v.Live || v.AcceptClaim == nil || *v.AcceptClaim != "live" {
		f.t.Fatalf("PUT dispatch %d: claim %q live %v accept_claim %v; want an accepted, live row", issue, v.Claim, v.Live, v.AcceptClaim)
	}
}

// claimSweepsOK waits for the worker's first claim sweep and requires
// every sweep run so far to be complete (result ok); it returns how many ran.
func (f *fstack) claimSweepsOK() float64 {
	f.t.Helper()
	var runs float64
	eventually(f.t, frLimit, "a claim sweep ran", func() bool {
		runs = f.metric("queen_sweep_runs_total", `sweep="claim"`)
		return runs >= 1
	})
	if ok := f.metric("queen_sweep_runs_total", `sweep="claim"`, `result="ok"`); ok != runs {
		f.t.Fatalf("%v of %v claim sweeps ok", ok, runs)
	}
	return runs
}

// claim reads the claim view with its history.
func (f *fstack) claim(issue int64) frClaim {
	f.t.Helper()
	var v frClaim
	url := f.apiURL + "/v1/repos/" + repo + "/claims/" + itoa(issue) + "?history=100"
	if code := apiJSON(f.t, "GET", url, apiToken, nil, &v); code != http.StatusOK {
		f.t.Fatalf("GET claim %d: %d", issue, code)
	}
	return v
}

// closedPR puts PR number on queen-<issue> in hive/t27, closed, merged or not.
func (f *fstack) closedPR(issue int64, number int, merged bool) {
	pr := githubtest.PR{Number: number, HeadRef: "queen-" + itoa(issue), HeadRepo: repo, State: "closed"}
	if merged {
		at := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
		pr.MergedAt = &at
	}
	f.gh.AddPR(repo, pr)
}

// openPR puts an open PR number on queen-<issue> in hive/t27.
func (f *fstack) openPR(issue int64, number int) {
	f.gh.AddPR(repo, githubtest.PR{Number: number, HeadRef: "queen-" + itoa(issue), HeadRepo: repo, State: "open"})
}

// deliverPR delivers a signed pull_request event for PR number on
// queen-<issue>, requires 202 and returns the id of the task it names.
func (f *fstack) deliverPR(issue int64, number int, action string, merged bool, delivery string) string {
	f.t.Helper()
	body := prPayload(f.t, repo, issue, number, action, merged, instID)
	if code := deliver(f.t, f.hookURL, secret, "pull_request", delivery, body); code != http.StatusAccepted {
		f.t.Fatalf("delivery %s: %d, want 202", delivery, code)
	}
	id := tasks.ReevaluateID(tasks.ReevaluatePayload{Repo: repo, Issue: issue, Delivery: delivery})
	if f.task(id) == nil {
		f.t.Fatalf("delivery %s: answered 202 but no task %s was enqueued", delivery, id)
	}
	return id
}

// task is the asynq task id, or nil when there is none.
func (f *fstack) task(id string) *asynq.TaskInfo {
	f.t.Helper()
	info, err := f.insp.GetTaskInfo(tasks.Queue, id)
	if err != nil {
		return nil
	}
	return info
}

// waitDone waits until task id has completed and returns it.
func (f *fstack) waitDone(id string) *asynq.TaskInfo {
	f.t.Helper()
	var info *asynq.TaskInfo
	eventually(f.t, frLimit, "task "+id+" completed", func() bool {
		info = f.task(id)
		if info != nil && info.State == asynq.TaskStateArchived {
			f.t.Fatalf("task %s archived: %s", id, info.LastErr)
		}
		return info != nil && info.State == asynq.TaskStateCompleted
	})
	return info
}

// hurry is waitDone that runs a task waiting in the retry set at once, as if
// its backoff had passed: for tests about what a retry decides, not when.
func (f *fstack) hurry(id string) *asynq.TaskInfo {
	f.t.Helper()
	var info *asynq.TaskInfo
	eventually(f.t, frLimit, "task "+id+" completed", func() bool {
		info = f.task(id)
		switch {
		case info == nil:
			return false
		case info.State == asynq.TaskStateArchived:
			f.t.Fatalf("task %s archived: %s", id, info.LastErr)
		case info.State == asynq.TaskStateRetry:
			_ = f.insp.RunTask(tasks.Queue, id) // it may have just left the set
		}
		return info.State == asynq.TaskStateCompleted
	})
	return info
}

// waitFreed waits until issue's claim is freed and returns its view.
func (f *fstack) waitFreed(issue int64) frClaim {
	f.t.Helper()
	var v frClaim
	eventually(f.t, frLimit, "claim "+itoa(issue)+" freed", func() bool {
		v = f.claim(issue)
		return v.Freed != nil
	})
	return v
}

// metric sums the worker's samples of name whose labels include every
// `key="value"` in labels.
func (f *fstack) metric(name string, labels ...string) float64 {
	f.t.Helper()
	return scrape(f.t, f.workerURL+"/metrics", name, labels...)
}

// scrape sums the samples of name at the metrics url whose labels include
// every `key="value"` in labels.
func scrape(t testing.TB, url, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("metrics %s: %v", url, err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(series, l) {
				match = false
			}
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); match && err == nil {
			sum += v
		}
	}
	return sum
}

// frClaim is the claim view and history the tests look at.
type frClaim struct {
	Claim       string   `json:"claim"`
	ClaimsIssue bool     `json:"claims_issue"`
	Live        bool     `json:"live"`
	AcceptClaim *string  `json:"accept_claim"`
	Freed       *frFree  `json:"freed"`
	WouldFree   *frFree  `json:"would_free"`
	Version     int64    `json:"version"`
	History     []frItem `json:"history"`
}

type frFree struct {
	Rule     string `json:"rule"`
	Evidence string `json:"evidence"`
	Delivery string `json:"delivery"`
}

type frItem struct {
	Action   string `json:"action"`
	Decision string `json:"decision"`
	Rule     string `json:"rule"`
	Source   struct {
		Kind     string `json:"kind"`
		Delivery string `json:"delivery"`
	} `json:"source"`
	Inputs struct {
		PRs *struct {
			Read           bool `json:"read"`
			Open           int  `json:"open"`
			Merged         int  `json:"merged"`
			ClosedUnmerged int  `json:"closed_unmerged"`
		} `json:"prs"`
	} `json:"inputs"`
}

// decisions counts the history entries that made decision.
func (c frClaim) decisions(decision string) int {
	n := 0
	for _, h := range c.History {
		if h.Decision == decision {
			n++
		}
	}
	return n
}

// lastRead is the newest recorded PR read, or nil.
func (c frClaim) lastRead() *frItem {
	for i := range c.History { // newest first
		if c.History[i].Action == "prs" && c.History[i].Inputs.PRs != nil {
			return &c.History[i]
		}
	}
	return nil
}

// frGate is a reverse proxy in front of the fake GitHub that can hold
// requests open (the pulls list, unless told which), so a task is in flight
// for as long as a test needs.
type frGate struct {
	proxy   *httputil.ReverseProxy
	srv     *httptest.Server
	holds   func(r *http.Request) bool // the requests a hold holds
	held    chan struct{}              // one value per held request
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	hold  bool
	pulls int
}

func newFrGate(t *testing.T, target string) *frGate { return newGate(t, target, isPullsList) }

// newGate is a gate holding the requests holds picks.
func newGate(t *testing.T, target string, holds func(r *http.Request) bool) *frGate {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &frGate{proxy: httputil.NewSingleHostReverseProxy(u), holds: holds, held: make(chan struct{}, 16), release: make(chan struct{})}
	g.srv = exServer(t, g)
	t.Cleanup(g.open)
	return g
}

func isPullsList(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pulls")
}

// URL is GITHUB_API_URL through the gate.
func (g *frGate) URL() string { return g.srv.URL + "/" }

// setHold makes later held requests hang (until the client goes or open).
func (g *frGate) setHold(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold = on
}

// open lets every held request end.
func (g *frGate) open() { g.once.Do(func() { close(g.release) }) }

// Pulls is the number of pulls lists that reached the gate.
func (g *frGate) Pulls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pulls
}

func (g *frGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	if isPullsList(r) {
		g.pulls++
	}
	hold := g.hold && g.holds(r)
	g.mu.Unlock()
	if hold {
		g.held <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-g.release:
			w.WriteHeader(http.StatusBadGateway)
		}
		return
	}
	g.proxy.ServeHTTP(w, r)
}

// expireLease moves the asynq lease of an active task into the past, as if
// the ~60 s asynq v0.26 needs to call a task orphaned had gone by: the lease
// is 30 s (internal/rdb.LeaseDuration, renewed by the heartbeat), and the
// recoverer takes tasks whose lease ended over 30 s ago, at server start and
// then every minute. None of it is configurable (a task Timeout does not
// shorten it), so a test rewinds the lease instead of waiting.
func (f *fstack) expireLease(id string) {
	f.t.Helper()
	key := "asynq:{" + tasks.Queue + "}:lease"
	ctx := context.Background()
	rdb := f.rdb
	if _, err := rdb.ZScore(ctx, key, id).Result(); err != nil {
		f.t.Fatalf("task %s has no lease in %s: %v", id, key, err)
	}
	past := float64(time.Now().Add(-2 * time.Minute).Unix())
	if err := rdb.ZAdd(ctx, key, redis.Z{Score: past, Member: id}).Err(); err != nil {
		f.t.Fatalf("rewind lease of %s: %v", id, err)
	}
}
