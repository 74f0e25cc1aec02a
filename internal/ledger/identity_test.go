package ledger

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
)

// A row the Queen wrote as Queen/T27#42 is the row GitHub's webhook names
// queen/t27#42: it is found, decided and freed, and keeps the Queen's
// spelling for display. Before, it was never freed.
func TestRepositoryNamesAreCaseInsensitive(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, "Queen/T27", 42, accepted)
	res, err := f.l.RecordPRs(f.ctx, "queen/t27", 42, prs(0, 0, 1), audit.Webhook("delivery-1"))
	if err != nil || res.Outcome != DecisionFree {
		t.Fatalf("webhook spelling: %+v %v; want the row freed", res.Outcome, err)
	}
	rec := f.get(t, "QUEEN/t27", 42)
	if rec.Freed == nil || rec.Repo != "Queen/T27" {
		t.Fatalf("row read by another spelling: freed %+v repo %q", rec.Freed, rec.Repo)
	}
	// One issue stays one row whatever spelling writes it.
	if res := f.upsert(t, "queen/T27", 42, `{"send_backs": 1}`); res.Outcome != OutcomeUpdated || res.Row.Version != 3 {
		t.Fatalf("second spelling: %q at version %d; want the same row updated", res.Outcome, res.Row.Version)
	}
	rows, _, err := f.l.List(f.ctx, "QUEEN/T27", "", 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("list by another spelling: %d rows %v", len(rows), err)
	}
	acc, err := all(f.l, f.ctx, "queen/t27", IndexAccepted)
	if err != nil || len(acc) != 1 {
		t.Fatalf("accepted by another spelling: %d rows %v", len(acc), err)
	}
	if repos, _ := f.l.Repos(f.ctx); fmt.Sprint(repos) != "[queen/t27]" {
		t.Fatalf("repos %v; want the canonical key only", repos)
	}
}

