package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// The chaos tests put one fault on a running stack for a stretch, with
// rows that must be freed (their branch has only a PR closed unmerged) and
// rows that must be kept (a merged PR; another PR open). Each asserts that
// nothing is decided on what the fault hid, that no kept row is ever freed,
// and that once the fault ends every row converges: nothing a delivery or
// the sweep was told of is lost. Faults covered elsewhere: GitHub down (502)
// for a re-evaluation (TestKeepWhileGitHubIsDownThenFree), a few 502s and one
// secondary limit (TestFreeWaitsOut502sAndSecondaryRateLimit), the worker
// killed mid re-evaluation (TestFreeAfterWorkerKilledMidTask) and mid push
// (TestExportWorkerKilledMidPushConverges), the export timing out past the
// retry budget (TestExportOutageThenRecovery), a Sentinel failover
// (TestFailoverLosesNoAcceptedDelivery).

// chaosRows are the rows of one chaos test.
type chaosRows struct {
	free   []int64 // only a PR closed unmerged: freed
	merged int64   // a merged PR: kept
	open   int64   // one PR closed unmerged, another open: kept
	prs    map[int64]int
}

// chaosSetup writes the rows from base and their PRs on GitHub.
func chaosSetup(f *fstack, base int64) *chaosRows {
	c := &chaosRows{free: []int64{base, base + 1}, merged: base + 2, open: base + 3, prs: map[int64]int{}}
	for i, issue := range c.all() {
		f.acceptRow(issue)
		c.prs[issue] = int(base) + i
	}
	for _, issue := range c.free {
		f.closedPR(issue, c.prs[issue], false)
	}
	f.closedPR(c.merged, c.prs[c.merged], true)
	f.closedPR(c.open, c.prs[c.open], false)
	f.openPR(c.open, c.prs[c.open]+100)
	return c
}

func (c *chaosRows) all() []int64 { return append(append([]int64{}, c.free...), c.merged, c.open) }

// deliverAll delivers each row's close event and returns the task ids.
func (c *chaosRows) deliverAll(f *fstack, prefix string) map[int64]string {
	ids := map[int64]string{}
	for _, issue := range c.all() {
		ids[issue] = f.deliverPR(issue, c.prs[issue], "closed", issue == c.merged, prefix+itoa(issue))
	}
	return ids
}

// checkNothingFreed asserts no row is freed or would be, and that no read
// was recorded for any (the fault hid every branch) when unread is set.
func (c *chaosRows) checkNothingFreed(t *testing.T, f *fstack, unread bool) {
	t.Helper()
	for _, issue := range c.all() {
		v := f.claim(issue)
		if !v.Live || v.Freed != nil || v.WouldFree != nil {
			t.Fatalf("#%d during the fault: live %v freed %+v would_free %+v; want nothing decided", issue, v.Live, v.Freed, v.WouldFree)
		}
		if r := v.lastRead(); unread && r != nil {
			t.Fatalf("#%d during the fault: a read was recorded: %+v", issue, *r.Inputs.PRs)
		}
	}
}

// checkKeptNeverFreed asserts the kept rows were never freed, whatever
// their history.
func (c *chaosRows) checkKeptNeverFreed(t *testing.T, f *fstack) {
	t.Helper()
	for _, issue := range []int64{c.merged, c.open} {
		if v := f.claim(issue); v.Freed != nil || v.decisions("free") != 0 || v.decisions("would_free") != 0 {
			t.Fatalf("#%d has a merged or open PR but was freed: %+v, history %+v", issue, v.Freed, v.History)
		}
	}
}

