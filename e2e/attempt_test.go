package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/dispatch"
)

// issue 21: a re-dispatched issue works on the same branch as its first
// attempt. Attempt 1 is accepted, pushed and its PR closed unmerged: freed.
// The Queen dispatches again and accepts the new attempt at head2: the
// first read of the branch, which finds only attempt 1's closed PR, must
// not free it; the export must push head2 and open a new PR for it,
// leaving attempt 1's closed; closing that new PR unmerged frees it.
// With the built binaries, the sandbox's GitHub (which delivers the close
// webhooks) and its export, in order.
func TestAReDispatchIsPushedAndFreedOnItsOwnPR(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{sweep: "1s"})
	x.workerEnv[frFlag] = "on"
	x.gh.SetHook(x.hookURL, secret)
	x.webhook()
	x.startWorker()
	const issue = 77
	branch := "queen-" + itoa(issue)
	claim := func() atClaim {
		t.Helper()
		var v atClaim
		if code := apiJSON(t, "GET", x.apiURL+"/v1/repos/"+repo+"/claims/"+itoa(issue), apiToken, nil, &v); code != http.StatusOK {
			t.Fatalf("GET claim #%d: %d", issue, code)
		}
		return v
	}

	// Attempt 1: accepted at head1, pushed, its PR opened, then closed
	// unmerged: freed by accept_claim on the close's delivery.
	head1 := x.branch(issue, map[string]string{"src/a77.rs": "fn first() {}\n"})
	x.accept(issue, head1, nil)
	x.waitStates("pr_opened", issue)
	pr1 := x.exports()[issue].PRNumber
	if _, err := x.gh.ClosePR(repo, pr1, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, exLimit, "attempt 1 freed by its closed PR", func() bool { return claim().Freed != nil })
	if v := claim(); v.Freed.Rule != dispatch.RuleAccept {
		t.Fatalf("attempt 1 freed by %+v", v.Freed)
	}

	// The Queen dispatches again (a new dispatched_at, a second after
	// attempt 1's PR was opened) and the bee works on the same branch.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	dispatched := time.Now().UTC().Truncate(time.Second)
	x.put(issue, map[string]any{"dispatched_at": dispatched.Format(time.RFC3339), "finished_at": nil,
		"review_state": nil, "judged_head": nil})
	if v := claim(); v.Freed != nil || !v.Live || v.Claim != "running" || v.Export != nil || v.PRs != nil {
		t.Fatalf("the new dispatch: %+v; want it running, live, with nothing of attempt 1 recorded", v)
	}
	head2 := x.work.Commit(t, branch, map[string]string{"src/a77.rs": "fn second() {}\n"}, "bee work on #77, attempt 2")

	// Accepted at head2, with the export held (it answers 502) so that the
	// first read of the branch finds only attempt 1's closed PR: GitHub
	// redelivers its close.
	x.exportEcho.Store(0)
	x.put(issue, map[string]any{"finished_at": time.Now().UTC().Format(time.RFC3339), "review_state": "accept", "judged_head": head2})
	body := prPayload(t, repo, issue, pr1, "closed", false, instID)
	if code := deliver(t, x.hookURL, secret, "pull_request", "d-attempt1-redelivered", body); code != http.StatusAccepted {
		t.Fatalf("redelivery of #%d's close: %d", pr1, code)
	}
	eventually(t, exLimit, "attempt 2's first read of the branch", func() bool {
		v := claim()
		return v.Freed != nil || (v.PRs != nil && v.PRs.Read)
	})
	v := claim()
	if v.Freed != nil || v.WouldFree != nil || !v.Live || !v.ClaimsIssue || v.AcceptClaim == nil || *v.AcceptClaim != "live" {
		t.Fatalf("attempt 2 after a read finding only attempt 1's closed PR #%d: live %v freed %+v accept_claim %v; want live",
			pr1, v.Live, v.Freed, v.AcceptClaim)
	}
	if p := v.PRs; p.Open+p.Merged+p.ClosedUnmerged != 0 || len(p.Numbers) != 0 || !slices.Equal(p.Earlier, []int{pr1}) {
		t.Fatalf("attempt 2's read %+v: want no PR of its own and #%d as an earlier attempt's", p, pr1)
	}

	// The export comes back: head2 is pushed and a new PR opened for it;
	// attempt 1's PR stays closed.
	pushes := x.remote.Pushes()
	x.exportEcho.Store(-1)
	var st *dispatch.ExportState
	eventually(t, exLimit, "attempt 2 pushed with a PR of its own", func() bool {
		x.runRetries()
		st = x.exports()[issue]
		return st != nil && (st.State == "pr_opened" || st.State == "has_pr" || st.State == "refused")
	})
	if st.State != "pr_opened" || st.PushedHead != head2 || st.PRNumber == pr1 || st.PRNumber == 0 {
		t.Fatalf("attempt 2's export %+v; want pr_opened at %s with a PR other than #%d", st, head2, pr1)
	}
	pr2 := st.PRNumber
	if got := x.remote.Ref(t, branch); got != head2 {
		t.Fatalf("%s on the remote is %s, want head2 %s", branch, got, head2)
	}
	if n := x.remote.Pushes() - pushes; n != 1 {
		t.Errorf("%d pushes for attempt 2, want 1", n)
	}
	states := map[int]string{}
	for _, p := range x.gh.PRs(repo) {
		if p.HeadRef == branch {
			states[p.Number] = p.State
		}
	}
	if want := map[int]string{pr1: "closed", pr2: "open"}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Fatalf("PRs of %s: %v, want %v", branch, states, want)
	}
	if v := claim(); v.Freed != nil || !v.Live {
		t.Fatalf("attempt 2 after its PR opened: %+v", v)
	}

	// Attempt 2's own PR is closed unmerged: freed on that close.
	d, err := x.gh.ClosePR(repo, pr2, false)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, exLimit, "attempt 2 freed by its own closed PR", func() bool { return claim().Freed != nil })
	v = claim()
	wantEvidence := fmt.Sprintf("open 0, merged 0, closed unmerged 1 (#%d); earlier attempts' #%d not counted", pr2, pr1)
	if v.Live || v.ClaimsIssue || v.Freed.Rule != dispatch.RuleAccept || v.Freed.Delivery != d.GUID || !strings.HasPrefix(v.Freed.Evidence, wantEvidence) {
		t.Fatalf("attempt 2 freed %+v live %v; want freed by accept_claim on %s, evidence %q", v.Freed, v.Live, d.GUID, wantEvidence)
	}
	if a := x.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived: %s", len(a), a[0].LastErr)
	}
}

// atClaim is the claim view as the attempt test reads it.
type atClaim struct {
	Claim       string                `json:"claim"`
	ClaimsIssue bool                  `json:"claims_issue"`
	Live        bool                  `json:"live"`
	AcceptClaim *string               `json:"accept_claim"`
	Freed       *dispatch.FreeRecord  `json:"freed"`
	WouldFree   *dispatch.FreeRecord  `json:"would_free"`
	Export      *dispatch.ExportState `json:"export"`
	PRs         *struct {
		Read           bool   `json:"read"`
		Open           uint32 `json:"open"`
		Merged         uint32 `json:"merged"`
		ClosedUnmerged uint32 `json:"closed_unmerged"`
		Numbers        []int  `json:"numbers"`
		Earlier        []int  `json:"earlier"`
	} `json:"prs"`
}
