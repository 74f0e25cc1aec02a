package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
)

// explain shows the last PR read with earlier attempts' PRs apart from the
// attempt's, and the rule path says why those did not count.
func TestExplainListsEarlierAttemptsPRsApart(t *testing.T) {
	l := claimsServer(t)
	ctx := context.Background()
	head2 := strings.Repeat("2", 40)
	patch, err := dispatch.DecodeObject([]byte(`{"dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z",
		"review_state": "accept", "judged_head": "` + head2 + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Upsert(ctx, "hive/t27", 9120, patch, audit.API("queen")); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := ctl("explain", "hive/t27#9120"); code != 0 || !strings.Contains(out, "prs              not read\n") {
		t.Fatalf("explain before a read: %d\n%s", code, out)
	}
	read := dispatch.PRState{Read: true, Listed: []dispatch.PR{
		{Number: 24, State: "closed", HeadSHA: strings.Repeat("1", 40), CreatedAt: time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)},
		{Number: 30, State: "open", HeadSHA: head2, CreatedAt: time.Date(2026, 10, 10, 19, 5, 0, 0, time.UTC)},
	}}
	if _, err := l.RecordPRs(ctx, "hive/t27", 9120, read, audit.Webhook("d-30")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ctl("explain", "hive/t27#9120")
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errOut)
	}
	for _, want := range []string{
		"prs              open 1, merged 0, closed unmerged 0 (#30); earlier attempts', not counted: #24; read 2026-10-10T20:00:00Z\n",
		"accept_claim: open=1 merged=0 closed_unmerged=0 -> live",
		"pull requests of this attempt: #30; of earlier attempts, not counted: #24 (closed or merged before the dispatch at 2026-10-10T17:00:00Z, at a head other than the judged one)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
}
