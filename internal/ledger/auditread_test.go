package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
)

func TestParseAuditID(t *testing.T) {
	for s, want := range map[string]AuditID{"1796122594339-0": {1796122594339, 0}, "0-0": {}, "5-12": {5, 12}} {
		got, err := ParseAuditID(s)
		if err != nil || got != want || got.String() != s {
			t.Errorf("ParseAuditID(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1", "1-", "-1", "+1-0", "1-+0", "1-0-0", "a-0", " 1-0", "1-0 ", "99999999999999999999999-0"} {
		if _, err := ParseAuditID(s); err == nil {
			t.Errorf("ParseAuditID(%q) accepted", s)
		}
	}
	if !(AuditID{1, 5}).Before(AuditID{2, 0}) || !(AuditID{2, 0}).Before(AuditID{2, 1}) || (AuditID{2, 1}).Before(AuditID{2, 1}) {
		t.Error("Before does not order by milliseconds, then sequence")
	}
}

// The reads the watch stream is built on, on a single node and on a
// Cluster (where the stream is written after the row's script).
func TestAuditReadsAfterAnID(t *testing.T) {
	for name, rdb := range map[string]func(*testing.T) redis.UniversalClient{
		"node":    func(t *testing.T) redis.UniversalClient { return newFixture(t, Options{}).l.rdb },
		"cluster": func(t *testing.T) redis.UniversalClient { return startCluster(t) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixtureOn(rdb(t), Options{})
			if _, _, ok, err := f.l.AuditEnds(f.ctx); ok || err != nil {
				t.Fatalf("ends of no stream: ok %t, %v", ok, err)
			}
			for i := int64(1); i <= 5; i++ {
				f.upsert(t, "hive/t27", i, `{"started": true}`)
			}
			read, err := f.l.AuditAfter(f.ctx, AuditID{}, 100)
			all := read.Entries
			if err != nil || len(all) != 5 || read.Messages != 5 || read.Last.String() != all[4].ID {
				t.Fatalf("after 0-0: %+v, %v", read, err)
			}
			ids := make([]AuditID, len(all))
			for i, e := range all {
				if ids[i], err = ParseAuditID(e.ID); err != nil || e.Issue != int64(i+1) {
					t.Fatalf("entry %d: id %q issue %d", i, e.ID, e.Issue)
				}
			}
			oldest, newest, ok, err := f.l.AuditEnds(f.ctx)
			if !ok || err != nil || oldest != ids[0] || newest != ids[4] {
				t.Fatalf("ends %v %v %t %v, want %v %v", oldest, newest, ok, err, ids[0], ids[4])
			}
			read, err = f.l.AuditAfter(f.ctx, ids[1], 2)
			if some := read.Entries; err != nil || len(some) != 2 || some[0].ID != all[2].ID || some[1].ID != all[3].ID || read.Last != ids[3] {
				t.Fatalf("2 after the 2nd: %+v %v", read, err)
			}
			read, err = f.l.WaitAudit(f.ctx, ids[4], 10, 50*time.Millisecond)
			if err != nil || read.Messages != 0 || read.Last != ids[4] {
				t.Fatalf("wait past the newest: %+v %v, want none", read, err)
			}
			go func() {
				time.Sleep(100 * time.Millisecond)
				_, _ = f.l.Upsert(f.ctx, "hive/t27", 6, patch(t, `{"started": true}`), audit.API("test"))
			}()
			read, err = f.l.WaitAudit(f.ctx, ids[4], 10, 5*time.Second)
			if got := read.Entries; err != nil || len(got) != 1 || got[0].Issue != 6 || got[0].ID == "" {
				t.Fatalf("wait for the next: %+v %v", read, err)
			}
		})
	}
}

// A message of the audit stream that is no entry (a hand edit) is left out
// and named, and the read moves past it, so a reader after it goes on.
func TestAuditReadsPastAMessageThatIsNoEntry(t *testing.T) {
	f := newFixture(t, Options{})
	f.upsert(t, "hive/t27", 1, `{"started": true}`)
	bad, err := f.l.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.l.auditKey(), Values: map[string]any{"entry": "{not json"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	f.upsert(t, "hive/t27", 2, `{"started": true}`)
	for name, read := range map[string]func() (AuditRead, error){
		"after": func() (AuditRead, error) { return f.l.AuditAfter(f.ctx, AuditID{}, 10) },
		"wait":  func() (AuditRead, error) { return f.l.WaitAudit(f.ctx, AuditID{}, 10, time.Second) },
	} {
		r, err := read()
		if err != nil || r.Messages != 3 || len(r.Entries) != 2 || r.Entries[1].Issue != 2 ||
			len(r.Unreadable) != 1 || !strings.Contains(r.Unreadable[0].Error(), bad) || r.Last.String() != r.Entries[1].ID {
			t.Errorf("%s: %+v %v, want entries 1 and 2, the message %s named, and Last at entry 2", name, r, err, bad)
		}
	}
}

// A read after an id says when entries after it may be missing: the
// stream was trimmed past it (a concurrent XADD MAXLEN between two pages),
// or restored from an older copy that never held it. A held id, and the
// zero id of a stream that never dropped a message, are exact.
func TestAuditReadsSayWhenEntriesMayBeMissing(t *testing.T) {
	for name, rdb := range map[string]func(*testing.T) redis.UniversalClient{
		"node":    func(t *testing.T) redis.UniversalClient { return newFixture(t, Options{}).l.rdb },
		"cluster": func(t *testing.T) redis.UniversalClient { return startCluster(t) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixtureOn(rdb(t), Options{})
			reads := map[string]func(AuditID) (AuditRead, error){
				"after": func(id AuditID) (AuditRead, error) { return f.l.AuditAfter(f.ctx, id, 2) },
				"wait":  func(id AuditID) (AuditRead, error) { return f.l.WaitAudit(f.ctx, id, 2, 50*time.Millisecond) },
			}
			check := func(what string, id AuditID, gap bool) {
				t.Helper()
				for how, read := range reads {
					if r, err := read(id); err != nil || r.Gap != gap {
						t.Errorf("%s (%s after %v): gap %t, %v; want %t", what, how, id, r.Gap, err, gap)
					}
				}
			}
			check("no stream yet", AuditID{}, false)
			for i := int64(1); i <= 6; i++ {
				f.upsert(t, "hive/t27", i, `{"started": true}`)
			}
			page, err := f.l.AuditAfter(f.ctx, AuditID{}, 2)
			if err != nil || page.Gap || len(page.Entries) != 2 {
				t.Fatalf("first page: %+v %v", page, err)
			}
			check("a held id", page.Last, false)
			check("the zero id of an untrimmed stream", AuditID{}, false)
			if err := f.l.rdb.XTrimMaxLen(f.ctx, f.l.auditKey(), 2).Err(); err != nil {
				t.Fatal(err)
			}
			check("an id trimmed with entries after it", page.Last, true)
			check("the zero id of a trimmed stream", AuditID{}, true)
			_, newest, _, err := f.l.AuditEnds(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			check("the newest id", newest, false)
			// A restore from an older copy: the stream lost the newest
			// entry a watcher saw, then took new writes after it.
			f.upsert(t, "hive/t27", 7, `{"started": true}`)
			_, lost, _, err := f.l.AuditEnds(f.ctx)
			if err != nil || !newest.Before(lost) {
				t.Fatalf("newest after a write: %v %v", lost, err)
			}
			if err := f.l.rdb.XDel(f.ctx, f.l.auditKey(), lost.String()).Err(); err != nil {
				t.Fatal(err)
			}
			f.upsert(t, "hive/t27", 8, `{"started": true}`)
			check("an id the stream no longer holds (a restore)", lost, true)
		})
	}
}
