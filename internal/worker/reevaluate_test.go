package worker

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

func TestReevaluateDecisions(t *testing.T) {
	cases := []struct {
		name      string
		flag      bool
		setup     func(e *env) (action string, pr int)
		freed     bool
		wouldFree bool
		want      dispatch.PRState // counts only
	}{
		{"closed unmerged, flag on: freed", true, func(e *env) (string, int) {
			return "closed", e.pr(5, "closed", false)
		}, true, false, dispatch.PRState{ClosedUnmerged: 1}},
		{"closed unmerged, flag off: would_free only", false, func(e *env) (string, int) {
			return "closed", e.pr(5, "closed", false)
		}, false, true, dispatch.PRState{ClosedUnmerged: 1}},
		{"merged: kept", true, func(e *env) (string, int) {
			return "closed", e.pr(5, "closed", true)
		}, false, false, dispatch.PRState{Merged: 1}},
		{"one closed, one open: kept", true, func(e *env) (string, int) {
			e.pr(5, "open", false)
			return "closed", e.pr(5, "closed", false)
		}, false, false, dispatch.PRState{Open: 1, ClosedUnmerged: 1}},
		{"open: kept", true, func(e *env) (string, int) {
			return "reopened", e.pr(5, "open", false)
		}, false, false, dispatch.PRState{Open: 1}},
		{"no PR: kept", true, func(e *env) (string, int) {
			return "closed", 0
		}, false, false, dispatch.PRState{}},
		{"fork PR closed on a same-named branch: ignored, kept", true, func(e *env) (string, int) {
			return "closed", e.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-5", HeadRepo: "fork/t27", State: "closed"})
		}, false, false, dispatch.PRState{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, options{freeClosedPR: c.flag})
			e.row(5, "accept", nil)
			action, pr := c.setup(e)
			if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", action, pr)); err != nil {
				t.Fatalf("Reevaluate: %v", err)
			}
			rec := e.get(5)
			if rec.PRs == nil || !rec.PRs.Read {
				t.Fatalf("PR state not recorded: %+v", rec.PRs)
			}
			got := dispatch.PRState{Open: rec.PRs.Open, Merged: rec.PRs.Merged, ClosedUnmerged: rec.PRs.ClosedUnmerged}
			if got.Open != c.want.Open || got.Merged != c.want.Merged || got.ClosedUnmerged != c.want.ClosedUnmerged {
				t.Errorf("recorded %+v, want %+v", got, c.want)
			}
			if (rec.Freed != nil) != c.freed {
				t.Errorf("freed = %+v, want freed %v", rec.Freed, c.freed)
			}
			if (rec.WouldFree != nil) != c.wouldFree {
				t.Errorf("would_free = %+v, want %v", rec.WouldFree, c.wouldFree)
			}
			if c.freed && (rec.Freed.Rule != dispatch.RuleAccept || rec.Freed.Delivery != "d-1") {
				t.Errorf("free record %+v: want rule accept_claim and delivery d-1", rec.Freed)
			}
			if q := e.gh.LastQuery(githubtest.RouteListPulls); q.Get("head") != "queen:queen-5" || q.Get("state") != "all" {
				t.Errorf("pulls listed with %v, want head=queen:queen-5 state=all", q)
			}
			outcome := map[bool]string{true: "freed", false: "kept"}[c.freed]
			if c.wouldFree {
				outcome = "would_free"
			}
			if n := value(e.m.Claims.WithLabelValues(dispatch.RuleAccept, outcome)); n != 1 {
				t.Errorf("claims decisions{accept_claim,%s} = %v, want 1", outcome, n)
			}
		})
	}
}

