package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/githubtest"
)

const frFlag = "QUEEN_FREE_CLOSED_PR"

// frCheckFreed asserts the view of a claim freed by accept_claim on delivery.
func frCheckFreed(t *testing.T, v frClaim, delivery string) {
	t.Helper()
	if v.Freed == nil || v.Freed.Rule != "accept_claim" || v.Freed.Delivery != delivery || v.Live || v.ClaimsIssue || v.WouldFree != nil {
		t.Fatalf("claim: live %v claims_issue %v freed %+v would_free %+v; want freed by accept_claim on delivery %q, not live",
			v.Live, v.ClaimsIssue, v.Freed, v.WouldFree, delivery)
	}
	if n := v.decisions("free"); n != 1 {
		t.Fatalf("history shows %d frees, want 1: %+v", n, v.History)
	}
	want := "webhook"
	if delivery == "" {
		want = "sweep"
	}
	for _, h := range v.History {
		if h.Decision == "free" && (h.Source.Kind != want || h.Source.Delivery != delivery) {
			t.Fatalf("the free's source is %+v; want %s with delivery %q", h.Source, want, delivery)
		}
	}
}

// frCheckFreedBySweep asserts a claim freed on a read of the sweep: no
// delivery to name, the sweep as the free's source.
func frCheckFreedBySweep(t *testing.T, v frClaim) {
	t.Helper()
	frCheckFreed(t, v, "")
}

// frCheckKept asserts a live claim that nothing freed or would free, whose
// last recorded read is open/merged/closedUnmerged.
func frCheckKept(t *testing.T, v frClaim, open, merged, closedUnmerged int) {
	t.Helper()
	if !v.Live || !v.ClaimsIssue || v.Freed != nil || v.WouldFree != nil || v.AcceptClaim == nil || *v.AcceptClaim != "live" {
		t.Fatalf("claim: live %v claims_issue %v accept_claim %v freed %+v would_free %+v; want live and nothing freed",
			v.Live, v.ClaimsIssue, v.AcceptClaim, v.Freed, v.WouldFree)
	}
	r := v.lastRead()
	if r == nil {
		t.Fatalf("no PR read recorded in the history: %+v", v.History)
	}
	p := r.Inputs.PRs
	if !p.Read || p.Open != open || p.Merged != merged || p.ClosedUnmerged != closedUnmerged {
		t.Fatalf("recorded read %+v, want read open=%d merged=%d closed_unmerged=%d", *p, open, merged, closedUnmerged)
	}
}

func TestFreeClosedUnmergedPRFreesItsIssue(t *testing.T) {
	t.Parallel()
	f := newClosedPRStack(t, 9111, 501)

	id := f.deliverPR(9111, 501, "closed", false, "d-free-1")
	v := f.waitFreed(9111)
	frCheckFreed(t, v, "d-free-1")
	if v.Freed.Evidence == "" {
		t.Fatal("freed without evidence")
	}
	f.waitDone(id)
	if n := f.metric("queen_claims_decisions_total", `rule="accept_claim"`, `outcome="freed"`); n != 1 {
		t.Fatalf("queen_claims_decisions_total{accept_claim,freed} = %v, want 1", n)
	}
}

func TestFreeClosedUnmergedPROnlyRecordsWouldFreeWithFlagOff(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "off"})
	f.both()
	f.acceptRow(9112)
	f.closedPR(9112, 502, false)

	f.waitDone(f.deliverPR(9112, 502, "closed", false, "d-off-1"))
	v := f.claim(9112)
	if !v.Live || !v.ClaimsIssue || v.Freed != nil {
		t.Fatalf("flag off: live %v claims_issue %v freed %+v; want the claim still live", v.Live, v.ClaimsIssue, v.Freed)
	}
	if w := v.WouldFree; w == nil || w.Rule != "accept_claim" || w.Delivery != "d-off-1" || w.Evidence == "" {
		t.Fatalf("flag off: would_free %+v; want accept_claim on d-off-1 with evidence", w)
	}
	if n, w := v.decisions("free"), v.decisions("would_free"); n != 0 || w != 1 {
		t.Fatalf("history: %d frees, %d would_free; want 0 and 1", n, w)
	}
	if n := f.metric("queen_claims_decisions_total", `outcome="would_free"`); n != 1 {
		t.Fatalf("queen_claims_decisions_total{would_free} = %v, want 1", n)
	}
}

