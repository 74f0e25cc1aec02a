package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// GitHub answers GraphQL rate limits with HTTP 200: the primary limit (an
// error of type RATE_LIMITED, x-ratelimit-remaining 0 and the reset) and a
// secondary one (the message in "errors", no Retry-After). The built
// worker's re-evaluations, read together in one GraphQL query, wait them
// out, the primary until its reset and the secondary GitHub's minute,
// never an outage's retry a second or two later; run, they read and free.
func TestGraphQLRateLimitAnsweredOKIsWaitedOutEndToEnd(t *testing.T) {
	t.Parallel()
	// The delay lets the burst's tasks become due together, so they are
	// read in one query.
	for _, c := range []struct {
		name     string
		fault    func(gh *githubtest.Server)
		min, max time.Duration
		base     int64
	}{
		// A primary limit holds the worker's GraphQL reads until its reset
		// (each case has a stack of its own): a short one, waited out.
		{"primary", func(gh *githubtest.Server) { gh.GraphQLRateLimit(1, time.Now().Add(10*time.Second)) }, 7 * time.Second, 12 * time.Second, 9700},
		{"secondary", func(gh *githubtest.Server) { gh.GraphQLSecondaryLimit(1, http.StatusOK, 0) }, 55 * time.Second, 130 * time.Second, 9710},
	} {
		f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_REEVALUATE_DELAY": "2s"})
		f.both()
		const n = 4
		ids := map[int64]string{}
		for i := c.base; i < c.base+n; i++ {
			f.acceptRow(i)
			f.closedPR(i, int(i), false)
		}
		c.fault(f.gh)
		queries := f.gh.Count(githubtest.RouteGraphQL)
		sent := time.Now()
		for i := c.base; i < c.base+n; i++ {
			ids[i] = f.deliverPR(i, int(i), "closed", false, "d-gql-"+c.name+"-"+itoa(i))
		}
		// Every task either waits in the retry set or read elsewhere (a
		// task alone reads with REST): none comes back within seconds.
		waiting := 0
		eventually(t, frLimit, c.name+": the burst read", func() bool {
			waiting = 0
			for _, id := range ids {
				info := f.task(id)
				switch {
				case info == nil:
					return false
				case info.State == asynq.TaskStateRetry:
					waiting++
				case info.State != asynq.TaskStateCompleted:
					return false
				}
			}
			return true
		})
		if f.gh.Count(githubtest.RouteGraphQL) == queries || waiting == 0 {
			t.Fatalf("%s: %d GraphQL queries, %d tasks waiting: the burst was never read together, the test shows nothing",
				c.name, f.gh.Count(githubtest.RouteGraphQL)-queries, waiting)
		}
		for issue, id := range ids {
			info := f.task(id)
			if info.State != asynq.TaskStateRetry {
				continue
			}
			if wait := info.NextProcessAt.Sub(sent); wait < c.min || wait > c.max {
				t.Fatalf("%s: #%d comes back after %s (%s), want %s to %s", c.name, issue, wait.Round(time.Second), info.LastErr, c.min, c.max)
			}
			if info.Retried != 0 {
				t.Fatalf("%s: #%d retried %d times against the budget; a rate limit only waits", c.name, issue, info.Retried)
			}
			if v := f.claim(issue); v.Freed != nil || v.lastRead() != nil {
				t.Fatalf("%s: #%d recorded %+v freed %+v on a rate-limited read", c.name, issue, v.lastRead(), v.Freed)
			}
		}
		for issue, id := range ids {
			f.hurry(id)
			frCheckFreed(t, f.waitFreed(issue), "d-gql-"+c.name+"-"+itoa(issue))
		}
	}
}

// GitHub's resource limits answer the sweep's 100-branch query with
// partial data and an error without a path: the built worker halves the
// batch down to what GitHub serves, so its one sweep reads every branch,
// frees the closed ones, keeps the merged ones, and counts as complete.
func TestResourceLimitOnA100BranchSweepReadsEveryBranch(t *testing.T) {
	t.Parallel()
	// One sweep at the worker's start; the next is an hour away.
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_SWEEP_INTERVAL": "1h"})
	f.webhook()
	const rows = 100
	for i := int64(1); i <= rows; i++ {
		f.acceptRow(i)
		f.closedPR(i, int(1000+i), i%2 == 0)
	}
	f.gh.ResourceLimit(12)
	f.startWorker(nil)
	f.claimSweepsOK() // else branches were left unread past the resource limit
	if n := f.gh.Count(githubtest.RouteGraphQL); n < 2 {
		t.Fatalf("%d GraphQL queries: the limit was never met, the test shows nothing", n)
	}
	for i := int64(1); i <= rows; i++ {
		v := f.claim(i)
		if i%2 == 0 {
			frCheckKept(t, v, 0, 1, 0)
			continue
		}
		frCheckFreedBySweep(t, v)
	}
	if n := f.gh.Count(githubtest.RouteListPulls); n != 0 {
		t.Fatalf("the sweep listed pulls over REST %d times; want GraphQL only", n)
	}
}
