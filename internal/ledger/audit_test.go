package ledger

import (
	"strconv"
	"testing"
	"time"
)

func issues(r AuditRange) []string {
	var out []string
	for _, e := range r.Entries {
		out = append(out, e.Repo+"#"+strconv.FormatInt(e.Issue, 10))
	}
	return out
}

func TestAuditSinceFiltersNewestLast(t *testing.T) {
	f := newFixture(t, Options{})
	f.upsert(t, "hive/a", 1, accepted)
	f.upsert(t, "hive/a", 2, accepted)
	f.upsert(t, "hive/b", 1, accepted)
	read := func(flt AuditFilter) AuditRange {
		t.Helper()
		r, err := f.l.AuditSince(f.ctx, flt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		f    AuditFilter
		want string
		more bool
	}{
		{AuditFilter{}, "[hive/a#1 hive/a#2 hive/b#1]", false},
		{AuditFilter{Repo: "HIVE/A"}, "[hive/a#1 hive/a#2]", false},
		{AuditFilter{Issue: 1}, "[hive/a#1 hive/b#1]", false},
		{AuditFilter{Repo: "hive/b", Issue: 1}, "[hive/b#1]", false},
		{AuditFilter{Limit: 2}, "[hive/a#2 hive/b#1]", true},
		{AuditFilter{Repo: "hive/c"}, "[]", false},
	} {
		r := read(c.f)
		if got := issues(r); fmtList(got) != c.want || r.More != c.more {
			t.Errorf("%+v: %v more=%v, want %s more=%v", c.f, got, r.More, c.want, c.more)
		}
	}

	// Since is a start on the stream's clock: wait for it to pass the last
	// entry's millisecond, then only what follows counts.
	last := read(AuditFilter{}).Entries[2].ID
	ms, _ := strconv.ParseInt(last[:len(last)-2], 10, 64)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().UnixMilli() <= ms+1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	since := time.Now()
	f.upsert(t, "hive/a", 3, accepted)
	if got := issues(read(AuditFilter{Since: since})); fmtList(got) != "[hive/a#3]" {
		t.Errorf("since the last write: %v, want [hive/a#3]", got)
	}
}

// A rare match is found across pages of the stream.
func TestAuditSinceReadsPastOnePage(t *testing.T) {
	f := newFixture(t, Options{})
	f.upsert(t, "hive/a", 7, accepted)
	for i := int64(100); i < 100+auditPage+50; i++ {
		f.upsert(t, "hive/a", i, accepted)
	}
	r, err := f.l.AuditSince(f.ctx, AuditFilter{Issue: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got := issues(r); fmtList(got) != "[hive/a#7]" || r.More {
		t.Fatalf("%v more=%v, want the one entry of #7 from the first page's far side", got, r.More)
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
