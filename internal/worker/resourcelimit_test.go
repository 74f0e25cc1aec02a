package worker

import (
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// GitHub's resource limits answer a 100-branch query with partial data and
// an error without a path: the sweep still reads every branch (the batch
// halved down to what GitHub serves) and frees what its PRs free.
func TestSweepReadsEveryBranchPastAResourceLimit(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	for i := int64(1); i <= 100; i++ {
		e.row(i, "accept", nil)
		e.pr(i, "closed", i%2 == 0)
	}
	e.gh.ResourceLimit(12)
	if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	for i := int64(1); i <= 100; i++ {
		rec := e.get(i)
		if rec.PRs == nil || !rec.PRs.Read {
			t.Fatalf("#%d: unread past the resource limit", i)
		}
		if (rec.Freed != nil) != (i%2 == 1) {
			t.Errorf("#%d: freed %+v, want freed %v (closed unmerged)", i, rec.Freed, i%2 == 1)
		}
	}
	if n := e.gh.Count(githubtest.RouteGraphQL); n < 2 {
		t.Fatalf("%d GraphQL queries: the limit was never met, the test shows nothing", n)
	}
}