func TestReevaluateUnreadableListDecidesNothing(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(5, "accept", nil)
	pr := e.pr(5, "closed", false)
	before := e.get(5).Version

	e.gh.Down(true)
	err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
	if !isWait(err) {
		t.Fatalf("GitHub down: err %v, want a wait that keeps the retry budget", err)
	}
	e.gh.Down(false)
	// The second page of the list fails: a partial read is no read.
	for i := 0; i < 100; i++ {
		e.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-5", HeadRepo: repo, State: "open"})
	}
	e.gh.FailAfter(1, "/repos/queen/t27/pulls", http.StatusBadGateway, nil, 1)
	err = e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
	if !isWait(err) {
		t.Fatalf("second page 502: err %v, want a wait", err)
	}
	rec := e.get(5)
	if rec.Version != before || rec.PRs != nil || rec.Freed != nil {
		t.Fatalf("an unread list changed the row: version %d (was %d), prs %+v, freed %+v", rec.Version, before, rec.PRs, rec.Freed)
	}
}

func TestReevaluateSecondaryRateLimitWaitsThenDecides(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(5, "accept", nil)
	pr := e.pr(5, "closed", false)
	e.gh.SecondaryRateLimit(1, 47*time.Second)

	err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
	var w *retry.WaitError
	if !errors.As(err, &w) || w.After != 47*time.Second {
		t.Fatalf("secondary rate limit: err %v, want a wait of the Retry-After 47s", err)
	}
	if e.get(5).PRs != nil {
		t.Fatal("a rate-limited read recorded PR state")
	}
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr)); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	if e.get(5).Freed == nil {
		t.Fatal("not freed once GitHub answered")
	}
}

// GitHub's guidance for a secondary limit that names no wait: at least a
// minute, longer at each retry that fails again; never the hour until
// X-RateLimit-Reset.
func TestReevaluateUnnamedRateLimitWaitsAMinuteAndGrows(t *testing.T) {
	clk := testkit.NewClock(time.Now())
	e := newEnv(t, options{freeClosedPR: true, clock: clk})
	e.row(5, "accept", nil)
	pr := e.pr(5, "closed", false)
	reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	var waits []time.Duration
	for i := 0; i < 3; i++ {
		e.gh.FailNext("/repos/queen/t27/pulls", http.StatusTooManyRequests,
			http.Header{"X-Ratelimit-Remaining": {"4000"}, "X-Ratelimit-Reset": {reset}}, 1)
		err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
		var w *retry.WaitError
		if !errors.As(err, &w) {
			t.Fatalf("429 without Retry-After: %v, want a wait", err)
		}
		waits = append(waits, w.After)
		clk.Add(w.After) // the task comes back when told
	}
	if waits[0] != time.Minute || waits[1] < time.Minute || waits[2] <= waits[0] || waits[2] > MaxSecondaryLimitWait {
		t.Fatalf("waits %v: want a minute, then growing, never the hour to the reset", waits)
	}
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr)); err != nil || e.get(5).Freed == nil {
		t.Fatalf("once GitHub answers: %v, freed %+v", err, e.get(5).Freed)
	}
}

// An answer that cannot be used is retried against the budget and archived
// when it is spent, never waited on forever; it decides nothing.
func TestReevaluateUnusableAnswerSpendsTheBudget(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(5, "accept", nil)
	pr := e.pr(5, "closed", false)
	e.gh.AnswerNext("/repos/queen/t27/pulls", http.StatusOK, []byte(`[{"number": "seven"}]`), 1)
	err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
	if err == nil || !retry.IsFailure(err) || retry.IsPermanent(err) {
		t.Fatalf("undecodable list: %v; want a failure that spends the budget", err)
	}
	if e.get(5).PRs != nil || e.get(5).Freed != nil {
		t.Fatal("an unusable answer decided something")
	}
}

