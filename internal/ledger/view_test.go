package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/rules"
)

// The claim view of stored rows, both flags on, now 2026-10-10T20:00Z.
// Expected values are worked out by hand from the cards in docs/design.md.
func TestClaimViewOfStoredRows(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true, ReleaseDeadClaims: true})
	const none = ""
	cases := []struct {
		name, row string
		prs       *dispatch.PRState
		claim     string
		claims    bool
		live      bool
		stage     string
		holds     bool
		sendBack  string // "" for null
		accept    string
		heldUntil string // "" for null
	}{
		{"running", `{"started": true, "dispatched_at": "2026-10-10T19:00:00Z"}`, nil, "running", true, true, "working", true, none, none, none},
		{"running with an old sendBack word", `{"review_state": "sendBack"}`, nil, "running", true, true, "working", true, none, none, none},
		{"accepted, PRs not read", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`, nil, "accepted", true, true, "done", false, none, "live", none},
		{"accepted, only closed-unmerged PRs", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`, &dispatch.PRState{Read: true, ClosedUnmerged: 1}, "accepted", false, false, "done", false, none, "free", none},
		{"accepted, open PR", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`, &dispatch.PRState{Read: true, Open: 1, ClosedUnmerged: 1}, "accepted", true, true, "done", false, none, "live", none},
		{"accepted, merged PR", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`, &dispatch.PRState{Read: true, Merged: 1, ClosedUnmerged: 2}, "accepted", true, true, "done", false, none, "live", none},
		{"accepted, no PR yet", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`, &dispatch.PRState{Read: true}, "accepted", true, true, "done", false, none, "live", none},
		{"send-back at ceiling, 30m", `{"finished_at": "2026-10-10T19:30:00Z", "review_state": "sendBack", "send_backs": 2}`, nil, "rejected", true, true, "send_back", true, "live", none, "2026-10-10T21:30:00Z"},
		{"send-back under ceiling, 10m", `{"finished_at": "2026-10-10T19:50:00Z", "review_state": "sendBack", "send_backs": 1}`, nil, "rejected", false, false, "done", false, "free", none, none},
		{"send-back under ceiling, 90m", `{"finished_at": "2026-10-10T18:30:00Z", "review_state": "sendBack", "send_backs": 0}`, nil, "failed", false, false, "done", false, "free", none, none},
		{"send-back over ceiling, release spent", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "sendBack", "send_backs": 3, "ceiling_releases": 1}`, nil, "cancelled", false, true, "send_back", true, "live", none, "2026-10-10T21:00:00Z"},
		{"send-back at ceiling, 120m", `{"finished_at": "2026-10-10T18:00:00Z", "review_state": "sendBack", "send_backs": 2}`, nil, "failed", false, true, "send_back", false, "live", none, none},
		{"send-back, ceiling 3", `{"finished_at": "2026-10-10T19:59:00Z", "review_state": "sendBack", "send_backs": 3, "ceiling": 3}`, nil, "rejected", true, true, "send_back", true, "live", none, "2026-10-10T21:59:00Z"},
		{"wait, 15m", `{"finished_at": "2026-10-10T19:45:00Z", "review_state": "wait"}`, nil, "awaitingReview", true, true, "awaiting", true, none, none, "2026-10-10T20:15:00Z"},
		{"wait, 60m", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "wait"}`, nil, "awaitingReview", true, true, "awaiting", false, none, none, none},
		{"no verdict, 420m", `{"finished_at": "2026-10-10T13:00:00Z"}`, nil, "failed", false, true, "awaiting", false, none, none, none},
		{"wait at ceiling, 420m", `{"finished_at": "2026-10-10T13:00:00Z", "review_state": "wait", "send_backs": 2}`, nil, "awaitingReview", true, true, "awaiting", false, none, none, none},
		{"escalate, 10m", `{"finished_at": "2026-10-10T19:50:00Z", "review_state": "escalate", "criteria": ["a", "b"]}`, nil, "awaitingReview", true, true, "escalated", false, none, none, none},
		{"escalate, no criteria, 121m", `{"finished_at": "2026-10-10T17:59:00Z", "review_state": "escalate", "criteria": []}`, nil, "cancelled", false, true, "escalated", false, none, none, none},
		{"escalate, 30m", `{"finished_at": "2026-10-10T19:30:00Z", "review_state": "escalate", "criteria": ["a"]}`, nil, "failed", false, true, "escalated", false, none, none, none},
		{"empty, 5m", `{"finished_at": "2026-10-10T19:55:00Z", "review_state": "empty"}`, nil, "rejected", true, true, "awaiting", true, none, none, "2026-10-10T20:25:00Z"},
		{"empty, 30m", `{"finished_at": "2026-10-10T19:30:00Z", "review_state": "empty"}`, nil, "failed", false, true, "awaiting", false, none, none, none},
		{"failed", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "failed"}`, nil, "failed", false, true, "done", false, none, none, none},
		{"cancelled word", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "cancelled"}`, nil, "failed", false, true, "done", false, none, none, none},
		{"obsolete", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "obsolete"}`, nil, "cancelled", false, true, "done", false, none, none, none},
		{"stale-contract", `{"finished_at": "2026-10-10T19:00:00Z", "review_state": "stale-contract"}`, nil, "failed", false, true, "done", false, none, none, none},
		{"unknown word", `{"finished_at": "2026-10-10T19:50:00Z", "review_state": "Accept"}`, nil, "awaitingReview", true, true, "awaiting", true, none, none, "2026-10-10T20:20:00Z"},
		{"finished in the future", `{"finished_at": "2026-10-10T21:00:00Z", "review_state": "wait"}`, nil, "awaitingReview", true, true, "awaiting", true, none, none, "2026-10-10T21:30:00Z"},
	}
	seen := map[string]bool{}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			issue := int64(100 + i)
			f.upsert(t, repo, issue, tc.row)
			f.upsert(t, repo, issue, `{"owned_paths": ["src/lib.rs", "docs/x.md"]}`)
			if tc.prs != nil {
				if _, err := f.l.RecordPRs(f.ctx, repo, issue, *tc.prs, audit.Webhook("d")); err != nil {
					t.Fatal(err)
				}
			}
			rec := f.get(t, repo, issue)
			v := rec.View(t0)
			wantPaths := "[]"
			if tc.holds {
				wantPaths = "[src/lib.rs docs/x.md]"
			}
			got := fmt.Sprintf("%s claims=%t live=%t %s holds=%t paths=%v sb=%s acc=%s until=%s",
				v.Claim, v.ClaimsIssue, v.Live, v.Stage, v.HoldsFiles, v.HeldPaths, str(v.SendBackClaim), str(v.AcceptClaim), timeStr(v.HeldUntil))
			want := fmt.Sprintf("%s claims=%t live=%t %s holds=%t paths=%s sb=%s acc=%s until=%s",
				tc.claim, tc.claims, tc.live, tc.stage, tc.holds, wantPaths, tc.sendBack, tc.accept, tc.heldUntil)
			if got != want {
				t.Fatalf("view of %s\n got %s\nwant %s", tc.row, got, want)
			}
			// The stored row feeds internal/rules exactly as written.
			if c := rules.ClaimOf(rec.ClaimInput(t0)).String(); c != v.Claim {
				t.Fatalf("rules.ClaimOf says %s, view says %s", c, v.Claim)
			}
			if (rec.Freed != nil) == v.Live || (!tc.live && rec.Freed.Rule == dispatch.RuleManual) {
				t.Fatalf("freed %+v with live %t", rec.Freed, v.Live)
			}
			seen[v.Claim], seen["stage:"+v.Stage] = true, true
		})
	}
	for _, w := range []string{"running", "accepted", "rejected", "awaitingReview", "failed", "cancelled",
		"stage:working", "stage:send_back", "stage:awaiting", "stage:escalated", "stage:done"} {
		if !seen[w] {
			t.Errorf("the table never reaches %s", w)
		}
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func timeStr(p *time.Time) string {
	if p == nil {
		return ""
	}
	return p.UTC().Format(time.RFC3339)
}
