package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
)

func TestAuditTableNewestLast(t *testing.T) {
	l := claimsServer(t)
	ctx := context.Background()
	put := func(repo string, issue int64, body string) {
		t.Helper()
		obj, err := dispatch.DecodeObject([]byte(body))
		if err == nil {
			_, err = l.Upsert(ctx, repo, issue, obj, audit.API("queen"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	put("hive/t27", 9111, `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`)
	put("acme/web", 4, `{"started": true}`)
	if _, err := l.RecordPRs(ctx, "hive/t27", 9111, dispatch.PRState{Read: true, ClosedUnmerged: 1}, audit.Webhook("d-77")); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := ctl("audit")
	got := lines(out)
	if code != 0 || errOut != "" || len(got) != 5 {
		t.Fatalf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
	want := [][]string{
		{"TIME", "ROW", "RULE", "OUTCOME", "SOURCE", "DELIVERY"},
		{"2026-10-10T20:00:00Z", "hive/t27#9111", "-", "upsert", "api:queen", "-"},
		{"2026-10-10T20:00:00Z", "acme/web#4", "-", "upsert", "api:queen", "-"},
		{"2026-10-10T20:00:00Z", "hive/t27#9111", "accept_claim", "would_free", "webhook", "d-77"},
	}
	for i, w := range want {
		if f := strings.Fields(got[i]); strings.Join(f, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i, got[i], strings.Join(w, " "))
		}
	}
	if got[4] != "3 entries" {
		t.Errorf("summary %q, want 3 entries", got[4])
	}

	code, out, _ = ctl("audit", "--repo", "hive/t27", "--issue", "9111", "--since", "24h", "--limit", "1")
	if got := lines(out); code != 0 || len(got) != 3 || !strings.Contains(got[1], "would_free") ||
		!strings.HasPrefix(got[2], "1 entry (older entries left out") {
		t.Errorf("filtered, limit 1: exit %d:\n%s", code, out)
	}
	code, out, _ = ctl("audit", "--json", "--repo", "acme/web")
	var list apiwire.AuditList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Entries) != 1 ||
		list.Entries[0].Issue != 4 || list.More {
		t.Errorf("--json: exit %d, %v:\n%s", code, err, out)
	}
	for _, bad := range [][]string{{"--repo", "nope"}, {"--since", "yesterday"}, {"--limit", "0"}, {"extra"}} {
		if code, _, errOut := ctl(append([]string{"audit"}, bad...)...); code != 2 || !strings.HasPrefix(errOut, "queenctl: audit: ") {
			t.Errorf("audit %v: exit %d, stderr %q; want a usage error", bad, code, errOut)
		}
	}
}