// Between a worker's start and the first installation sync, a repository
// the registry does not know yet waits; before, 21 of 10,000 re-evaluations
// completed as "not installed" and were lost.
func TestReevaluateBeforeTheFirstSyncWaits(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(5, "accept", nil)
	pr := e.pr(5, "closed", false)
	if err := e.rdb.Del(e.ctx, installs.KeySynced, installs.KeyRepos).Err(); err != nil {
		t.Fatal(err)
	}
	err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
	if !isWait(err) || e.get(5).PRs != nil {
		t.Fatalf("before the first sync: %v; want a wait, nothing decided", err)
	}
	if err := installs.Sync(e.ctx, e.app, e.reg); err != nil {
		t.Fatal(err)
	}
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr)); err != nil || e.get(5).Freed == nil {
		t.Fatalf("after the sync: %v, freed %+v; want freed", err, e.get(5).Freed)
	}
}

func TestReevaluateReopenedAfterFreeUnfrees(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(5, "accept", nil)
	pr := e.pr(5, "closed", false)
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-close", "closed", pr)); err != nil {
		t.Fatal(err)
	}
	if e.get(5).Freed == nil {
		t.Fatal("closed unmerged PR did not free")
	}
	e.gh.AddPR(repo, githubtest.PR{Number: pr, HeadRef: "queen-5", HeadRepo: repo, State: "open"})
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-reopen", "reopened", pr)); err != nil {
		t.Fatal(err)
	}
	rec := e.get(5)
	if rec.Freed != nil {
		t.Fatalf("reopened PR left the claim freed: %+v", rec.Freed)
	}
	if rec.View(finished).Live != true {
		t.Fatal("claim not live again")
	}
	if n := value(e.m.Claims.WithLabelValues(dispatch.RuleAccept, "unfreed")); n != 1 {
		t.Fatalf("unfreed decisions = %v, want 1", n)
	}
}

func TestReevaluateSuspendedWaitsAndSkipsUnknown(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(5, "accept", nil)
	pr := e.pr(5, "closed", false)
	if err := e.reg.Suspend(e.ctx, instID); err != nil {
		t.Fatal(err)
	}
	err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
	var w *retry.WaitError
	if !errors.As(err, &w) || !strings.Contains(w.Reason, "suspended") {
		t.Fatalf("suspended installation: err %v, want a wait naming the suspension", err)
	}
	if n := e.gh.Count(githubtest.RouteListPulls); n != 0 || e.get(5).PRs != nil {
		t.Fatalf("a suspended installation was read (%d requests) or decided", n)
	}

	if err := e.reg.Unsuspend(e.ctx, instID); err != nil {
		t.Fatal(err)
	}
	// No row: nothing to decide, nothing to retry.
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 6, "d-2", "closed", pr)); err != nil {
		t.Fatalf("no ledger row: %v, want done", err)
	}
	// A repository not installed: done, nothing read.
	if err := e.reg.Remove(e.ctx, instID); err != nil {
		t.Fatal(err)
	}
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-3", "closed", pr)); err != nil {
		t.Fatalf("not installed: %v, want done", err)
	}
	if e.get(5).PRs != nil {
		t.Fatal("an uninstalled repository's row was decided")
	}
}

// Right after a close GitHub can still list the PR open: the read is tried
// again (spending the budget, so it cannot loop forever) and only then counts.
func TestReevaluateStillOpenAfterCloseIsRetried(t *testing.T) {
	t.Run("settles on the third read: freed", func(t *testing.T) {
		e := newEnv(t, options{freeClosedPR: true})
		e.row(5, "accept", nil)
		pr := e.pr(5, "open", false)
		var lists atomic.Int32
		e.setBefore(func(r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pulls") && lists.Add(1) == 3 {
				e.gh.AddPR(repo, githubtest.PR{Number: pr, HeadRef: "queen-5", HeadRepo: repo, State: "closed"})
			}
		})
		e.serve(10 * time.Millisecond)
		task := reevaluateTask(t, 5, "d-1", "closed", pr)
		e.runQueued(task)
		rec := e.get(5)
		if rec.Freed == nil {
			t.Fatalf("not freed once GitHub listed the PR closed: prs %+v", rec.PRs)
		}
		if n := lists.Load(); n != 3 {
			t.Fatalf("list reads = %d, want 3 (two stale, one settled)", n)
		}
	})
	t.Run("still open after the retries: recorded open, kept", func(t *testing.T) {
		e := newEnv(t, options{freeClosedPR: true})
		e.row(5, "accept", nil)
		pr := e.pr(5, "open", false)
		e.serve(10 * time.Millisecond)
		task := reevaluateTask(t, 5, "d-1", "closed", pr)
		e.runQueued(task)
		rec := e.get(5)
		if rec.Freed != nil || rec.PRs == nil || rec.PRs.Open != 1 {
			t.Fatalf("want the open PR recorded and the claim kept: prs %+v freed %+v", rec.PRs, rec.Freed)
		}
		if n := e.gh.Count(githubtest.RouteListPulls); n != 1+DefaultCloseRetries {
			t.Fatalf("list reads = %d, want %d", n, 1+DefaultCloseRetries)
		}
	})
}

