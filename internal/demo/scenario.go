package demo

import (
	"fmt"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/dispatch"
)

// The repository the demo's App is installed on, in the sandbox.
const repo = "hive/t27"

// kind is what a scenario plays: each one a measured jam or its control.
type kind int

const (
	sendBackUnder  kind = iota // a send-back under the retry ceiling: no bee comes back
	sendBackAt                 // a send-back at the ceiling: escalated, kept
	closedUnmerged             // accepted; its only PR closes unmerged
	merged                     // accepted; its PR is merged
	openPR                     // accepted; its PR is open
	noPR                       // accepted; no PR at all, no head to push
	unreadable                 // accepted; GitHub cannot list its PRs
	exported                   // accepted work the export holds; the export is down at first
)

// scenario is one dispatch row and what must become of it.
type scenario struct {
	issue int64
	kind  kind
	what  string // for the log and the table
}

var scenarios = []scenario{
	{9111, sendBackUnder, "send-back 1 of ceiling 2"},
	{9112, sendBackAt, "send-back 2 of ceiling 2"},
	{9120, closedUnmerged, "accepted, PR closes unmerged"},
	{9121, merged, "accepted, PR merged"},
	{9122, openPR, "accepted, PR open"},
	{9123, noPR, "accepted, no PR"},
	{9124, unreadable, "accepted, PR list unreadable"},
	{9130, exported, "accepted, head in the export"},
	{9131, exported, "accepted, head in the export"},
	{9132, exported, "accepted, head in the export"},
}

func (s scenario) branch() string { return fmt.Sprintf("queen-%d", s.issue) }

// webhook reports whether the scenario closes a PR and so sends a webhook.
func (s scenario) webhook() bool {
	return s.kind == closedUnmerged || s.kind == merged || s.kind == unreadable
}

// row is the Queen's dispatch row, as it writes it: with its own repo and
// issue, which the API takes when they are the path's.
func (s scenario) row(now time.Time, head string) map[string]any {
	r := map[string]any{
		"repo": repo, "issue": s.issue, "started": true,
		"dispatched_at": now.Add(-3 * time.Hour).Format(time.RFC3339),
		"criteria":      []string{"builds", "tests"},
	}
	switch s.kind {
	case sendBackUnder, sendBackAt:
		r["finished_at"] = now.Add(-10 * time.Minute).Format(time.RFC3339)
		r["review_state"] = "sendBack"
		r["send_backs"] = 1
		if s.kind == sendBackAt {
			r["send_backs"] = 2
		}
		r["owned_paths"] = []string{fmt.Sprintf("bootstrap/src/pass%d.rs", s.issue)}
	default:
		r["finished_at"] = now.Add(-time.Hour).Format(time.RFC3339)
		r["review_state"] = "accept"
		r["owned_paths"] = []string{"src/"}
		r["judged_head"] = nil
		if head != "" {
			r["judged_head"] = head
		}
	}
	return r
}

// observed is what the demo saw of a row, through the claims API.
type observed struct {
	view      dispatch.View
	prs       *dispatch.PRState // the newest recorded PR read; nil: never read
	readBy    string            // "sweep" or the delivery of that read
	delivery  string            // the webhook the demo sent for the row
	sentAt    time.Time         // when the webhook was answered
	waiting   string            // the re-evaluation's last error while it retries
	ghPRs     []string          // the branch's PRs on GitHub, "#N state"
	gitHead   string            // the branch on GitHub's git
	prsOpened int               // PRs GitHub has for the branch
}

// expect says whether the row came out as it must, and if not, what was
// expected. flagsOn is whether freeing is applied (else only recorded).
func (s scenario) expect(o observed, flagsOn bool, judged string) (bool, string) {
	v := o.view
	freedBy := func(rule string) (bool, string) {
		want := "freed by " + rule
		rec := v.Freed
		if !flagsOn {
			want = "recorded would_free by " + rule + " and freed nothing"
			rec = v.WouldFree
			if v.Freed != nil || !v.Live {
				return false, want
			}
		}
		if rec == nil || rec.Rule != rule || (flagsOn && v.Live) {
			return false, want
		}
		if s.kind == closedUnmerged && rec.At.Before(o.sentAt.Add(-time.Second)) {
			return false, want + " after its webhook"
		}
		return true, want
	}
	kept := func(why string, ok bool) (bool, string) {
		want := "kept (" + why + ")"
		return ok && v.Live && v.Freed == nil && v.WouldFree == nil, want
	}
	switch s.kind {
	case sendBackUnder:
		return freedBy(dispatch.RuleSendBack)
	case sendBackAt:
		return kept("at the ceiling", v.SendBackClaim != nil && *v.SendBackClaim == "live")
	case closedUnmerged:
		return freedBy(dispatch.RuleAccept)
	case merged:
		return kept("merged PR read", o.prs != nil && o.prs.Read && o.prs.Merged == 1)
	case openPR:
		return kept("open PR read", o.prs != nil && o.prs.Read && o.prs.Open == 1)
	case noPR:
		return kept("no PR read", o.prs != nil && o.prs.Read && o.prs.Open+o.prs.Merged+o.prs.ClosedUnmerged == 0)
	case unreadable:
		return kept("PRs unread, re-evaluation retrying", o.prs == nil && o.waiting != "")
	case exported:
		st := v.Export
		ok := st != nil && st.State == "pr_opened" && st.PushedHead == judged && o.gitHead == judged && o.prsOpened == 1
		return ok && v.Live, "pushed at its accepted head, one PR opened"
	}
	return false, "a known scenario"
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func joinOrDash(s []string) string { return orDash(strings.Join(s, ",")) }
