package api_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
)

// The claim view carries the last PR read, the attempt's PRs counted and
// earlier attempts' listed apart, and explain says why those did not count.
func TestClaimViewListsEarlierAttemptsPRsApart(t *testing.T) {
	e := newEnv(t, envOpts{})
	head2 := strings.Repeat("2", 40)
	e.put(t, "hive/t27", 9120, `{"dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z",
		"review_state": "accept", "judged_head": "`+head2+`"}`)
	m := e.req(t, "GET", "/v1/repos/hive/t27/claims/9120", "").mustCode(t, 200, "")
	if m["prs"] != nil {
		t.Fatalf("prs before any read: %v", m["prs"])
	}
	read := dispatch.PRState{Read: true, Listed: []dispatch.PR{
		{Number: 24, State: "closed", HeadSHA: strings.Repeat("1", 40), CreatedAt: time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)},
		{Number: 30, State: "open", HeadSHA: head2, CreatedAt: time.Date(2026, 10, 10, 19, 5, 0, 0, time.UTC)},
	}}
	if _, err := e.ledger.RecordPRs(t.Context(), "hive/t27", 9120, read, audit.Webhook("d-30")); err != nil {
		t.Fatal(err)
	}
	m = e.req(t, "GET", "/v1/repos/hive/t27/claims/9120", "").mustCode(t, 200, "")
	prs, _ := m["prs"].(map[string]any)
	want := map[string]any{"read": true, "open": 1.0, "merged": 0.0, "closed_unmerged": 0.0, "numbers": []any{30.0}, "earlier": []any{24.0},
		"read_at": "2026-10-10T20:00:00Z"}
	if !reflect.DeepEqual(prs, want) || m["accept_claim"] != "live" {
		t.Fatalf("prs %v accept_claim %v, want %v and live", prs, m["accept_claim"], want)
	}
	var text []string
	for _, l := range m["explain"].([]any) {
		text = append(text, l.(string))
	}
	if line := "pull requests of this attempt: #30; of earlier attempts, not counted: #24"; !strings.Contains(strings.Join(text, "\n"), line) {
		t.Fatalf("explain lacks %q:\n%s", line, strings.Join(text, "\n"))
	}
}
