package ledger

import (
	"fmt"
	"testing"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/redistest"
)

// Holding reads its index a page at a time (never every row, nor every
// issue number, in one round trip), and a row leaving the index between two
// pages makes it skip no other row.
func TestHoldingPagesThroughItsIndex(t *testing.T) {
	f := newFixture(t, Options{})
	want := map[int64]bool{}
	for i := int64(1); i <= 250; i++ { // working: all of score 0
		f.upsert(t, repo, i, `{"started": true, "dispatched_at": "2026-10-10T19:00:00Z", "owned_paths": ["src/a.go"]}`)
		want[i] = true
	}
	for i := int64(1001); i <= 1150; i++ { // awaiting review, all finished at one time
		f.upsert(t, repo, i, `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:50:00Z"}`)
		want[i] = true
	}
	for i := int64(2001); i <= 2050; i++ { // finished long ago: past every hold
		f.upsert(t, repo, i, `{"started": true, "dispatched_at": "2026-10-10T10:00:00Z", "finished_at": "2026-10-10T11:00:00Z"}`)
	}

	fetches := redistest.CountFetches(f.l.rdb)
	got := map[int64]int{}
	pages := 0
	err := f.l.Holding(f.ctx, repo, t0, func(rows []*Record) error {
		pages++
		if len(rows) > DefaultPage {
			t.Fatalf("a page of %d rows; want at most %d", len(rows), DefaultPage)
		}
		for _, r := range rows {
			got[r.Issue]++
		}
		// Rows already read leave the index (deleted) before the next page:
		// one inside the page and the last one, where the next page starts.
		for _, r := range []*Record{rows[0], rows[len(rows)-1]} {
			if _, err := f.l.Delete(f.ctx, repo, r.Issue, audit.API("test")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for issue := range want {
		if got[issue] != 1 {
			t.Errorf("row #%d read %d times; want once", issue, got[issue])
		}
	}
	for issue, n := range got {
		if !want[issue] {
			t.Errorf("row #%d (%d times) does not hold", issue, n)
		}
	}
	if pages != 5 { // 250 = 100+100+50, 150 = 100+50
		t.Errorf("%d pages; want 5", pages)
	}
	if m := fetches.MaxRows(); m > DefaultPage {
		t.Errorf("%d rows fetched in one round trip; want at most %d", m, DefaultPage)
	}
	if m := fetches.MaxIndex(); m > 2*DefaultPage { // a member and its score
		t.Errorf("%d index entries in one round trip; want at most %d", m, 2*DefaultPage)
	}
	if n := fetches.Rows(); n != 400+2*pages { // each Delete reads its row
		t.Errorf("%d rows fetched; want the 400 that hold, once each, and the %d deleted", n, 2*pages)
	}
}

// Each reads an index a page at a time.
func TestEachPagesThroughItsIndex(t *testing.T) {
	f := newFixture(t, Options{})
	for i := int64(1); i <= 250; i++ {
		f.upsert(t, repo, i, accepted)
	}
	fetches := redistest.CountFetches(f.l.rdb)
	var sizes []int
	err := f.l.Each(f.ctx, repo, IndexAccepted, DefaultPage, func(rows []*Record) error {
		sizes = append(sizes, len(rows))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != "[100 100 50]" {
		t.Fatalf("pages %v; want [100 100 50]", sizes)
	}
	if m, n := fetches.MaxRows(), fetches.Rows(); m != DefaultPage || n != 250 {
		t.Fatalf("%d rows fetched, at most %d per round trip; want 250, at most %d", n, m, DefaultPage)
	}
	if m := fetches.MaxIndex(); m > DefaultPage {
		t.Fatalf("%d index members in one round trip; want at most %d", m, DefaultPage)
	}
}