// GitHub still denying a merge or a reopen that the event reported is a
// read that contradicts the event: after the retries nothing is decided,
// least of all a free.
func TestReevaluateReadContradictingTheEventDecidesNothing(t *testing.T) {
	for _, tc := range []struct {
		action string
		merged bool
	}{{"closed", true}, {"reopened", false}} {
		t.Run(tc.action, func(t *testing.T) {
			e := newEnv(t, options{freeClosedPR: true})
			e.row(5, "accept", nil)
			pr := e.pr(5, "closed", false) // listed closed and unmerged throughout
			e.serve(10 * time.Millisecond)
			task, err := tasks.NewReevaluate(tasks.ReevaluatePayload{Repo: repo, Issue: 5, Delivery: "d-1",
				Event: "pull_request", Action: tc.action, InstallationID: instID, PRNumber: pr, Merged: tc.merged}, 0)
			if err != nil {
				t.Fatal(err)
			}
			e.runQueued(task)
			rec := e.get(5)
			if rec.Freed != nil || rec.WouldFree != nil || rec.PRs != nil {
				t.Fatalf("a read contradicting the %s event decided: prs %+v freed %+v", tc.action, rec.PRs, rec.Freed)
			}
			if n := e.gh.Count(githubtest.RouteListPulls); n != 1+DefaultCloseRetries {
				t.Fatalf("list reads = %d, want %d", n, 1+DefaultCloseRetries)
			}
		})
	}
}

// An opened event whose PR GitHub does not list yet is a read older than
// the event: read again, and after the retries decide nothing (the freed
// row is not re-recorded on a list without the PR that came back for it).
func TestReevaluateOpenedPRNotListedYetIsReadAgain(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(5, "accept", nil)
	e.pr(5, "closed", false)
	e.serve(10 * time.Millisecond)
	e.runQueued(reevaluateTask(t, 5, "d-open", "opened", 9999))
	if rec := e.get(5); rec.Freed != nil || rec.WouldFree != nil || rec.PRs != nil {
		t.Fatalf("a read without the opened PR decided: prs %+v freed %+v", rec.PRs, rec.Freed)
	}
	if n := e.gh.Count(githubtest.RouteListPulls); n != 1+DefaultCloseRetries {
		t.Fatalf("list reads = %d, want %d: the opened PR's absence was not read again", n, 1+DefaultCloseRetries)
	}
}

// runQueued enqueues task for the served worker and waits until it has
// completed; an archived task fails the test.
func (e *env) runQueued(task *asynq.Task) {
	e.t.Helper()
	if _, err := e.client.Enqueue(task); err != nil {
		e.t.Fatal(err)
	}
	id, _ := tasks.TaskID(task)
	e.eventually("the task to complete", func() bool { return completed(e, id) })
}

func completed(e *env, id string) bool {
	info, err := e.insp.GetTaskInfo(tasks.Queue, id)
	if err != nil {
		return false
	}
	if info.State == asynq.TaskStateArchived {
		e.t.Fatalf("task %s archived: %s", id, info.LastErr)
	}
	return info.State == asynq.TaskStateCompleted
}
