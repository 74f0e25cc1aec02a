package worker

import (
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// A repository renamed on GitHub is still read under the name its rows
// were written with (REST follows GitHub's redirect, GraphQL the rename,
// the installation sync keeps the old name): its merged and closed PRs still
// count, and the export sees the branch's PR and opens no second
// one (every PR was dropped as a fork's when names were compared).
func TestRenamedRepositoryKeepsItsPRsAndOpensNoSecondPR(t *testing.T) {
	const renamed = "queen/t27-renamed"
	e := newEnv(t, options{export: true, freeClosedPR: true})
	head := e.accepted(5, map[string]string{"src/five.rs": "fn five() {}\n"})
	e.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-5", HeadRepo: repo, HeadSHA: head, State: "open"})
	for i := int64(6); i <= 8; i++ {
		e.row(i, "accept", nil)
	}
	e.pr(6, "closed", false)
	e.pr(7, "closed", true)
	e.pr(8, "closed", false)
	e.gh.RenameRepo(repo, renamed)

	if err := e.w.ExportPush(e.ctx, pushTask(t, 5, head)); err != nil {
		t.Fatalf("export push after the rename: %v", err)
	}
	if prs := e.gh.PRs(renamed); len(prs) != 4 || e.gh.Count(githubtest.RouteCreatePull) != 0 {
		t.Fatalf("%d PRs, %d created after the rename: the export opened a second PR for queen-5", len(prs), e.gh.Count(githubtest.RouteCreatePull))
	}
	// Alone (REST) and together (GraphQL), the closed PRs still count.
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 6, "d-6", "closed", 0)); err != nil {
		t.Fatal(err)
	}
	e2 := e.get(6)
	if e2.PRs == nil || e2.PRs.ClosedUnmerged != 1 || e2.Freed == nil {
		t.Fatalf("#6 after the rename: prs %+v, freed %+v; want its closed PR counted and the row freed", e2.PRs, e2.Freed)
	}
	// The sweep syncs the installation first: GitHub lists the new name,
	// the old one stays installed and its rows are read together (GraphQL).
	if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
		t.Fatal(err)
	}
	if r := e.get(7); r.PRs == nil || r.PRs.Merged != 1 {
		t.Fatalf("#7 after the rename: prs %+v, want its merged PR counted", r.PRs)
	}
	if r := e.get(8); r.PRs == nil || r.PRs.ClosedUnmerged != 1 || r.Freed == nil {
		t.Fatalf("#8 after the rename: prs %+v, freed %+v", r.PRs, r.Freed)
	}

	// A webhook names the repository by its new name: the row written
	// under the old is found, read and decided.
	e.row(9, "accept", nil)
	e.gh.AddPR(renamed, githubtest.PR{HeadRef: "queen-9", HeadRepo: renamed, State: "closed"})
	task, err := tasks.NewReevaluate(tasks.ReevaluatePayload{Repo: renamed, Issue: 9, Delivery: "d-9",
		Event: "pull_request", Action: "closed", InstallationID: instID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.w.Reevaluate(e.ctx, task); err != nil {
		t.Fatal(err)
	}
	if r := e.get(9); r.PRs == nil || r.PRs.ClosedUnmerged != 1 || r.Freed == nil {
		t.Fatalf("#9 by a webhook naming the new name: prs %+v, freed %+v; want the old name's row read and freed", r.PRs, r.Freed)
	}
}