// converge waits, with the fault over, until every freeable row is freed
// once and every kept row is kept on a read of its PRs, running the tasks
// that wait out the outage's backoff at once (the backoff is not under
// test). It samples the kept rows on every look.
func (c *chaosRows) converge(t *testing.T, f *fstack) {
	t.Helper()
	eventually(t, frLimit, "every row decided after the fault", func() bool {
		c.checkKeptNeverFreed(t, f)
		f.runWaiting()
		for _, issue := range c.free {
			if f.claim(issue).Freed == nil {
				return false
			}
		}
		for _, issue := range []int64{c.merged, c.open} {
			if f.claim(issue).lastRead() == nil {
				return false
			}
		}
		return true
	})
	for _, issue := range c.free {
		v := f.claim(issue)
		if v.Freed.Rule != "accept_claim" || v.Live || v.ClaimsIssue || v.decisions("free") != 1 {
			t.Fatalf("#%d: freed %+v live %v, %d frees; want one free by accept_claim", issue, v.Freed, v.Live, v.decisions("free"))
		}
	}
	frCheckKept(t, f.claim(c.merged), 0, 1, 0)
	frCheckKept(t, f.claim(c.open), 1, 0, 1)
}

// runWaiting runs each task waiting in the retry set now.
func (f *fstack) runWaiting() {
	infos, err := f.insp.ListRetryTasks(tasks.Queue, asynq.PageSize(1000))
	if err != nil {
		return // no queue yet
	}
	for _, info := range infos {
		_ = f.insp.RunTask(tasks.Queue, info.ID) // it may have started meanwhile
	}
}

// checkTasksWaitedOnly asserts each re-evaluation completed without
// spending its retry budget, and nothing was archived.
func checkTasksWaitedOnly(t *testing.T, f *fstack, ids map[int64]string) {
	t.Helper()
	for issue, id := range ids {
		info := f.waitDoneHurried(id)
		if info.Retried != 0 {
			t.Errorf("#%d: task %s retried %d times against its budget; a fault must only make it wait", issue, id, info.Retried)
		}
	}
	archived, err := f.insp.ListArchivedTasks(tasks.Queue)
	if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		t.Fatal(err)
	}
	if len(archived) != 0 {
		t.Fatalf("%d tasks archived: %s", len(archived), archived[0].LastErr)
	}
}

// waitDoneHurried is hurry that tolerates a task being pending or active.
func (f *fstack) waitDoneHurried(id string) *asynq.TaskInfo {
	f.t.Helper()
	var info *asynq.TaskInfo
	eventually(f.t, frLimit, "task "+id+" completed", func() bool {
		f.runWaiting()
		info = f.task(id)
		if info != nil && info.State == asynq.TaskStateArchived {
			f.t.Fatalf("task %s archived: %s", id, info.LastErr)
		}
		return info != nil && info.State == asynq.TaskStateCompleted
	})
	return info
}

// chaosGitHubStretch runs one GitHub fault, begun by begin and ended by
// ClearFaults, over re-evaluations and sweeps; every read during it fails.
func chaosGitHubStretch(t *testing.T, base int64, begin func(gh *githubtest.Server)) {
	t.Helper()
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_SWEEP_INTERVAL": "2s"})
	f.both()
	// The fault begins before the rows exist: a sweep the worker ran as it
	// started (20 ms after, at most) must not record a read of them.
	begin(f.gh)
	c := chaosSetup(f, base)
	ids := c.deliverAll(f, "d-chaos-")
	eventually(t, frLimit, "re-evaluations and a sweep to meet the fault", func() bool {
		c.checkNothingFreed(t, f, true)
		waits := f.metric("queen_task_runs_total", `type="claim:reevaluate"`, `result="wait"`)
		bad := f.metric("queen_sweep_runs_total", `sweep="claim"`) - f.metric("queen_sweep_runs_total", `sweep="claim"`, `result="ok"`)
		return waits >= float64(2*len(ids)) && bad >= 2
	})
	c.checkNothingFreed(t, f, true)
	for issue, id := range ids {
		if info := f.task(id); info == nil || info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived || info.Retried != 0 {
			t.Fatalf("#%d during the fault: task %+v; want it waiting, its retry budget untouched", issue, info)
		}
	}

	f.gh.ClearFaults()
	c.converge(t, f)
	checkTasksWaitedOnly(t, f, ids)
}

