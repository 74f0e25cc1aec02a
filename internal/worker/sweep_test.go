package worker

import (
	"encoding/json"
	"testing"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
)

func TestSweepReadsHundredBranchesPerQuery(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	want := map[int64]bool{}
	for i := int64(1); i <= 250; i++ {
		e.row(i, "accept", nil)
		switch i % 10 {
		case 0:
			e.pr(i, "closed", false)
			want[i] = true
		case 1:
			e.pr(i, "closed", true)
		case 2:
			e.pr(i, "open", false)
		case 3: // closed attempt, then a new open one
			e.pr(i, "closed", false)
			e.pr(i, "open", false)
		}
	}
	// A fork's closed PR on a same-named branch is not this repository's.
	e.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-7", HeadRepo: "fork/t27", State: "closed"})
	e.row(251, "sendBack", map[string]any{"send_backs": 2}) // not accepted: not read

	fetches := redistest.CountFetches(e.rdb)
	if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n := e.gh.Count(githubtest.RouteGraphQL); n != 3 {
		t.Fatalf("GraphQL requests = %d, want 3 for 250 branches", n)
	}
	// The ledger is read a page (one query's branches) at a time.
	if m := fetches.MaxRows(); m > ledger.DefaultPage {
		t.Fatalf("%d rows fetched in one Redis round trip; want at most %d", m, ledger.DefaultPage)
	}
	if m := fetches.MaxIndex(); m > ledger.DefaultPage {
		t.Fatalf("%d index entries fetched in one Redis round trip; want at most %d", m, ledger.DefaultPage)
	}
	for i := int64(1); i <= 250; i++ {
		rec := e.get(i)
		if rec.PRs == nil || !rec.PRs.Read {
			t.Fatalf("#%d: PR state not recorded", i)
		}
		if (rec.Freed != nil) != want[i] {
			t.Errorf("#%d (prs %+v): freed %+v, want freed %v", i, *rec.PRs, rec.Freed, want[i])
		}
		if rec.Freed != nil && rec.Freed.Rule != dispatch.RuleAccept {
			t.Errorf("#%d freed by %s", i, rec.Freed.Rule)
		}
	}
	if e.get(251).PRs != nil {
		t.Error("a send-back row's branch was read")
	}
	if n := value(e.m.Claims.WithLabelValues(dispatch.RuleAccept, "freed")); n != 25 {
		t.Errorf("freed decisions = %v, want 25", n)
	}
	if n := value(e.m.SweepRuns.WithLabelValues("claim", "ok")); n != 1 {
		t.Errorf("sweep runs ok = %v, want 1", n)
	}

	// Nothing changed on GitHub: a second sweep writes nothing.
	v := e.get(10).Version
	if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
		t.Fatal(err)
	}
	if e.get(10).Version != v {
		t.Error("an unchanged read rewrote the row")
	}
}

func TestSweepLeavesUnreadBranchesAlone(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	for i := int64(1); i <= 3; i++ {
		e.row(i, "accept", nil)
		e.pr(i, "closed", false)
	}
	e.gh.GraphQLError("queen-2")

	if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
		t.Fatalf("a sweep with one unread branch must still succeed: %v", err)
	}
	for _, i := range []int64{1, 3} {
		if e.get(i).Freed == nil {
			t.Errorf("#%d: read and closed unmerged, not freed", i)
		}
	}
	if rec := e.get(2); rec.PRs != nil || rec.Freed != nil || rec.WouldFree != nil {
		t.Errorf("#2 errored in the answer but was decided: prs %+v freed %+v", rec.PRs, rec.Freed)
	}
	if n := value(e.m.SweepRuns.WithLabelValues("claim", "partial")); n != 1 {
		t.Errorf("sweep runs partial = %v, want 1", n)
	}

	// GitHub down: every branch unread, nothing decided, the sweep still ends.
	e.row(4, "accept", nil)
	e.pr(4, "closed", false)
	e.gh.Down(true)
	if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
		t.Fatalf("sweep with GitHub down: %v", err)
	}
	e.gh.Down(false)
	if e.get(4).PRs != nil {
		t.Error("#4 decided while GitHub was down")
	}
}

func TestSweepSkipsSuspendedInstallations(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	e.row(1, "accept", nil)
	e.pr(1, "closed", false)
	e.gh.Suspend(instID, true) // the sweep's sync learns it from GitHub
	if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
		t.Fatal(err)
	}
	if n := e.gh.Count(githubtest.RouteGraphQL); n != 0 {
		t.Fatalf("GraphQL requests for a suspended installation: %d", n)
	}
	if e.get(1).PRs != nil {
		t.Fatal("a suspended installation's row was decided")
	}
}

func TestSweepReleasesDeadSendBacks(t *testing.T) {
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "flag on: freed", false: "flag off: would_free stays"}[on]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, options{releaseDeadClaims: on})
			// The rows are written while the flag was off (would_free only);
			// the sweep decides again with the worker's flag.
			shadow := ledger.New(e.rdb, ledger.Options{})
			for issue, sendBacks := range map[int64]int{1: 1, 2: 2} {
				body := map[string]json.RawMessage{
					"started": json.RawMessage(`true`), "dispatched_at": json.RawMessage(`"2026-10-11T10:02:00Z"`),
					"finished_at": json.RawMessage(`"2026-10-11T12:20:00Z"`), "review_state": json.RawMessage(`"sendBack"`),
					"send_backs": json.RawMessage([]byte{byte('0' + sendBacks)}),
				}
				if _, err := shadow.Upsert(e.ctx, repo, issue, body, audit.API("test")); err != nil {
					t.Fatal(err)
				}
			}
			if e.get(1).WouldFree == nil {
				t.Fatal("setup: the under-ceiling send-back has no would_free")
			}
			if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
				t.Fatal(err)
			}
			under, at := e.get(1), e.get(2)
			if on && (under.Freed == nil || under.Freed.Rule != dispatch.RuleSendBack) {
				t.Fatalf("under the ceiling, flag on: freed %+v, want send_back_claim", under.Freed)
			}
			if !on && (under.Freed != nil || under.WouldFree == nil) {
				t.Fatalf("flag off: freed %+v would_free %+v", under.Freed, under.WouldFree)
			}
			if at.Freed != nil || at.WouldFree != nil {
				t.Fatalf("at the ceiling: freed %+v would_free %+v, want live", at.Freed, at.WouldFree)
			}
		})
	}
}
