package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/redistest"
)

// A dispatch time set on a row that had none, or moved by a minute, is a
// new dispatch: what was recorded for the earlier attempt is dropped.
func TestTransitionAnyNewDispatchTimeStartsFresh(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	const undated = `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`
	for _, c := range []struct {
		name, first, next string
	}{
		{"set on a row with none", undated, `{"dispatched_at": "2026-10-10T17:00:00Z"}`},
		{"moved by a minute", accepted, `{"dispatched_at": "2026-10-10T17:01:00Z"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			issue := int64(30 + len(c.name))
			f.upsert(t, repo, issue, c.first)
			if res, err := f.l.RecordPRs(f.ctx, repo, issue, prs(0, 0, 1), audit.Webhook("d")); err != nil || res.Outcome != DecisionFree {
				t.Fatalf("closed PR: %+v %v", res.Outcome, err)
			}
			f.upsert(t, repo, issue, c.next)
			if rec := f.get(t, repo, issue); rec.PRs != nil || rec.Freed != nil {
				t.Fatalf("after a new dispatch time: prs %+v freed %+v; want both dropped", rec.PRs, rec.Freed)
			}
		})
	}
}

// accept_claim is decided on a read of the branch's PRs, never on the
// Queen's write: a row accepted after its PR was read closed is freed by
// the next read, not by the upsert that accepted it.
func TestTransitionAcceptClaimWaitsForAPRRead(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, repo, 40, `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "review_state": "wait"}`)
	if res, err := f.l.RecordPRs(f.ctx, repo, 40, prs(0, 0, 1), audit.Webhook("d1")); err != nil || res.Row.Freed != nil {
		t.Fatalf("closed PR on a waiting row: %+v %v", res, err)
	}
	res := f.upsert(t, repo, 40, `{"review_state": "accept"}`)
	if res.Row.Freed != nil || res.Row.WouldFree != nil || res.Outcome == DecisionFree {
		t.Fatalf("the accepting upsert decided accept_claim: %q freed %+v", res.Outcome, res.Row.Freed)
	}
	if res, err := f.l.Evaluate(f.ctx, repo, 40, audit.Sweep("")); err != nil || res.Row.Freed != nil {
		t.Fatalf("evaluate decided accept_claim: %+v %v", res.Row.Freed, err)
	}
	r2 := prs(0, 0, 1)
	r2.Numbers = []int{7}
	res2, err := f.l.RecordPRs(f.ctx, repo, 40, r2, audit.Webhook("d2"))
	if err != nil || res2.Outcome != DecisionFree || res2.Row.Freed.Delivery != "d2" {
		t.Fatalf("the next read: %q %+v %v; want freed from d2", res2.Outcome, res2.Row.Freed, err)
	}
}

// send_back_claim is decided on the Queen's write and on the sweep's
// evaluate, not on a read of PRs: with its flag turned on at a restart, the
// sweep frees the row (dropping the would_free) and names the counts.
func TestTransitionSendBackClaimIsNotAPRReadsDecision(t *testing.T) {
	f := newFixture(t, Options{})
	if res := f.upsert(t, repo, 41, sentBack); res.Outcome != DecisionWouldFree {
		t.Fatalf("flag off: %q", res.Outcome)
	}
	on := newFixtureOn(f.srv.Client(), Options{ReleaseDeadClaims: true})
	res, err := on.l.RecordPRs(f.ctx, repo, 41, prs(1, 0, 0), audit.Webhook("d"))
	if err != nil || res.Row.Freed != nil || res.Outcome == DecisionFree {
		t.Fatalf("a PR read freed a send-back: %q %+v %v", res.Outcome, res.Row.Freed, err)
	}
	res, err = on.l.Evaluate(f.ctx, repo, 41, audit.Sweep("slot"))
	if err != nil || res.Outcome != DecisionFree || res.Row.Freed == nil || res.Row.Freed.Rule != dispatch.RuleSendBack {
		t.Fatalf("evaluate with the flag on: %q %+v %v", res.Outcome, res.Row.Freed, err)
	}
	if res.Row.WouldFree != nil || res.Row.Freed.Evidence != "send_backs 1 < ceiling 2" {
		t.Fatalf("the free: would_free %+v evidence %q", res.Row.WouldFree, res.Row.Freed.Evidence)
	}
}

// A merged PR, like an open one, unfrees accept_claim's free; a freed row
// read closed again keeps its first free (time, evidence, delivery).
func TestTransitionMergedWorkUnfreesAndAFreeIsDecidedOnce(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, repo, 42, accepted)
	first, err := f.l.RecordPRs(f.ctx, repo, 42, prs(0, 0, 1), audit.Webhook("d1"))
	if err != nil || first.Outcome != DecisionFree {
		t.Fatal(first.Outcome, err)
	}
	f.clock.Add(time.Minute)
	again, err := f.l.RecordPRs(f.ctx, repo, 42, prs(0, 0, 2), audit.Webhook("d2"))
	if err != nil || again.Outcome == DecisionFree || again.Row.Freed == nil || *again.Row.Freed != *first.Row.Freed {
		t.Fatalf("a second closed read: %q freed %+v; want the first free %+v kept", again.Outcome, again.Row.Freed, first.Row.Freed)
	}
	res, err := f.l.RecordPRs(f.ctx, repo, 42, prs(0, 1, 2), audit.Webhook("d3"))
	if err != nil || res.Outcome != DecisionUnfree || res.Row.Freed != nil {
		t.Fatalf("merged PR: %q freed %+v %v; want unfree", res.Outcome, res.Row.Freed, err)
	}
}

// A read that changes the state records its own read_at, so a read sent
// before it that lands later is stale; whichever count changed.
func TestTransitionAChangedReadRecordsItsTime(t *testing.T) {
	at := func(m int) *time.Time { x := t0.Add(time.Duration(m) * time.Minute); return &x }
	for _, c := range []struct {
		name        string
		first, next dispatch.PRState
	}{
		{"open", prs(1, 0, 1), prs(2, 0, 1)},
		{"merged", prs(0, 1, 1), prs(0, 2, 1)},
		{"numbers", dispatch.PRState{Read: true, Open: 1, Numbers: []int{3}}, dispatch.PRState{Read: true, Open: 1, Numbers: []int{4}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Options{FreeClosedPR: true})
			f.upsert(t, repo, 43, accepted)
			c.first.ReadAt, c.next.ReadAt = at(1), at(3)
			for _, p := range []dispatch.PRState{c.first, c.next} {
				if _, err := f.l.RecordPRs(f.ctx, repo, 43, p, audit.Webhook("d")); err != nil {
					t.Fatal(err)
				}
			}
			rec := f.get(t, repo, 43)
			if rec.PRs.ReadAt == nil || !rec.PRs.ReadAt.Equal(*at(3)) || fmt.Sprint(rec.PRs.Numbers) != fmt.Sprint(c.next.Numbers) {
				t.Fatalf("prs %+v; want the read at 3 recorded", rec.PRs)
			}
		})
	}
}

// A row moved by Migrate carries its PR read but not the ledger's mark of
// the newest read seen: the row's own read_at still refuses an older read.
func TestTransitionAMigratedRowRefusesAnOlderRead(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	rdb := f.srv.Client()
	row := `{"repo":"Hive/T27","issue":44,"started":true,"dispatched_at":"2026-10-10T17:00:00Z","finished_at":"2026-10-10T19:00:00Z","review_state":"accept",` +
		`"prs":{"read":true,"open":1,"merged":0,"closed_unmerged":0,"read_at":"2026-10-10T20:03:00Z"},"version":3}`
	if err := rdb.HSet(f.ctx, "queen:{Hive/T27}:row:44", "v", 3, "row", row, "w", "x").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.ZAdd(f.ctx, "queen:{Hive/T27}:rows", redis.Z{Score: 44, Member: "44"})
	rdb.ZAdd(f.ctx, "queen:repos", redis.Z{Member: "Hive/T27"})
	if rep, err := f.l.Migrate(f.ctx); err != nil || rep.Moved != 1 {
		t.Fatalf("migrate: %+v %v", rep, err)
	}
	older := prs(0, 0, 1)
	at := t0.Add(2 * time.Minute)
	older.ReadAt = &at
	res, err := f.l.RecordPRs(f.ctx, repo, 44, older, audit.Sweep(""))
	if err != nil || res.Outcome != OutcomeStaleRead || f.get(t, repo, 44).Freed != nil {
		t.Fatalf("older read after the migration: %q %v; want a stale read, nothing freed", res.Outcome, err)
	}
}

// A person's free clears their keep; a free or keep decided on a version
// the row moved past is refused, and so is an export outcome with no version.
func TestTransitionPersonsWritesCheckTheirVersion(t *testing.T) {
	f := newFixture(t, Options{})
	v1 := f.upsert(t, repo, 45, accepted).Row.Version
	kept, err := f.l.Keep(f.ctx, repo, 45, audit.Manual("alice", "keep"), v1)
	if err != nil {
		t.Fatal(err)
	}
	freed, err := f.l.Free(f.ctx, repo, 45, audit.Manual("bob", "gone"), kept.Row.Version)
	if err != nil || freed.Row.Pin != nil || freed.Row.Freed == nil {
		t.Fatalf("free of a kept row: pin %+v freed %+v %v; want the keep dropped", freed.Row.Pin, freed.Row.Freed, err)
	}
	if _, err := f.l.Keep(f.ctx, repo, 45, audit.Manual("carol", "stale"), kept.Row.Version); !errors.Is(err, ErrConflict) {
		t.Fatalf("keep on a stale version: %v; want ErrConflict", err)
	}
	f.upsert(t, repo, 46, accepted)
	moved := f.upsert(t, repo, 46, `{"send_backs": 1}`).Row.Version
	if _, err := f.l.Free(f.ctx, repo, 46, audit.Manual("bob", "stale"), moved-1); !errors.Is(err, ErrConflict) {
		t.Fatalf("free on a stale version: %v; want ErrConflict", err)
	}
	if _, err := f.l.RecordExport(f.ctx, repo, 46, dispatch.ExportState{State: "pushed"}, 0, audit.Export("t")); err == nil {
		t.Fatal("an export outcome with version 0 was recorded")
	}
	if rec := f.get(t, repo, 46); rec.Freed != nil || rec.Export != nil || rec.Version != moved {
		t.Fatalf("refused writes changed the row: %+v", rec)
	}
}

// RecordPRsOn writes on the row as a re-evaluation read it before its
// GitHub read, without reading it again: when nothing moved it decides as
// RecordPRs does, one row fetch fewer, and leaves the caller's copy as it
// was.
func TestRecordPRsOnDecidesAsRecordPRsWithoutASecondRead(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	fetches := redistest.CountFetches(rdb)
	f := newFixtureOn(rdb, Options{FreeClosedPR: true})
	f.upsert(t, repo, 50, accepted)
	f.upsert(t, repo, 51, accepted)

	fetches.Reset()
	res, err := f.l.RecordPRs(f.ctx, repo, 50, prs(0, 0, 1), audit.Webhook("d50"))
	if err != nil || res.Outcome != DecisionFree || res.Row.Freed.Delivery != "d50" {
		t.Fatalf("RecordPRs: %q %+v %v", res.Outcome, res.Row.Freed, err)
	}
	plain := fetches.Rows()

	seen := f.get(t, repo, 51)
	before, _ := json.Marshal(seen)
	fetches.Reset()
	res, err = f.l.RecordPRsOn(f.ctx, repo, 51, seen, prs(0, 0, 1), audit.Webhook("d51"))
	if err != nil || res.Outcome != DecisionFree || res.Row.Freed.Delivery != "d51" || res.Row.Version != seen.Version+1 {
		t.Fatalf("RecordPRsOn: %q %+v version %d %v; want freed from d51 at version %d", res.Outcome, res.Row.Freed, res.Row.Version, err, seen.Version+1)
	}
	if on := fetches.Rows(); plain != 1 || on != 0 {
		t.Fatalf("rows fetched: RecordPRs %d, RecordPRsOn %d; want 1 and 0", plain, on)
	}
	if after, _ := json.Marshal(seen); string(after) != string(before) {
		t.Fatalf("the caller's row changed:\n%s\n%s", before, after)
	}
	if got := f.get(t, repo, 51); got.Freed == nil || got.Freed.Delivery != "d51" {
		t.Fatalf("stored: %+v", got.Freed)
	}
}

// A row that moved after the caller read it is read again and decided as it
// is now: a new dispatch is not freed by the read of the old one's PRs, a
// newer read is not undone by an older one, and neither counts as a
// conflict of the ledger's.
func TestRecordPRsOnAMovedRowDecidesOnTheRowAsItIsNow(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	later := t0.Add(time.Minute)
	for _, c := range []struct {
		name   string
		issue  int64
		moved  func(issue int64) error
		reread string
	}{
		{"a new dispatch", 60, func(issue int64) error {
			_, err := f.l.Upsert(f.ctx, repo, issue, patch(t, `{"dispatched_at": "2026-10-10T19:59:00Z", "finished_at": null, "review_state": null}`), audit.API("api"))
			return err
		}, ""},
		{"a newer read found it open", 61, func(issue int64) error {
			p := prs(1, 0, 0)
			p.ReadAt = &later
			_, err := f.l.RecordPRs(f.ctx, repo, issue, p, audit.Webhook("newer"))
			return err
		}, OutcomeStaleRead},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.upsert(t, repo, c.issue, accepted)
			seen := f.get(t, repo, c.issue)
			if err := c.moved(c.issue); err != nil {
				t.Fatal(err)
			}
			conflicts := f.l.Conflicts()
			p := prs(0, 0, 1)
			p.ReadAt = &t0
			res, err := f.l.RecordPRsOn(f.ctx, repo, c.issue, seen, p, audit.Webhook("old"))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.get(t, repo, c.issue); got.Freed != nil || res.Outcome == DecisionFree {
				t.Fatalf("%q, freed %+v: a read decided on the row as it was", res.Outcome, got.Freed)
			}
			if c.reread != "" && res.Outcome != c.reread {
				t.Fatalf("outcome %q, want %q", res.Outcome, c.reread)
			}
			if f.l.Conflicts() != conflicts {
				t.Fatalf("conflicts %d -> %d: a caller's stale copy counted as a conflict", conflicts, f.l.Conflicts())
			}
		})
	}
}
