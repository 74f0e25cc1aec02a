package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
)

// pagingRows writes n working rows of hive/t27, each holding its own file,
// straight into the ledger.
func (e *env) pagingRows(t *testing.T, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		p := map[string]json.RawMessage{
			"started":       json.RawMessage(`true`),
			"dispatched_at": json.RawMessage(`"2026-10-10T19:00:00Z"`),
			"owned_paths":   json.RawMessage(fmt.Sprintf(`["src/f%d.go"]`, i)),
		}
		if _, err := e.ledger.Upsert(context.Background(), "hive/t27", int64(i), p, audit.API("test")); err != nil {
			t.Fatal(err)
		}
	}
}

// held-paths answers for every holding row, read a page at a time.
func TestHeldPathsPagesThroughTheLedger(t *testing.T) {
	e := newEnv(t, envOpts{})
	const rows = 250
	e.pagingRows(t, rows)
	e.fetches.Reset()
	var out struct {
		Held []struct{ Issue int64 } `json:"held"`
	}
	e.req(t, "GET", "/v1/repos/hive/t27/held-paths", "").decode(t, &out)
	if len(out.Held) != rows {
		t.Fatalf("%d held paths; want %d", len(out.Held), rows)
	}
	if m := e.fetches.MaxRows(); m > ledger.DefaultPage {
		t.Fatalf("%d rows fetched in one Redis round trip; want at most %d", m, ledger.DefaultPage)
	}
	if m := e.fetches.MaxIndex(); m > 2*ledger.DefaultPage {
		t.Fatalf("%d index entries in one Redis round trip; want at most %d", m, 2*ledger.DefaultPage)
	}
	if n := e.fetches.Rows(); n != rows {
		t.Fatalf("%d rows fetched; want each of the %d once", n, rows)
	}
}

// admission reads only its candidates' rows, however many the ledger has.
func TestAdmissionReadsOnlyItsCandidates(t *testing.T) {
	e := newEnv(t, envOpts{reviewFirst: true})
	e.pagingRows(t, 250)
	e.fetches.Reset()
	var cands []string
	for _, n := range []int{3, 120, 999} {
		cands = append(cands, fmt.Sprintf(`{"issue": %d, "owner_assigned": false}`, n))
	}
	a := e.admit(t, "hive/t27", `{"candidates": [`+strings.Join(cands, ",")+`]}`)
	if len(a.Admitted)+len(a.Held) != 3 {
		t.Fatalf("admission %+v; want the 3 candidates decided", a)
	}
	if n := e.fetches.Rows(); n != 3 {
		t.Fatalf("%d rows fetched; want the 3 candidates' only", n)
	}
	if m := e.fetches.MaxIndex(); m != 0 {
		t.Fatalf("%d index entries read; want none (the queue is counted, not read)", m)
	}
}
