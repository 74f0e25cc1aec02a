package worker

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/testkit"
)

// reevaluateBurst re-evaluates rows 1..n at once, so they are read together
// in one GraphQL query, and returns each one's wait.
func (e *env) reevaluateBurst(t *testing.T, n int64) []*retry.WaitError {
	t.Helper()
	var wg sync.WaitGroup
	out := make([]*retry.WaitError, n)
	for i := int64(1); i <= n; i++ {
		wg.Go(func() {
			err := e.w.Reevaluate(e.ctx, reevaluateTask(t, i, fmt.Sprintf("d-%d", i), "closed", 0))
			if !errors.As(err, &out[i-1]) {
				t.Errorf("#%d: %v, want a wait", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// GitHub answers GraphQL rate limits with HTTP 200: the primary one is
// waited until its reset, a secondary one its Retry-After or the minute,
// never retried after a second or two as an outage; then the rows decide.
func TestGraphQLRateLimitAnsweredOKIsWaitedOut(t *testing.T) {
	const n = 5
	for _, c := range []struct {
		name     string
		fault    func(gh *githubtest.Server)
		min, max time.Duration
	}{
		{"primary", func(gh *githubtest.Server) { gh.GraphQLRateLimit(1, time.Now().Add(20*time.Minute)) }, 19 * time.Minute, 20 * time.Minute},
		{"secondary", func(gh *githubtest.Server) { gh.GraphQLSecondaryLimit(1, http.StatusOK, 0) }, SecondaryLimitWait, SecondaryLimitWait},
		{"secondary Retry-After", func(gh *githubtest.Server) { gh.GraphQLSecondaryLimit(1, http.StatusOK, 3*time.Minute) }, 3 * time.Minute, 3 * time.Minute},
		{"secondary 403", func(gh *githubtest.Server) { gh.GraphQLSecondaryLimit(1, http.StatusForbidden, 0) }, SecondaryLimitWait, SecondaryLimitWait},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, options{freeClosedPR: true, clock: testkit.NewClock(time.Now()), readWindow: 300 * time.Millisecond})
			e.burstRows(n)
			c.fault(e.gh)
			for i, w := range e.reevaluateBurst(t, n) {
				if w.After < c.min || w.After > c.max {
					t.Fatalf("#%d waits %s (%v), want %s to %s", i+1, w.After, w.Err, c.min, c.max)
				}
			}
			if q := e.gh.Count(githubtest.RouteGraphQL); q != 1 {
				t.Fatalf("%d GraphQL reads, want the burst read together once", q)
			}
			for i := int64(1); i <= n; i++ {
				if e.get(i).PRs != nil {
					t.Fatalf("#%d: a rate-limited read recorded PR state", i)
				}
				if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, i, fmt.Sprintf("d-%d", i), "closed", 0)); err != nil || e.get(i).Freed == nil {
					t.Fatalf("#%d once GitHub answers: %v, freed %+v", i, err, e.get(i).Freed)
				}
			}
		})
	}
}

// A secondary limit without Retry-After (requests remaining, the primary
// window's reset up to an hour out) costs the installation GitHub's minute,
// then a longer wait, never the reset; and go-github does not refuse the
// installation's next read locally.
func TestSecondaryLimitWithoutRetryAfterCostsAMinute(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			clk := testkit.NewClock(time.Now())
			e := newEnv(t, options{freeClosedPR: true, clock: clk})
			e.row(5, "accept", nil)
			pr := e.pr(5, "closed", false)
			if _, err := e.app.InstallationToken(e.ctx, instID); err != nil {
				t.Fatal(err)
			}
			var waits []time.Duration
			for i := 0; i < 2; i++ {
				e.gh.SecondaryLimit(1, status, 0)
				err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr))
				var w *retry.WaitError
				if !errors.As(err, &w) {
					t.Fatalf("secondary limit without Retry-After: %v, want a wait", err)
				}
				waits = append(waits, w.After)
				clk.Add(w.After)
			}
			if waits[0] < 60*time.Second || waits[0] > 130*time.Second || waits[1] < waits[0]/2 || waits[1] > 2*time.Minute+10*time.Second {
				t.Fatalf("waits %v: want 60-130s, then at most twice that, never the reset", waits)
			}
			reads := e.gh.Count(githubtest.RouteListPulls)
			if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 5, "d-1", "closed", pr)); err != nil || e.get(5).Freed == nil {
				t.Fatalf("the next read: %v, freed %+v", err, e.get(5).Freed)
			}
			if e.gh.Count(githubtest.RouteListPulls) != reads+1 {
				t.Fatal("the next read was refused by go-github locally, never sent")
			}
		})
	}
}

// GitHub's rate-limit headers are the truth whatever the body says: a
// GraphQL answer of HTTP 200 whose error has no type, with
// x-ratelimit-remaining 0 and a reset 60 s away, holds the installation's
// GraphQL reads until the reset. Re-evaluations coming back every 5 s
// meanwhile wait for it without asking; once it passes, one read decides.
func TestSpentGraphQLLimitHoldsTheInstallationUntilItsReset(t *testing.T) {
	clock := testkit.NewClock(time.Now())
	e := newEnv(t, options{freeClosedPR: true, clock: clock, readWindow: 300 * time.Millisecond})
	const n = 2 // read together: one GraphQL query
	e.burstRows(n)
	reset := clock.Now().Add(60 * time.Second).Truncate(time.Second)
	e.gh.SpendRateLimit("graphql", reset)

	e.reevaluateBurst(t, n)
	if q := e.gh.Count(githubtest.RouteGraphQL); q != 1 {
		t.Fatalf("%d GraphQL requests, want 1", q)
	}
	for range 10 { // every 5 s for 50 s
		clock.Add(5 * time.Second)
		left := reset.Sub(clock.Now())
		for i, w := range e.reevaluateBurst(t, n) {
			if w.After < left-time.Second || w.After > left+time.Second {
				t.Errorf("#%d waits %s (%v), want the %s left until the reset", i+1, w.After, w.Err, left)
			}
		}
	}
	if q := e.gh.Count(githubtest.RouteGraphQL); q != 1 {
		t.Fatalf("the worker asked GraphQL %d times before the reset, want once", q)
	}
	for i := int64(1); i <= n; i++ {
		if e.get(i).PRs != nil {
			t.Fatalf("#%d: a spent limit recorded PR state", i)
		}
	}

	clock.Set(reset.Add(time.Second))
	e.gh.ClearFaults()
	var wg sync.WaitGroup
	for i := int64(1); i <= n; i++ {
		wg.Go(func() {
			if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, i, fmt.Sprintf("d-%d", i), "closed", 0)); err != nil {
				t.Errorf("#%d after the reset: %v", i, err)
			}
		})
	}
	wg.Wait()
	if q := e.gh.Count(githubtest.RouteGraphQL); q != 2 {
		t.Fatalf("%d GraphQL requests after the reset, want 2", q)
	}
	for i := int64(1); i <= n; i++ {
		if e.get(i).Freed == nil {
			t.Fatalf("#%d not freed after the reset", i)
		}
	}
}