// Merged work, other open work, and no PR at all keep the claim: only
// thrown-away work frees it.
func TestKeepMergedOpenOrNoPR(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on"})
	f.both()
	cases := []struct {
		name   string
		issue  int64
		setup  func()
		number int
		merged bool
		// the read the worker should record
		open, mergedN, closedUnmerged int
	}{
		{"merged", 9201, func() { f.closedPR(9201, 601, true) }, 601, true, 0, 1, 0},
		{"another PR open", 9202, func() { f.closedPR(9202, 602, false); f.openPR(9202, 603) }, 602, false, 1, 0, 1},
		{"no PR", 9203, func() {}, 604, false, 0, 0, 0},
	}
	ids := map[string]string{}
	for _, c := range cases {
		f.acceptRow(c.issue)
		c.setup()
		ids[c.name] = f.deliverPR(c.issue, c.number, "closed", c.merged, "d-keep-"+itoa(c.issue))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.waitDone(ids[c.name])
			frCheckKept(t, f.claim(c.issue), c.open, c.mergedN, c.closedUnmerged)
		})
	}
}

// An unreadable PR list decides nothing: the task waits (without spending
// its retry budget) while GitHub answers 502, and frees once it answers.
func TestKeepWhileGitHubIsDownThenFree(t *testing.T) {
	t.Parallel()
	f := newClosedPRStack(t, 9301, 701)

	f.gh.Down(true)
	id := f.deliverPR(9301, 701, "closed", false, "d-down-1")
	eventually(t, frLimit, "two failed reads while GitHub is down", func() bool {
		return f.metric("queen_task_runs_total", `type="claim:reevaluate"`, `result="wait"`) >= 2
	})
	v := f.claim(9301)
	if !v.Live || v.Freed != nil || v.WouldFree != nil || v.lastRead() != nil {
		t.Fatalf("GitHub down: live %v freed %+v would_free %+v read %+v; want nothing decided or recorded",
			v.Live, v.Freed, v.WouldFree, v.lastRead())
	}
	info := f.task(id)
	if info == nil || info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived {
		t.Fatalf("GitHub down: task %+v; want it waiting to run again", info)
	}
	if info.Retried != 0 {
		t.Fatalf("GitHub down: task retried %d times against its budget; an outage must not spend it", info.Retried)
	}
	if !strings.Contains(info.LastErr, "502") {
		t.Fatalf("GitHub down: task's last error %q does not name the 502", info.LastErr)
	}

	f.gh.Down(false)
	frCheckFreed(t, f.waitFreed(9301), "d-down-1")
	if done := f.waitDone(id); done.Retried != 0 {
		t.Fatalf("after the outage: retried %d, want 0", done.Retried)
	}
}

// GitHub still listing the PR open right after its close event (here:
// reopened before the task ran) keeps the claim.
func TestKeepPRReopenedBeforeProcessing(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_REEVALUATE_DELAY": "2s"})
	f.both()
	f.acceptRow(9401)
	f.closedPR(9401, 801, false)

	id := f.deliverPR(9401, 801, "closed", false, "d-reopen-1")
	f.openPR(9401, 801) // reopened on GitHub before the delayed task runs
	if info := f.task(id); info == nil || info.State != asynq.TaskStateScheduled {
		t.Fatalf("the task should still wait out QUEEN_REEVALUATE_DELAY; got %+v", info)
	}
	// Each read that still finds it open is retried with ordinary backoff
	// (hurried along here) until the worker gives the listing its due.
	info := f.hurry(id)
	frCheckKept(t, f.claim(9401), 1, 0, 0)
	if info.Retried == 0 {
		t.Fatal("the PR still open after its close event was taken at the first read")
	}
	if n := f.gh.Count(githubtest.RouteListPulls); n < 2 {
		t.Fatalf("the open PR was read %d times; a PR still open after its close should be read again", n)
	}
}

