package e2e

import (
	"net/http"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// renamed is where TestRenameEndToEnd renames and transfers hive/t27.
const renamed = "bees/t28"

// A repository renamed, then transferred, on GitHub while the built
// binaries run: the repository events tell the webhook at once (no installation sync runs
// in between), so pull_request deliveries naming the new name find the
// rows the Queen wrote under the old; a closed PR frees, a merged one is
// counted and keeps its claim. The export, reading under the old name
// through GitHub's redirects, sees the branch's PR (its head now the new
// repository) and opens no second one; a new branch's PR, asked for under
// the old name, is opened on the repository as it is now. Every exchange
// with GitHub holds to its published contracts.
func TestRenameEndToEnd(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.env[frFlag] = "on"
	x.workerEnv[frFlag] = "on"
	x.gh.SetHook(x.hookURL, secret)
	x.gh.Record()
	x.webhook()
	for _, issue := range []int64{5, 6, 7} {
		x.gh.SetIssue(repo, int(issue), true, "Issue "+itoa(issue)) // moves with the repository
	}
	for _, issue := range []int64{6, 7} {
		x.put(issue, map[string]any{"started": true, "dispatched_at": "2026-10-11T10:02:00Z",
			"finished_at": "2026-10-11T12:20:00Z", "review_state": "accept"})
	}
	closed := x.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-6", HeadRepo: repo, State: "open"})
	merged := x.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-7", HeadRepo: repo, State: "open"})
	x.startWorker()

	// Renamed, then transferred: each event names the old name.
	for _, m := range []struct{ from, to, action string }{
		{repo, "hive/t28", "renamed"}, {"hive/t28", renamed, "transferred"},
	} {
		d, err := x.gh.MoveRepo(m.from, m.to)
		if err != nil || d.StatusCode != http.StatusAccepted || d.Action != m.action {
			t.Fatalf("the repository event: %+v %v, want %s answered 202", d, err, m.action)
		}
	}
	for issue, close := range map[int64]func() (githubtest.Delivery, error){
		6: func() (githubtest.Delivery, error) { return x.gh.ClosePR(renamed, closed, false) },
		7: func() (githubtest.Delivery, error) { return x.gh.ClosePR(renamed, merged, true) },
	} {
		d, err := close()
		if err != nil || d.StatusCode != http.StatusAccepted {
			t.Fatalf("#%d: pull_request closed on %s: %+v %v, want 202", issue, renamed, d, err)
		}
	}
	var six, seven frClaim
	eventually(t, exLimit, "both rows read under the old name", func() bool {
		six, seven = x.claim(6), x.claim(7)
		return six.Freed != nil && seven.lastRead() != nil
	})
	if six.Freed.Rule != "accept_claim" || six.Freed.Delivery == "" {
		t.Fatalf("#6 freed %+v, want by accept_claim on the delivery naming %s", six.Freed, renamed)
	}
	frCheckKept(t, seven, 0, 1, 0)

	// The branch's PR, opened before the transfer at the judged head.
	head := x.branch(5, map[string]string{"src/five.rs": "fn five() {}\n"})
	x.work.Push(t, "queen-5")
	x.gh.AddPR(renamed, githubtest.PR{HeadRef: "queen-5", HeadRepo: renamed, HeadSHA: head, State: "open"})
	x.accept(5, head, nil)
	x.waitStates("has_pr", 5)
	if n := x.gh.Count(githubtest.RouteCreatePull); n != 0 {
		t.Fatalf("%d PRs created after the transfer: the export opened a second PR for queen-5", n)
	}
	if prs := x.gh.PRs(renamed); len(prs) != 3 {
		t.Fatalf("%d PRs on %s, want the three there were", len(prs), renamed)
	}

	// A new branch's PR, asked for under the old name: GitHub answers the
	// POST 307 and the PR is opened on the repository as it is now, from
	// its own branch.
	x.gh.SetIssue(renamed, 8, true, "Issue 8")
	head8 := x.branch(8, map[string]string{"src/eight.rs": "fn eight() {}\n"})
	x.accept(8, head8, nil)
	x.waitStates("pr_opened", 8)
	var opened []githubtest.PR
	for _, p := range x.gh.PRs(renamed) {
		if p.HeadRef == "queen-8" {
			opened = append(opened, p)
		}
	}
	if len(opened) != 1 || opened[0].HeadRepo != renamed || opened[0].HeadSHA != head8 || opened[0].State != "open" {
		t.Fatalf("queen-8's PRs on %s: %+v, want one open from %s at %s", renamed, opened, renamed, head8)
	}
	if n := x.gh.Count(githubtest.RouteCreatePull); n != 1 {
		t.Fatalf("%d PR creations, want queen-8's only", n)
	}
	checkContract(t, x.gh) // the redirects and what follows them included
}

// claim reads the claim view of issue, with its history, under the name
// the Queen wrote it (hive/t27).
func (x *exStack) claim(issue int64) frClaim {
	x.t.Helper()
	var v frClaim
	if code := apiJSON(x.t, "GET", x.apiURL+"/v1/repos/"+repo+"/claims/"+itoa(issue)+"?history=100", apiToken, nil, &v); code != http.StatusOK {
		x.t.Fatalf("GET claim #%d: %d", issue, code)
	}
	return v
}
