package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// opened is a guarded ledger over a Redis where Init has created one.
func opened(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, Options{FreeClosedPR: true})
	if _, created, err := f.l.Init(f.ctx, "test"); err != nil || !created {
		t.Fatalf("init: created %v, %v", created, err)
	}
	f.l.Guard()
	if _, err := f.l.Open(f.ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// dump is every key of the Redis with its type: what a refused start must
// leave alone.
func dump(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		d, _ := rdb.Dump(context.Background(), k).Result()
		fmt.Fprintf(&b, "%s=%x\n", k, d)
	}
	return b.String()
}

func unavailable(t *testing.T, err error, state string) {
	t.Helper()
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) || ue.State != state {
		t.Fatalf("err %v, want the ledger unavailable: %s", err, state)
	}
}

// A Redis without a ledger is an outage: every read and write of a guarded
// ledger refuses, naming what happened and the commands that recover.
func TestAMissingLedgerIsAnOutageNotAnEmptyAnswer(t *testing.T) {
	f := newFixture(t, Options{})
	f.l.Guard()
	if f.l.State() != StateStarting {
		t.Fatalf("state %q before Open, want starting", f.l.State())
	}
	_, err := f.l.Open(f.ctx)
	unavailable(t, err, StateMissing)
	for _, msg := range []string{"queenctl ledger restore", "queenctl ledger init"} {
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("error %q does not name %q", err, msg)
		}
	}
	_, err = f.l.Get(f.ctx, "hive/t27", 1)
	unavailable(t, err, StateMissing)
	_, _, err = f.l.List(f.ctx, "", "", 10)
	unavailable(t, err, StateMissing)
	_, err = f.l.Upsert(f.ctx, "hive/t27", 1, patch(t, accepted), audit.API("test"))
	unavailable(t, err, StateMissing)
	if keys, _ := f.srv.Client().Keys(f.ctx, "*").Result(); len(keys) != 0 {
		t.Fatalf("a refused write left keys: %v", keys)
	}

	// Created now (queenctl ledger init): the next check opens it.
	other := New(f.srv.Client(), Options{})
	if _, created, err := other.Init(f.ctx, "test"); err != nil || !created {
		t.Fatalf("init: %v %v", created, err)
	}
	f.l.check(f.ctx, quiet)
	if err := f.l.Err(f.ctx); err != nil {
		t.Fatalf("after init: %v", err)
	}
	f.upsert(t, "hive/t27", 1, accepted)
}