// A redelivery of one delivery id is the same task; two delivery ids for
// one event are two tasks, and the second finds the claim already free.
func TestFreeOnceForRepeatedDeliveries(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on"})
	f.both()

	t.Run("same delivery twice", func(t *testing.T) {
		f.acceptRow(9501)
		f.closedPR(9501, 901, false)
		id := f.deliverPR(9501, 901, "closed", false, "d-twice")
		f.deliverPR(9501, 901, "closed", false, "d-twice")
		f.waitDone(id)
		reads := f.gh.Count(githubtest.RouteListPulls)
		// GitHub redelivers later too: the retained task id still answers.
		if again := f.deliverPR(9501, 901, "closed", false, "d-twice"); again != id {
			t.Fatalf("task id %s, want %s", again, id)
		}
		if info := f.task(id); info.State != asynq.TaskStateCompleted || info.Retried != 0 {
			t.Fatalf("after the redelivery: %+v; want the one completed task", info)
		}
		frCheckFreed(t, f.claim(9501), "d-twice")
		if n := f.gh.Count(githubtest.RouteListPulls); n != reads {
			t.Fatalf("a redelivery after the free read GitHub again (%d reads, then %d)", reads, n)
		}
	})

	t.Run("two delivery ids for one event", func(t *testing.T) {
		f.acceptRow(9502)
		f.closedPR(9502, 902, false)
		a := f.deliverPR(9502, 902, "closed", false, "d-one-a")
		b := f.deliverPR(9502, 902, "closed", false, "d-one-b")
		f.waitDone(a)
		f.waitDone(b)
		v := f.claim(9502)
		if v.Freed == nil || (v.Freed.Delivery != "d-one-a" && v.Freed.Delivery != "d-one-b") {
			t.Fatalf("freed %+v; want freed on one of the two deliveries", v.Freed)
		}
		frCheckFreed(t, v, v.Freed.Delivery)
	})

	if n := f.metric("queen_claims_decisions_total", `outcome="freed"`); n != 2 {
		t.Fatalf("queen_claims_decisions_total{freed} = %v, want 2 (one per claim)", n)
	}
}

// 502s and a secondary rate limit with Retry-After make the task wait, not
// fail: it succeeds afterwards with its retry budget untouched.
func TestFreeWaitsOut502sAndSecondaryRateLimit(t *testing.T) {
	t.Parallel()
	f := newClosedPRStack(t, 9601, 1001)

	f.gh.FailNext("/repos/"+repo+"/pulls", http.StatusBadGateway, http.Header{}, 2)
	f.gh.SecondaryRateLimit(1, time.Second)
	id := f.deliverPR(9601, 1001, "closed", false, "d-limits")
	frCheckFreed(t, f.waitFreed(9601), "d-limits")
	info := f.waitDone(id)
	if info.Retried != 0 {
		t.Fatalf("retried %d against the budget; rate limits and 502s must only wait", info.Retried)
	}
	if n := f.gh.Count(githubtest.RouteListPulls); n < 3 {
		t.Fatalf("pulls listed %d times; want the two 502s and at least one success", n)
	}
	if n := f.metric("queen_task_runs_total", `type="claim:reevaluate"`, `result="wait"`); n < 3 {
		t.Fatalf("queen_task_runs_total{claim:reevaluate,wait} = %v; want the 502s and the rate limit counted as waits", n)
	}
	if n := f.metric("queen_task_runs_total", `type="claim:reevaluate"`, `result="retry"`); n != 0 {
		t.Fatalf("queen_task_runs_total{claim:reevaluate,retry} = %v, want 0", n)
	}
}