func TestChaosGitHub502Stretch(t *testing.T) {
	t.Parallel()
	chaosGitHubStretch(t, 8101, func(gh *githubtest.Server) {
		gh.FailNext("/repos/"+repo+"/pulls", http.StatusBadGateway, http.Header{}, -1)
		gh.FailNext("/graphql", http.StatusBadGateway, http.Header{}, -1)
	})
}

func TestChaosGitHub504Stretch(t *testing.T) {
	t.Parallel()
	chaosGitHubStretch(t, 8201, func(gh *githubtest.Server) {
		gh.FailNext("/repos/"+repo+"/pulls", http.StatusGatewayTimeout, http.Header{}, -1)
		gh.FailNext("/graphql", http.StatusGatewayTimeout, http.Header{}, -1)
	})
}

// GitHub's secondary limit: 403 with Retry-After on every request,
// installation token mints included.
func TestChaosSecondaryRateLimitStretch(t *testing.T) {
	t.Parallel()
	chaosGitHubStretch(t, 8301, func(gh *githubtest.Server) { gh.SecondaryRateLimit(-1, time.Second) })
}

// 429 Too Many Requests, with Retry-After on REST and the spent primary
// limit with its reset on GraphQL.
func TestChaosRateLimit429Stretch(t *testing.T) {
	t.Parallel()
	chaosGitHubStretch(t, 8401, func(gh *githubtest.Server) {
		gh.FailNext("/repos/"+repo+"/pulls", http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}, -1)
		gh.FailNext("/graphql", http.StatusTooManyRequests, http.Header{
			"X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Remaining": {"0"},
			"X-Ratelimit-Reset": {itoa(time.Now().Add(time.Second).Unix())},
		}, -1)
	})
}

// GraphQL answering HTTP 200 with errors, first for the whole query, then
// for one branch's alias: a sweep decides on the branches it read and
// leaves the others alone until they read again. No delivery comes: the
// sweep alone frees.
func TestChaosGraphQLPartialErrorsStretch(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_SWEEP_INTERVAL": "1s"})
	f.webhook()
	c := chaosSetup(f, 8501)
	f.gh.AnswerNext("/graphql", http.StatusOK, []byte(`{"errors":[{"message":"Something went wrong while executing your query."}]}`), -1)
	f.startWorker(nil)
	eventually(t, frLimit, "two sweeps on answers holding only errors", func() bool {
		c.checkNothingFreed(t, f, true)
		return f.metric("queen_sweep_runs_total", `sweep="claim"`, `result="partial"`) >= 2
	})
	c.checkNothingFreed(t, f, true)

	// Only queen-<free[0]> errors now: the sweep frees free[1] and keeps
	// the others on what it read.
	f.gh.ClearFaults()
	f.gh.GraphQLError("queen-" + itoa(c.free[0]))
	partial := f.metric("queen_sweep_runs_total", `sweep="claim"`, `result="partial"`)
	eventually(t, frLimit, "a sweep to decide the branches it read", func() bool {
		c.checkKeptNeverFreed(t, f)
		return f.claim(c.free[1]).Freed != nil && f.claim(c.merged).lastRead() != nil && f.claim(c.open).lastRead() != nil &&
			f.metric("queen_sweep_runs_total", `sweep="claim"`, `result="partial"`) > partial+1
	})
	frCheckFreedBySweep(t, f.claim(c.free[1]))
	if v := f.claim(c.free[0]); !v.Live || v.Freed != nil || v.WouldFree != nil || v.lastRead() != nil {
		t.Fatalf("#%d, whose branch errored: live %v freed %+v read %+v; want nothing decided", c.free[0], v.Live, v.Freed, v.lastRead())
	}

	f.gh.ClearFaults()
	c.converge(t, f)
	frCheckFreedBySweep(t, f.claim(c.free[0]))
	if n := f.gh.Count(githubtest.RouteListPulls); n != 0 {
		t.Fatalf("the sweep listed pulls over REST %d times; want GraphQL only", n)
	}
}

