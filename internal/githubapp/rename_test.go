package githubapp_test

import (
	"context"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// A renamed or transferred repository is read by its old name: REST
// follows GitHub's redirect, GraphQL resolves the old name, and its PRs
// (headed by the repository under its new name) still count; a fork's PR
// is still dropped, by id or isCrossRepository, never by name.
func TestRenamedRepositoryKeepsItsPRs(t *testing.T) {
	ctx := context.Background()
	s, a := setup(t)
	merged := time.Now().Add(-time.Hour)
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-1", HeadRepo: repo, State: "closed", MergedAt: &merged})
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-1", HeadRepo: "stranger/t27", State: "closed"})
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-2", HeadRepo: repo, State: "closed"})
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-3", HeadRepo: repo, State: "open"})
	want := map[string][3]uint32{"queen-1": {0, 1, 0}, "queen-2": {0, 0, 1}, "queen-3": {1, 0, 0}}
	check := func(when string) {
		t.Helper()
		for b, w := range want {
			st, err := a.PRsForBranch(ctx, inst, "hive", "t27", b)
			if got := [3]uint32{st.Open, st.Merged, st.ClosedUnmerged}; err != nil || !st.Read || got != w {
				t.Errorf("%s: REST %s = %v %v, want open/merged/closed %v", when, b, got, err, w)
			}
		}
		res := a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1", "queen-2", "queen-3"})
		for b, w := range want {
			st := res[b].State
			if got := [3]uint32{st.Open, st.Merged, st.ClosedUnmerged}; res[b].Err != nil || !st.Read || got != w {
				t.Errorf("%s: GraphQL %s = %v %v, want open/merged/closed %v", when, b, got, res[b].Err, w)
			}
		}
	}
	check("before")
	s.RenameRepo(repo, "hive/t28")
	check("renamed")
	s.RenameRepo("hive/t28", "bees/t28")
	check("transferred")
}