// A worker killed with SIGKILL while the task reads GitHub leaves the task
// active in Redis; once asynq calls it orphaned, a restarted worker runs it
// again with the same outcome.
func TestFreeAfterWorkerKilledMidTask(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, map[string]string{frFlag: "on"})
	f.webhook()
	gate := newFrGate(t, f.gh.URL())
	f.acceptRow(9701)
	f.closedPR(9701, 1101, false)

	gate.setHold(true)
	viaGate := map[string]string{"GITHUB_API_URL": gate.URL()}
	w1 := f.startWorker(viaGate)
	t.Cleanup(gate.open) // before w1's SIGTERM should the test stop early
	id := f.deliverPR(9701, 1101, "closed", false, "d-kill")
	select {
	case <-gate.held:
	case <-time.After(frLimit):
		t.Fatal("the worker never listed the pull requests")
	}
	if info := f.task(id); info == nil || info.State != asynq.TaskStateActive {
		t.Fatalf("task while its read hangs: %+v; want active", info)
	}
	w1.kill()
	if info := f.task(id); info == nil || info.State != asynq.TaskStateActive {
		t.Fatalf("task after SIGKILL: %+v; want still active (orphaned)", info)
	}
	if v := f.claim(9701); !v.Live || v.Freed != nil {
		t.Fatalf("after the kill: live %v freed %+v; nothing should be decided yet", v.Live, v.Freed)
	}

	f.expireLease(id)
	gate.setHold(false)
	f.startWorker(viaGate)
	frCheckFreed(t, f.waitFreed(9701), "d-kill")
	info := f.waitDone(id)
	if info.Retried != 1 {
		t.Fatalf("retried %d; want 1 (the run lost with the killed worker)", info.Retried)
	}
	if n, g := f.gh.Count(githubtest.RouteListPulls), gate.Pulls(); n != 1 || g != 2 {
		t.Fatalf("pulls: %d reached GitHub, %d the gate; want 1 and 2 (the killed run's read never finished)", n, g)
	}
}

// A reopened PR brings a claim freed by accept_claim back to life.
func TestFreeReopenedAfterFreeIsLiveAgain(t *testing.T) {
	t.Parallel()
	f := newClosedPRStack(t, 9801, 1201)
	f.deliverPR(9801, 1201, "closed", false, "d-close")
	frCheckFreed(t, f.waitFreed(9801), "d-close")

	f.openPR(9801, 1201)
	f.waitDone(f.deliverPR(9801, 1201, "reopened", false, "d-reopen"))
	v := f.claim(9801)
	if !v.Live || !v.ClaimsIssue || v.Freed != nil || v.WouldFree != nil {
		t.Fatalf("after the reopen: live %v claims_issue %v freed %+v would_free %+v; want live again",
			v.Live, v.ClaimsIssue, v.Freed, v.WouldFree)
	}
	if n := v.decisions("unfree"); n != 1 {
		t.Fatalf("history shows %d unfrees, want 1", n)
	}
	frCheckKept(t, v, 1, 0, 0)
}

// The sweep reads the PR state of every accepted row with one GraphQL
// request per 100 branches, and decides on what it read.
func TestFreeSweepMakesOneGraphQLRequestPer100Rows(t *testing.T) {
	t.Parallel()
	// One sweep at the worker's start; the next slot is an hour away.
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_SWEEP_INTERVAL": "1h"})
	f.webhook()
	const rows = 150
	for i := int64(1); i <= rows; i++ {
		f.acceptRow(i)
	}
	f.closedPR(7, 2001, false)   // first batch: freed
	f.closedPR(140, 2002, false) // second batch: freed
	f.closedPR(8, 2003, true)    // merged: kept
	f.closedPR(141, 2004, false) // another PR open: kept
	f.openPR(141, 2005)
	f.startWorker(nil)

	runs := f.claimSweepsOK()
	if n := f.gh.Count(githubtest.RouteGraphQL); n != 2*int(runs) {
		t.Fatalf("%d GraphQL requests for %v sweeps of %d rows; want 2 per sweep", n, runs, rows)
	}
	for _, issue := range []int64{7, 140} {
		frCheckFreedBySweep(t, f.claim(issue))
	}
	frCheckKept(t, f.claim(8), 0, 1, 0)
	frCheckKept(t, f.claim(141), 1, 0, 1)
	frCheckKept(t, f.claim(75), 0, 0, 0)
	frCheckKept(t, f.claim(150), 0, 0, 0)
	if n := f.gh.Count(githubtest.RouteListPulls); n != 0 {
		t.Fatalf("the sweep listed pulls over REST %d times; want GraphQL only", n)
	}
}