// Redis is killed (SIGKILL; the append-only file is fsynced on every
// write) while re-evaluations wait in its scheduled set, and started again
// on its files. A delivery made while it is down is answered 503, so
// GitHub marks it failed; its redelivery is taken once Redis is back.
// The webhook and the worker carry on without a restart.
func TestChaosRedisRestartedMidFlow(t *testing.T) {
	t.Parallel()
	// The tasks wait 5 s: long enough to be in the scheduled set when Redis
	// goes. A task running then would stay active until asynq's recoverer
	// took it back, a minute or two later (see TestFailoverLosesNoAcceptedDelivery).
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_REEVALUATE_DELAY": "5s"})
	f.webhook()
	w := f.startWorker(nil)
	c := chaosSetup(f, 8601)
	late := c.free[1] // delivered while Redis is down
	ids := map[int64]string{}
	for _, issue := range c.all() {
		if issue != late {
			ids[issue] = f.deliverPR(issue, c.prs[issue], "closed", issue == c.merged, "d-redis-"+itoa(issue))
		}
	}
	for issue, id := range ids {
		if info := f.task(id); info == nil || info.State != asynq.TaskStateScheduled {
			t.Fatalf("#%d: task %+v; want it waiting out QUEEN_REEVALUATE_DELAY", issue, info)
		}
	}

	f.redis.Kill()
	body := prPayload(t, repo, late, c.prs[late], "closed", false, instID)
	if code := deliver(t, f.hookURL, secret, "pull_request", "d-redis-late", body); code != http.StatusServiceUnavailable {
		t.Fatalf("delivery with Redis down: %d, want 503", code)
	}
	f.redis.Restart()
	eventually(t, frLimit, "the redelivery taken once Redis is back", func() bool {
		code := deliver(t, f.hookURL, secret, "pull_request", "d-redis-late", body)
		if code != http.StatusAccepted && code != http.StatusServiceUnavailable {
			t.Fatalf("redelivery: %d, want 202 or 503", code)
		}
		return code == http.StatusAccepted
	})
	ids[late] = tasks.ReevaluateID(tasks.ReevaluatePayload{Repo: repo, Issue: late, Delivery: "d-redis-late"})

	c.converge(t, f)
	for _, issue := range c.free {
		want := "d-redis-" + itoa(issue)
		if issue == late {
			want = "d-redis-late"
		}
		frCheckFreed(t, f.claim(issue), want)
	}
	checkTasksWaitedOnly(t, f, ids)
	if ok, code := w.exited(); ok {
		t.Fatalf("the worker exited (%d) over the Redis restart", code)
	}
}

// The worker is killed (SIGKILL) while its sweep waits for GitHub's
// GraphQL answer. Nothing is decided; the lease the killed sweep held keeps
// the next sweeps out for at most its TTL (worker.PeriodicLeaseTTL, 30 s),
// then a restarted worker's sweep frees what it must and keeps the rest.
// No delivery comes: only the sweep can find the rows.
func TestChaosWorkerKilledMidSweep(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_SWEEP_INTERVAL": "1s"})
	f.webhook()
	// The gate holds GraphQL requests: the sweep stays mid-read.
	gate := newGate(t, f.gh.URL(), func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/graphql") })
	viaGate := map[string]string{"GITHUB_API_URL": gate.URL()}
	c := chaosSetup(f, 8701)

	gate.setHold(true)
	w1 := f.startWorker(viaGate)
	select {
	case <-gate.held:
	case <-time.After(frLimit):
		t.Fatal("the sweep never asked GitHub's GraphQL")
	}
	w1.kill()
	c.checkNothingFreed(t, f, true)

	gate.setHold(false)
	killed := time.Now()
	f.startWorker(viaGate)
	c.converge(t, f)
	t.Logf("converged %s after the kill", time.Since(killed).Round(time.Millisecond))
	for _, issue := range c.free {
		frCheckFreedBySweep(t, f.claim(issue))
	}
}
