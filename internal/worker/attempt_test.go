package worker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// Attempts on one branch: the Queen dispatched each row at 10:02, accepted
// it at head1 and (for a re-dispatch) dispatched it again at 14:00,
// accepted at head2. attempt1 and attempt2 are PR creation times in each.
var (
	attemptHead1 = strings.Repeat("1", 40)
	attemptHead2 = strings.Repeat("2", 40)
	attempt1     = time.Date(2026, 10, 11, 11, 0, 0, 0, time.UTC)
	attempt2     = time.Date(2026, 10, 11, 15, 0, 0, 0, time.UTC)
)

// redispatch writes issue's first attempt, accepted at head1, then its
// second, dispatched at 14:00 and accepted at head2.
func (e *env) redispatch(issue int64) {
	e.t.Helper()
	e.row(issue, "accept", map[string]any{"judged_head": attemptHead1})
	e.upsert(issue, map[string]any{"dispatched_at": "2026-10-11T14:00:00Z", "finished_at": "2026-10-11T16:00:00Z",
		"review_state": "accept", "judged_head": attemptHead2})
}

// closedAt puts a closed, unmerged PR on queen-<issue> at head, opened at created.
func (e *env) closedAt(issue int64, head string, created time.Time) int {
	return e.gh.AddPR(repo, githubtest.PR{HeadRef: fmt.Sprintf("queen-%d", issue), HeadRepo: repo, HeadSHA: head,
		State: "closed", CreatedAt: created})
}

// The re-evaluation of a re-dispatched row counts its attempt's PRs only:
// attempt 1's closed PR frees nothing (and is recorded apart), the
// attempt's own PR at its judged head, closed unmerged, frees it.
func TestReevaluateCountsOnlyTheAttemptsPRs(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.redispatch(31)
	old := e.closedAt(31, attemptHead1, attempt1)
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 31, "d-1", "closed", old)); err != nil {
		t.Fatalf("Reevaluate: %v", err)
	}
	rec := e.get(31)
	if rec.Freed != nil || rec.WouldFree != nil || rec.PRs == nil || rec.PRs.ClosedUnmerged != 0 || !slices.Equal(rec.PRs.Earlier, []int{old}) {
		t.Fatalf("only attempt 1's PR: freed %+v would_free %+v prs %+v; want live, #%d earlier", rec.Freed, rec.WouldFree, rec.PRs, old)
	}

	own := e.closedAt(31, attemptHead2, attempt2)
	if err := e.w.Reevaluate(e.ctx, reevaluateTask(t, 31, "d-2", "closed", own)); err != nil {
		t.Fatalf("Reevaluate: %v", err)
	}
	rec = e.get(31)
	if rec.Freed == nil || rec.Freed.Delivery != "d-2" || !slices.Equal(rec.PRs.Numbers, []int{own}) || !slices.Equal(rec.PRs.Earlier, []int{old}) {
		t.Fatalf("the attempt's own PR closed: freed %+v prs %+v; want freed on d-2, #%d counted and #%d earlier", rec.Freed, rec.PRs, own, old)
	}
	if !strings.Contains(e.logs.String(), `"earlier_prs":[`+fmt.Sprint(old)+`]`) {
		t.Errorf("the log does not name the earlier attempt's PR:\n%s", e.logs.String())
	}
}

// Reads shared by several rows' tasks (one GraphQL query) and the sweep's
// batched reads: each row counts its own attempt's PRs from the same answer.
func TestBatchedReadsCountEachRowsAttempt(t *testing.T) {
	for _, path := range []string{"reevaluate", "sweep"} {
		t.Run(path, func(t *testing.T) {
			e := newEnv(t, options{freeClosedPR: true, readWindow: 300 * time.Millisecond})
			rows := map[int64]bool{} // issue -> freed
			e.redispatch(41)         // attempt 1's closed PR only: live
			e.closedAt(41, attemptHead1, attempt1)
			e.redispatch(42) // attempt 1's closed PR at another head, and a merged one
			e.closedAt(42, strings.Repeat("9", 40), attempt1)
			e.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-42", HeadRepo: repo, HeadSHA: attemptHead1, State: "closed",
				MergedAt: &attempt1, CreatedAt: attempt1.Add(-time.Hour)})
			e.redispatch(43) // its own PR at head2 closed: freed
			e.closedAt(43, attemptHead1, attempt1)
			e.closedAt(43, attemptHead2, attempt2)
			e.row(44, "accept", map[string]any{"judged_head": attemptHead1}) // one attempt: its closed PR frees it
			e.closedAt(44, attemptHead1, attempt1)
			rows[41], rows[42], rows[43], rows[44] = false, false, true, true

			if path == "sweep" {
				if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
					t.Fatalf("Sweep: %v", err)
				}
			} else {
				for i := range rows {
					if _, err := e.client.Enqueue(reevaluateTask(t, i, fmt.Sprintf("d-%d", i), "closed", 0)); err != nil {
						t.Fatal(err)
					}
				}
				e.serveN(len(rows), 50*time.Millisecond)
				e.eventually("every task done", func() bool {
					for i := range rows {
						if info, err := e.insp.GetTaskInfo("default", reevaluateID(i)); err != nil || info.State.String() != "completed" {
							return false
						}
					}
					return true
				})
			}
			if n := e.gh.Count(githubtest.RouteGraphQL); n < 1 {
				t.Fatalf("%d GraphQL reads: the branches were not read together", n)
			}
			for i, freed := range rows {
				rec := e.get(i)
				if rec.PRs == nil || !rec.PRs.Read || (rec.Freed != nil) != freed {
					t.Errorf("#%d: prs %+v freed %+v, want freed %v", i, rec.PRs, rec.Freed, freed)
				}
			}
			if p := e.get(42).PRs; p == nil || len(p.Earlier) != 2 || p.Merged != 0 {
				t.Errorf("#42: %+v, want both of attempt 1's PRs earlier", p)
			}
		})
	}
}