// A ledger lost while running (FLUSHALL) closes the gate at the next check;
// one replaced by another ledger stays refused even if it has rows, and a
// restore of the ledger it served opens it again.
func TestALedgerLostOrReplacedWhileRunningIsRefused(t *testing.T) {
	f := opened(t)
	f.upsert(t, "hive/t27", 1, accepted)
	var backup strings.Builder
	if _, err := f.l.Backup(f.ctx, &backup, "test"); err != nil {
		t.Fatal(err)
	}
	rdb := f.srv.Client()
	if err := rdb.FlushAll(f.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f.l.check(f.ctx, quiet)
	_, err := f.l.Get(f.ctx, "hive/t27", 1)
	unavailable(t, err, StateMissing)

	// Someone runs ledger init on the empty Redis: a new ledger, not ours.
	if _, _, err := New(rdb, Options{}).Init(f.ctx, "test"); err != nil {
		t.Fatal(err)
	}
	f.l.check(f.ctx, quiet)
	_, err = f.l.Upsert(f.ctx, "hive/t27", 2, patch(t, accepted), audit.API("test"))
	unavailable(t, err, StateReplaced)

	// The backup of the ledger it served, restored over it: open again,
	// with the row back.
	path := filepath.Join(t.TempDir(), "b.jsonl")
	if err := os.WriteFile(path, []byte(backup.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(rdb, Options{}).Restore(f.ctx, path, RestoreOptions{}); !errors.Is(err, ErrNotEmptyRedis) {
		t.Fatalf("restore over a ledger without --force: %v, want ErrNotEmptyRedis", err)
	}
	if _, err := New(rdb, Options{}).Restore(f.ctx, path, RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	f.l.check(f.ctx, quiet)
	if got := f.get(t, "hive/t27", 1); got.ReviewState == nil || *got.ReviewState != "accept" {
		t.Fatalf("restored row %+v", got.Row)
	}
}

// A write into a repository whose marker names another ledger is refused
// in the same atomic step, before the identity check would notice.
func TestAWriteIntoAnotherLedgersRepositoryIsRefused(t *testing.T) {
	f := opened(t)
	f.upsert(t, "hive/t27", 1, accepted)
	if err := f.srv.Client().Set(f.ctx, f.l.markerKey("hive/t27"), "another-ledger", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := f.l.Upsert(f.ctx, "hive/t27", 2, patch(t, accepted), audit.API("test"))
	unavailable(t, err, StateReplaced)
	if _, err := f.srv.Client().HGet(f.ctx, f.l.repoKey("hive/t27", "row:2"), "row").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the refused row was written: %v", err)
	}
}

// A ledger written by a newer release is refused at start with both
// versions named, and nothing is written; one that becomes newer while
// running closes the gate.
func TestANewerSchemaIsRefusedAndNothingWritten(t *testing.T) {
	f := newFixture(t, Options{})
	rdb := f.srv.Client()
	if _, _, err := f.l.Init(f.ctx, "test"); err != nil {
		t.Fatal(err)
	}
	rdb.Set(f.ctx, f.l.schemaKey(), SchemaVersion+1, 0)
	// A leftover mixed-case row: a refused start must not move it either.
	rdb.HSet(f.ctx, "queen:{Hive/T27}:row:1", "v", 1, "row", `{"repo":"Hive/T27","issue":1,"version":1}`)
	rdb.ZAdd(f.ctx, "queen:repos", redis.Z{Member: "Hive/T27"})
	before := dump(t, rdb)
	f.l.Guard()
	_, err := f.l.Open(f.ctx)
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("open: %v, want a SchemaError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, strconv.Itoa(SchemaVersion+1)) || !strings.Contains(msg, strconv.Itoa(SchemaVersion)) || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line naming schema %d and this release's %d", msg, SchemaVersion+1, SchemaVersion)
	}
	if err := f.l.OpenUntilDone(f.ctx, quiet); !errors.As(err, &se) {
		t.Errorf("OpenUntilDone: %v, want the SchemaError at once (the binary exits)", err)
	}
	if after := dump(t, rdb); after != before {
		t.Errorf("a refused start wrote:\nbefore %s\nafter %s", before, after)
	}
	unavailable(t, f.l.Err(f.ctx), StateSchemaNewer)

	// While running: the gate closes at the next check.
	g := opened(t)
	g.srv.Client().Set(g.ctx, g.l.schemaKey(), SchemaVersion+1, 0)
	g.l.check(g.ctx, quiet)
	unavailable(t, g.l.Err(g.ctx), StateSchemaNewer)
}

// An old binary run against a current ledger (a rollback) writes
// mixed-case keys; the next start moves them whatever the schema says.
func TestRollbackLeftoversMoveAtTheCurrentSchema(t *testing.T) {
	f := opened(t)
	rdb := f.srv.Client()
	f.upsert(t, "hive/t27", 1, accepted)
	// What 0.1.0 writes for Hive/T27#6001 (its key layout, its row).
	pre := "queen:{Hive/T27}:"
	rdb.HSet(f.ctx, pre+"row:6001", "v", 1, "row",
		`{"repo":"Hive/T27","issue":6001,"started":true,"dispatched_at":"2026-10-10T19:00:00Z","owned_paths":["lib/held.go"],"version":1}`)
	rdb.ZAdd(f.ctx, pre+"rows", redis.Z{Score: 6001, Member: "6001"})
	rdb.ZAdd(f.ctx, "queen:repos", redis.Z{Member: "Hive/T27"})

	rep, err := f.l.Open(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != SchemaVersion || rep.Moved != 1 {
		t.Fatalf("report %+v: want the leftover moved at schema %d", rep, SchemaVersion)
	}
	rec := f.get(t, "hive/t27", 6001)
	var held []string
	err = f.l.Holding(f.ctx, "hive/t27", t0, func(rs []*Record) error {
		for _, r := range rs {
			held = append(held, r.View(t0).HeldPaths...)
		}
		return nil
	})
	if err != nil || rec.Repo != "Hive/T27" || !reflect.DeepEqual(held, []string{"lib/held.go"}) {
		t.Fatalf("after the move: repo %q held %v (%v)", rec.Repo, held, err)
	}
	if keys, _ := rdb.Keys(f.ctx, pre+"*").Result(); len(keys) != 0 {
		t.Fatalf("leftover keys: %v", keys)
	}
}

// Between two rows of one dispatch, a person's decision beats a rule's
// whatever their ages, and of two of a kind the newer wins.
func TestNewerDecisionPrefersAPersonThenTheNewer(t *testing.T) {
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	freed := func(rule string, h int) *Record {
		return &Record{Row: dispatch.Row{Freed: &dispatch.FreeRecord{Rule: rule, At: at(h)}}}
	}
	kept := func(h int) *Record { return &Record{Pin: &dispatch.Pin{At: at(h), Reason: "r"}} }
	none := &Record{}
	for _, tc := range []struct {
		name string
		a, b *Record
		want bool
	}{
		{"a decision over none", freed(dispatch.RuleAccept, 1), none, true},
		{"none never over a decision", none, freed(dispatch.RuleAccept, 1), false},
		{"a person's free over a newer rule's", freed(dispatch.RuleManual, 1), freed(dispatch.RuleAccept, 5), true},
		{"a rule's never over an older person's", freed(dispatch.RuleAccept, 5), freed(dispatch.RuleManual, 1), false},
		{"a keep over a newer rule's free", kept(1), freed(dispatch.RuleSendBack, 5), true},
		{"the newer of two persons'", kept(3), freed(dispatch.RuleManual, 2), true},
		{"not the older of two persons'", freed(dispatch.RuleManual, 2), kept(3), false},
		{"a tie keeps the canonical", freed(dispatch.RuleManual, 2), freed(dispatch.RuleManual, 2), false},
	} {
		if got := newerDecision(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: newerDecision = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Init creates once; a second init is a no-op naming the ledger; a Redis
// holding rows whose identity is gone is refused, not adopted.
func TestInitCreatesOnceAndRefusesARemnant(t *testing.T) {
	f := newFixture(t, Options{})
	id, created, err := f.l.Init(f.ctx, "test")
	if err != nil || !created || id.ID == "" {
		t.Fatalf("init: %+v %v %v", id, created, err)
	}
	again, created, err := f.l.Init(f.ctx, "test")
	if err != nil || created || again.ID != id.ID {
		t.Fatalf("second init: %+v %v %v, want the same ledger, not created", again, created, err)
	}
	f.l.Guard()
	if _, err := f.l.Open(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.upsert(t, "hive/t27", 1, accepted)
	// The identity alone is lost (a partial eviction): rows with markers
	// remain. Neither init nor open adopts them.
	f.srv.Client().Del(f.ctx, f.l.identityKey())
	if _, _, err := New(f.srv.Client(), Options{}).Init(f.ctx, "test"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("init over a remnant: %v, want ErrNotEmpty", err)
	}
	fresh := New(f.srv.Client(), Options{})
	fresh.Guard()
	_, err = fresh.Open(f.ctx)
	unavailable(t, err, StateMissing)
}

// A backup restored into an empty Redis answers every row, history and
// audit entry as before; a cut-short file is refused and writes nothing.
func TestBackupRestoreRoundTrip(t *testing.T) {
	f := opened(t)
	f.upsert(t, "hive/t27", 1, `{"started": true, "dispatched_at": "2026-10-10T19:00:00Z", "owned_paths": ["src/a.go"]}`)
	f.upsert(t, "hive/t27", 2, accepted)
	if _, err := f.l.RecordPRs(f.ctx, "hive/t27", 2, prs(0, 0, 1), audit.Webhook("d-1")); err != nil {
		t.Fatal(err)
	}
	f.upsert(t, "hive/t27", 3, accepted)
	if _, err := f.l.Keep(f.ctx, "hive/t27", 3, audit.Manual("alice", "still needed"), 0); err != nil {
		t.Fatal(err)
	}
	f.upsert(t, "Queen/Other", 4, accepted)
	if _, err := f.l.RecordExport(f.ctx, "queen/other", 4, dispatch.ExportState{State: "refused", Refusal: "base moved", Attempts: 1}, f.get(t, "queen/other", 4).Version, audit.Export("t-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Delete(f.ctx, "hive/t27", 1, audit.API("test")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := f.l.Backup(f.ctx, out, "test")
	if err != nil || out.Close() != nil {
		t.Fatal(err)
	}
	if rep.Rows != 3 || rep.Entries < 6 {
		t.Fatalf("backup report %+v: want 3 rows and every audit entry", rep)
	}

	g := newFixture(t, Options{FreeClosedPR: true})
	if _, err := g.l.Restore(g.ctx, path, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	g.l.Guard()
	if _, err := g.l.Open(g.ctx); err != nil {
		t.Fatal(err)
	}
	if g.l.ID() != f.l.ID() {
		t.Errorf("restored ledger %q, want the backed-up %q", g.l.ID(), f.l.ID())
	}
	for _, r := range []struct {
		repo  string
		issue int64
	}{{"hive/t27", 2}, {"hive/t27", 3}, {"queen/other", 4}} {
		a, b := f.get(t, r.repo, r.issue), g.get(t, r.repo, r.issue)
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a.View(t0), b.View(t0)) {
			t.Errorf("%s#%d restored as %+v, was %+v", r.repo, r.issue, b, a)
		}
		if ha, hb := f.history(t, r.repo, r.issue), g.history(t, r.repo, r.issue); !reflect.DeepEqual(ha, hb) {
			t.Errorf("%s#%d history restored as %+v, was %+v", r.repo, r.issue, hb, ha)
		}
	}
	if _, err := g.l.Get(g.ctx, "hive/t27", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted row after restore: %v, want not found", err)
	}
	aa, err := f.l.Audit(f.ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ab, err := g.l.Audit(g.ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(aa, ab) {
		t.Errorf("audit restored with %d entries, was %d (or differs)", len(ab), len(aa))
	}
	// Versions continue above the backed-up ones.
	if res := g.upsert(t, "hive/t27", 1, accepted); res.Row.Version <= 1 {
		t.Errorf("a row created after the restore at version %d: below the deleted one", res.Row.Version)
	}

	// A file cut short (no end line) is refused; nothing is written.
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	short := filepath.Join(t.TempDir(), "short.jsonl")
	os.WriteFile(short, []byte(strings.Join(lines[:len(lines)-1], "")), 0o600)
	h := newFixture(t, Options{})
	if _, err := h.l.Restore(h.ctx, short, RestoreOptions{}); err == nil {
		t.Fatal("a cut-short backup was restored")
	}
	if keys, _ := h.srv.Client().Keys(h.ctx, "*").Result(); len(keys) != 0 {
		t.Fatalf("a refused restore wrote %v", keys)
	}
}
