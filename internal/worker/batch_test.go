package worker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/ledger"
)

// A burst of closes on many branches of one repository is read together
// (GraphQL), and every safety rule holds per branch: the branch whose alias
// errored is unread and its task retries alone (REST), freed then under its
// own delivery; a branch whose recorded read is newer than the batch's keeps
// it (a stale read never wins); every other branch is freed under its own
// delivery, with one audit entry naming it.
func TestBurstReadsTogetherAndKeepsEachBranchSafe(t *testing.T) {
	const n = 20
	e := newEnv(t, options{freeClosedPR: true, readWindow: 300 * time.Millisecond})
	for i := int64(1); i <= n; i++ {
		e.row(i, "accept", nil)
		e.pr(i, "closed", false)
	}
	const broken, stale = 5, 7
	e.gh.GraphQLError(fmt.Sprintf("queen-%d", broken))
	// A read newer than any the burst makes: the PR still open.
	future := time.Now().UTC().Add(time.Hour)
	if _, err := e.ledger.RecordPRs(e.ctx, repo, stale, dispatch.PRState{Read: true, Open: 1, Numbers: []int{999}, ReadAt: &future},
		audit.Sweep("test")); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= n; i++ {
		if _, err := e.client.Enqueue(reevaluateTask(t, i, fmt.Sprintf("d-%d", i), "closed", 0)); err != nil {
			t.Fatal(err)
		}
	}
	e.serveN(n, 50*time.Millisecond)

	e.eventually("every branch but the stale one freed", func() bool {
		for i := int64(1); i <= n; i++ {
			if i != stale && e.get(i).Freed == nil {
				return false
			}
		}
		return true
	})
	// The stale row's task has run once the others did; it must have been
	// read and refused, never freed.
	e.eventually("the stale row's task done", func() bool {
		info, err := e.insp.GetTaskInfo("default", reevaluateID(stale))
		return err == nil && info.State.String() == "completed"
	})
	if rec := e.get(stale); rec.Freed != nil || rec.PRs.Open != 1 || !rec.PRs.ReadAt.Equal(future) {
		t.Fatalf("#%d: freed %+v, prs %+v: a batch read older than the recorded one won", stale, rec.Freed, rec.PRs)
	}

	graphql, rest := e.gh.Count(githubtest.RouteGraphQL), e.gh.Count(githubtest.RouteListPulls)
	if graphql < 1 || graphql > 3 {
		t.Errorf("%d GraphQL queries for %d branches, want 1 to 3 (the burst read together)", graphql, n)
	}
	// REST is the retry of the broken branch alone (and a lone read, if
	// the burst was split so): far fewer reads than branches.
	if rest < 1 || graphql+rest > 5 {
		t.Errorf("%d GraphQL and %d REST reads for %d branches: want the broken branch retried alone and the rest batched", graphql, rest, n)
	}

	entries, err := e.ledger.Audit(e.ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	frees := map[int64][]string{}
	for _, en := range entries {
		if en.Outcome.Freed != "" && en.Action == ledger.ActionPRs {
			frees[en.Issue] = append(frees[en.Issue], en.Source.Delivery)
		}
	}
	for i := int64(1); i <= n; i++ {
		want := fmt.Sprintf("d-%d", i)
		if i == stale {
			if len(frees[i]) != 0 {
				t.Errorf("#%d: freed by %v", i, frees[i])
			}
			continue
		}
		if rec := e.get(i); rec.Freed.Delivery != want || rec.Freed.Rule != dispatch.RuleAccept {
			t.Errorf("#%d: freed %+v, want by accept_claim on delivery %s", i, rec.Freed, want)
		}
		if len(frees[i]) != 1 || frees[i][0] != want {
			t.Errorf("#%d: audit frees by deliveries %v, want exactly [%s]", i, frees[i], want)
		}
	}
	if !strings.Contains(e.logs.String(), "pull requests unread: nothing decided") {
		t.Error("the broken branch's failed read was not logged")
	}
}

func reevaluateID(issue int64) string {
	return fmt.Sprintf("reevaluate:queen/t27:%d:d-%d", issue, issue)
}

// Reads that join one window are sent 100 branches to a GraphQL query,
// each answered with its own branch's PRs.
func TestReadsJoinedAreSentAHundredAQuery(t *testing.T) {
	const n = 150
	e := newEnv(t, options{readWindow: 2 * time.Second})
	numbers := map[string]int{}
	for i := int64(1); i <= n; i++ {
		numbers[fmt.Sprintf("queen-%d", i)] = e.pr(i, "closed", false)
	}
	type got struct {
		branch string
		prs    []int
		err    error
	}
	out := make(chan got, n)
	for branch := range numbers {
		go func() {
			prs, _, err := e.w.readBranch(e.ctx, instID, "queen", "t27", branch)
			g := got{branch: branch, err: err}
			for _, p := range prs {
				g.prs = append(g.prs, p.Number)
			}
			out <- g
		}()
	}
	for range n {
		g := <-out
		if g.err != nil || len(g.prs) != 1 || g.prs[0] != numbers[g.branch] {
			t.Fatalf("%s: read PRs %v (%v), want [%d]", g.branch, g.prs, g.err, numbers[g.branch])
		}
	}
	if q, rest := e.gh.Count(githubtest.RouteGraphQL), e.gh.Count(githubtest.RouteListPulls); q != 2 || rest != 0 {
		t.Fatalf("%d GraphQL queries and %d REST lists for %d branches, want 2 and 0", q, rest, n)
	}
}