// A ledger written before canonical keys: one row under Queen/T27, one issue
// under both spellings. Migrate moves every row to the canonical key, keeps
// the later dispatch of a doubled issue, and versions stay above the old ones.
func TestMigrateMovesRowsToTheCanonicalKey(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	rdb := f.srv.Client()
	old := func(spelling string, issue int64, version int, dispatched string) {
		t.Helper()
		row := fmt.Sprintf(`{"repo":%q,"issue":%d,"started":true,"dispatched_at":%q,"finished_at":"2026-10-10T19:00:00Z","review_state":"accept","version":%d}`,
			spelling, issue, dispatched, version)
		n := strconv.FormatInt(issue, 10)
		pre := "queen:{" + spelling + "}:"
		if err := rdb.HSet(f.ctx, pre+"row:"+n, "v", version, "row", row, "w", "x").Err(); err != nil {
			t.Fatal(err)
		}
		rdb.ZAdd(f.ctx, pre+"rows", redis.Z{Score: float64(issue), Member: n})
		rdb.ZAdd(f.ctx, pre+"accepted", redis.Z{Score: float64(issue), Member: n})
		rdb.LPush(f.ctx, pre+"history:"+n, fmt.Sprintf(`{"repo":%q,"issue":%d,"version":%d,"action":"upsert"}`, spelling, issue, version))
		rdb.ZAdd(f.ctx, "queen:repos", redis.Z{Member: spelling})
	}
	old("Queen/T27", 1, 7, "2026-10-10T17:00:00Z")
	old("Queen/T27", 2, 3, "2026-10-10T17:00:00Z")
	old("queen/t27", 2, 9, "2026-10-10T18:00:00Z") // the later dispatch of #2
	old("Queen/T27", 3, 4, "2026-10-10T17:00:00Z")
	rdb.HDel(f.ctx, "queen:{Queen/T27}:row:3", "row") // a deleted row: a tombstone at version 4
	rdb.ZRem(f.ctx, "queen:{Queen/T27}:rows", "3")
	rdb.ZRem(f.ctx, "queen:{Queen/T27}:accepted", "3")

	rep, err := f.l.Migrate(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 0 || rep.Moved != 1 || len(rep.Merged) != 1 ||
		!strings.HasPrefix(rep.Merged[0], "queen/t27#2: ") || !strings.Contains(rep.Merged[0], "kept the canonical row, a later dispatch") {
		t.Fatalf("report %+v; want row 1 moved and #2 kept from its later dispatch", rep)
	}
	r1 := f.get(t, "queen/t27", 1)
	if r1.Repo != "Queen/T27" || r1.Version <= 7 {
		t.Fatalf("moved row: repo %q version %d; want the Queen's spelling above version 7", r1.Repo, r1.Version)
	}
	if h := f.history(t, "queen/t27", 1); len(h) != 2 || h[0].Action != ActionMigrate {
		t.Fatalf("moved row's history %+v; want the migration then the old entry", h)
	}
	r2 := f.get(t, "Queen/T27", 2)
	if r2.DispatchedAt.Hour() != 18 || r2.Version < 9 {
		t.Fatalf("doubled issue kept dispatch %v version %d; want the later one", r2.DispatchedAt, r2.Version)
	}
	if keys, _ := rdb.Keys(f.ctx, "queen:{Queen/T27}:*").Result(); len(keys) != 0 {
		t.Fatalf("old keys left: %v", keys)
	}
	if repos, _ := f.l.Repos(f.ctx); fmt.Sprint(repos) != "[queen/t27]" {
		t.Fatalf("repos %v", repos)
	}
	// Row 3 was deleted at version 4 under the old key: a new #3 starts above.
	if res := f.upsert(t, "queen/t27", 3, accepted); res.Row.Version <= 4 {
		t.Fatalf("row created after the migration at version %d; want above the deleted row's 4", res.Row.Version)
	}
	// Freeing works through the webhook's spelling, and the indexes were rebuilt.
	if res, err := f.l.RecordPRs(f.ctx, "queen/t27", 1, prs(0, 0, 1), audit.Webhook("d")); err != nil || res.Outcome != DecisionFree {
		t.Fatalf("free after migration: %+v %v", res.Outcome, err)
	}
	if rep, err := f.l.Migrate(f.ctx); err != nil || rep.From != SchemaVersion || rep.Moved != 0 {
		t.Fatalf("second migrate: %+v %v; want nothing to do", rep, err)
	}
}

// A deleted row's hash and history expire; a row created long after still
// starts above every version the deleted one had.
func TestDeletedRowsExpireAndVersionsStillContinue(t *testing.T) {
	f := newFixture(t, Options{})
	f.upsert(t, repo, 8, accepted)
	f.upsert(t, repo, 8, `{"send_backs": 1}`)
	f.upsert(t, repo, 8, `{"send_backs": 2}`)
	if _, err := f.l.Delete(f.ctx, repo, 8, audit.Source{Kind: audit.KindAPI, Writer: "api", Reason: "gone"}); err != nil {
		t.Fatal(err)
	}
	k := f.l.keysOf(repo, 8)
	rdb := f.srv.Client()
	for _, key := range []string{k.row, k.history} {
		ttl, err := rdb.TTL(f.ctx, key).Result()
		if err != nil || ttl <= 0 || ttl > DeletedRetention {
			t.Fatalf("%s TTL %v %v; want at most %v", key, ttl, err, DeletedRetention)
		}
	}
	rdb.Del(f.ctx, k.row, k.history) // the retention passed
	res := f.upsert(t, repo, 8, accepted)
	if res.Row.Version <= 4 {
		t.Fatalf("row created again at version %d; want above the deleted row's 4", res.Row.Version)
	}
	if ttl, _ := rdb.TTL(f.ctx, k.row).Result(); ttl != -1 {
		t.Fatalf("a live row's hash expires (TTL %v)", ttl)
	}
}

// Sweep sends a read at 2 (it will see closed); a webhook's read at 3 finds
// the PR open as recorded (written at 1) and writes no version; the sweep's
// older read then lands. Before, it freed the claim the newer read kept.
func TestAStaleReadOfAnUnchangedStateNeverLands(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, repo, 12, accepted)
	at := func(m int) *time.Time { x := t0.Add(time.Duration(m) * time.Minute); return &x }
	read := func(p dispatchPRs, m int) Result {
		t.Helper()
		s := prs(p.open, 0, p.closed)
		s.ReadAt = at(m)
		res, err := f.l.RecordPRs(f.ctx, repo, 12, s, audit.Webhook("d"))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	read(dispatchPRs{open: 1}, 1)
	v := f.get(t, repo, 12).Version
	if res := read(dispatchPRs{open: 1}, 3); res.Wrote() || f.get(t, repo, 12).Version != v {
		t.Fatalf("unchanged read wrote version %d", f.get(t, repo, 12).Version)
	}
	if res := read(dispatchPRs{closed: 1}, 2); res.Outcome != OutcomeStaleRead || f.get(t, repo, 12).Freed != nil {
		t.Fatalf("older read after an unchanged newer one: %q; want a stale read, nothing freed", res.Outcome)
	}
}

type dispatchPRs struct{ open, closed uint32 }

// held-paths and admission read only the rows that can matter.
func TestHoldingAndReviewIndexes(t *testing.T) {
	f := newFixture(t, Options{ReleaseDeadClaims: true})
	f.clock.Set(t0)
	f.upsert(t, repo, 1, `{"started": true, "dispatched_at": "2026-10-10T19:00:00Z"}`)                                                                  // working
	f.upsert(t, repo, 2, `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:50:00Z"}`)                           // awaiting, in the review queue
	f.upsert(t, repo, 3, `{"started": true, "dispatched_at": "2026-10-10T10:00:00Z", "finished_at": "2026-10-10T11:00:00Z"}`)                           // awaiting long ago
	f.upsert(t, repo, 4, `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:50:00Z", "review_state": "accept"}`) // done
	f.upsert(t, repo, 5, sentBack)                                                                                                                      // freed by send_back_claim
	var held []int64
	if err := f.l.Holding(f.ctx, repo, t0, func(rows []*Record) error {
		for _, r := range rows {
			held = append(held, r.Issue)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(held) != "[1 2]" {
		t.Fatalf("holding %v; want the working row and the recent one", held)
	}
	if n, err := f.l.ReviewQueueLen(f.ctx, repo); err != nil || n != 2 {
		t.Fatalf("review queue %d %v; want rows 2 and 3", n, err)
	}
}

// A damaged version is an error, never a row with version 0.
func TestDamagedVersionIsAnError(t *testing.T) {
	f := newFixture(t, Options{})
	f.upsert(t, repo, 1, accepted)
	f.srv.Client().HSet(f.ctx, f.l.keysOf(repo, 1).row, "v", "x1")
	if _, err := all(f.l, f.ctx, repo, IndexAccepted); err == nil {
		t.Fatal("a page with a damaged version read as fine")
	}
	if _, _, err := f.l.List(f.ctx, repo, "", 10); err == nil {
		t.Fatal("a list with a damaged version read as fine")
	}
}
