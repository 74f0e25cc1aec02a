package ledger

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
)

var (
	attemptHead1 = strings.Repeat("1", 40)
	attemptHead2 = strings.Repeat("2", 40)
)

// listed is a read that lists its PRs, as githubapp's reads do.
func listed(prs ...dispatch.PR) dispatch.PRState {
	return dispatch.PRState{Read: true, Listed: prs}
}

// A re-dispatched row counts only its attempt's PRs: attempt 1's PR #24,
// closed unmerged, is recorded apart and frees nothing; the attempt's own
// PR at its judged head, closed unmerged, frees it, and the evidence says
// which PR did not count.
func TestAReDispatchedRowCountsOnlyItsAttemptsPRs(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	const repo = "queen/t27"
	f.upsert(t, repo, 21, `{"dispatched_at": "2026-10-10T12:00:00Z", "finished_at": "2026-10-10T13:00:00Z", "review_state": "accept", "judged_head": "`+attemptHead1+`"}`)
	pr24 := dispatch.PR{Number: 24, State: "closed", HeadSHA: attemptHead1, CreatedAt: time.Date(2026, 10, 10, 13, 5, 0, 0, time.UTC)}
	if res, err := f.l.RecordPRs(f.ctx, repo, 21, listed(pr24), audit.Webhook("d-24")); err != nil || res.Outcome != DecisionFree {
		t.Fatalf("attempt 1, #24 closed: %q %v; want freed", res.Outcome, err)
	}

	// The Queen dispatches again; the new attempt is accepted at head2.
	f.upsert(t, repo, 21, `{"dispatched_at": "2026-10-10T17:00:00Z", "finished_at": null, "review_state": null, "judged_head": null}`)
	f.upsert(t, repo, 21, `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "judged_head": "`+attemptHead2+`"}`)
	f.clock.Add(time.Minute)
	res, err := f.l.RecordPRs(f.ctx, repo, 21, listed(pr24), audit.Webhook("d-first-read"))
	if err != nil || res.Outcome == DecisionFree || res.Row.Freed != nil {
		t.Fatalf("attempt 2, only #24 listed: %q freed %+v %v; want live", res.Outcome, res.Row.Freed, err)
	}
	p := f.get(t, repo, 21).PRs
	if p == nil || !p.Read || p.Open+p.Merged+p.ClosedUnmerged != 0 || len(p.Numbers) != 0 || !slices.Equal(p.Earlier, []int{24}) {
		t.Fatalf("recorded %+v, want no PR of the attempt and #24 earlier", p)
	}
	if v := f.get(t, repo, 21).View(t0); !v.Live || v.AcceptClaim == nil || *v.AcceptClaim != "live" || v.PRs == nil || !slices.Equal(v.PRs.Earlier, []int{24}) {
		t.Fatalf("view %+v, want live with #24 listed apart", v)
	}

	// The export's PR #30 at head2, closed unmerged: the attempt's own.
	pr30 := dispatch.PR{Number: 30, State: "closed", HeadSHA: attemptHead2, CreatedAt: time.Date(2026, 10, 10, 19, 10, 0, 0, time.UTC)}
	f.clock.Add(time.Minute)
	res, err = f.l.RecordPRs(f.ctx, repo, 21, listed(pr24, pr30), audit.Webhook("d-30"))
	if err != nil || res.Outcome != DecisionFree || res.Row.Freed == nil {
		t.Fatalf("attempt 2, #30 closed: %q %v; want freed", res.Outcome, err)
	}
	if ev := res.Row.Freed.Evidence; !strings.HasPrefix(ev, "open 0, merged 0, closed unmerged 1 (#30); earlier attempts' #24 not counted read ") {
		t.Fatalf("evidence %q", ev)
	}
}

// A read is counted on the row as it is written: a re-dispatch that lands
// between the re-evaluation's read of the row and its write is decided on
// the new attempt, never on the one the read was sent for.
func TestAReadIsCountedForTheAttemptTheRowIsOnWhenWritten(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	const repo = "queen/t27"
	f.upsert(t, repo, 22, `{"dispatched_at": "2026-10-10T12:00:00Z", "finished_at": "2026-10-10T13:00:00Z", "review_state": "accept", "judged_head": "`+attemptHead1+`"}`)
	seen := f.get(t, repo, 22)
	f.upsert(t, repo, 22, `{"dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "judged_head": "`+attemptHead2+`"}`)
	pr := dispatch.PR{Number: 24, State: "closed", HeadSHA: attemptHead1, CreatedAt: time.Date(2026, 10, 10, 13, 5, 0, 0, time.UTC)}
	res, err := f.l.RecordPRsOn(f.ctx, repo, 22, seen, listed(pr), audit.Webhook("d"))
	if err != nil || res.Row.Freed != nil || res.Row.PRs == nil || !slices.Equal(res.Row.PRs.Earlier, []int{24}) {
		t.Fatalf("%q %+v %v: want the new attempt live, #24 earlier", res.Outcome, res.Row.PRs, err)
	}
}

// Earlier attempts' PRs are part of the recorded state: a read that newly
// lists one writes it (the view shows it), one that finds the same writes
// no version.
func TestEarlierPRsArePartOfTheRecordedState(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	const repo = "queen/t27"
	f.upsert(t, repo, 23, `{"dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "judged_head": "`+attemptHead2+`"}`)
	if _, err := f.l.RecordPRs(f.ctx, repo, 23, listed(), audit.Sweep("s1")); err != nil {
		t.Fatal(err)
	}
	v1 := f.get(t, repo, 23).Version
	f.clock.Add(time.Minute)
	pr := dispatch.PR{Number: 24, State: "closed", HeadSHA: attemptHead1, CreatedAt: time.Date(2026, 10, 10, 13, 5, 0, 0, time.UTC)}
	if _, err := f.l.RecordPRs(f.ctx, repo, 23, listed(pr), audit.Sweep("s2")); err != nil {
		t.Fatal(err)
	}
	rec := f.get(t, repo, 23)
	if rec.Version != v1+1 || !slices.Equal(rec.PRs.Earlier, []int{24}) || !rec.PRs.ReadAt.Equal(f.clock.Now()) {
		t.Fatalf("version %d (was %d), prs %+v: want #24 recorded as earlier, read at %s", rec.Version, v1, rec.PRs, f.clock.Now())
	}
	f.clock.Add(time.Minute)
	res, err := f.l.RecordPRs(f.ctx, repo, 23, listed(pr), audit.Sweep("s3"))
	if err != nil || res.Outcome != OutcomeUnchanged || f.get(t, repo, 23).Version != rec.Version {
		t.Fatalf("the same read again: %q %v, version %d; want unchanged", res.Outcome, err, f.get(t, repo, 23).Version)
	}
}
