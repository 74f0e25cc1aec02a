package replay

import (
	"time"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/rules"
)

// Report is the replay of a snapshot: one line per row, in input order, and
// the summary. Its JSON form is the design's `replay --json` output.
type Report struct {
	TakenAt time.Time `json:"taken_at"`
	Rows    []Line    `json:"rows"`
	Summary Summary   `json:"summary"`
}

// Line is the claim view of one row as replay reports it. SendBackClaim and
// AcceptClaim are "free", "live" or nil where the rule does not apply.
type Line struct {
	Repo          string  `json:"repo"`
	Issue         int64   `json:"issue"`
	Claim         string  `json:"claim"`
	ClaimsIssue   bool    `json:"claims_issue"`
	Live          bool    `json:"live"`
	Stage         string  `json:"stage"`
	HoldsFiles    bool    `json:"holds_files"`
	SendBackClaim *string `json:"send_back_claim"`
	AcceptClaim   *string `json:"accept_claim"`
}

// Summary counts the rows by claim word and by each rule's answer.
type Summary struct {
	Claims        ClaimCounts     `json:"claims"`
	SendBackClaim SendBackSummary `json:"send_back_claim"`
	AcceptClaim   AcceptSummary   `json:"accept_claim"`
}

// ClaimCounts counts rows by claim_of's word; every word is always present.
type ClaimCounts struct {
	Running        int `json:"running"`
	Accepted       int `json:"accepted"`
	Rejected       int `json:"rejected"`
	AwaitingReview int `json:"awaitingReview"`
	Failed         int `json:"failed"`
	Cancelled      int `json:"cancelled"`
}

// SendBackSummary counts the rows send_back_claim applies to.
type SendBackSummary struct {
	Rows int `json:"rows"`
	Free int `json:"free"`
	Live int `json:"live"`
}

// AcceptSummary counts the rows accept_claim applies to. Free and Live are
// the rule's answers; Free, OpenPR, MergedPR, NoPR and Unread partition Rows
// by what the last pull-request read found.
type AcceptSummary struct {
	Rows     int `json:"rows"`
	Free     int `json:"free"`
	Live     int `json:"live"`
	OpenPR   int `json:"open_pr"`
	MergedPR int `json:"merged_pr"`
	NoPR     int `json:"no_pr"`
	Unread   int `json:"unread"`
}

// Evaluate applies the cards to every row at the snapshot's clock, with the
// rules in force as if both freeing flags were on: a row is live unless a
// rule answers free.
func Evaluate(s *Snapshot) *Report {
	rep := &Report{TakenAt: s.TakenAt, Rows: make([]Line, 0, len(s.Rows))}
	for _, r := range s.Rows {
		d := dispatch.Decide(r, s.TakenAt)
		v := d.View(r, d.RuleFrees() == "")
		rep.Rows = append(rep.Rows, Line{
			Repo:          v.Repo,
			Issue:         v.Issue,
			Claim:         v.Claim,
			ClaimsIssue:   v.ClaimsIssue,
			Live:          v.Live,
			Stage:         v.Stage,
			HoldsFiles:    v.HoldsFiles,
			SendBackClaim: v.SendBackClaim,
			AcceptClaim:   v.AcceptClaim,
		})
		rep.Summary.add(r, d)
	}
	return rep
}

func (s *Summary) add(r *dispatch.Row, d dispatch.Decision) {
	s.Claims.add(d.Claim)
	if l := d.SendBack; l != nil {
		s.SendBackClaim.Rows++
		if *l == rules.Free {
			s.SendBackClaim.Free++
		} else {
			s.SendBackClaim.Live++
		}
	}
	if l := d.Accept; l != nil {
		a := &s.AcceptClaim
		a.Rows++
		if *l == rules.Free {
			a.Free++
		} else {
			a.Live++
		}
		switch p := r.PRs; {
		case p == nil || !p.Read:
			a.Unread++
		case p.Merged > 0:
			a.MergedPR++
		case p.Open > 0:
			a.OpenPR++
		case p.ClosedUnmerged > 0:
			// Counted in Free: only closed-unmerged pull requests.
		default:
			a.NoPR++
		}
	}
}

func (c *ClaimCounts) add(cl rules.Claim) {
	switch cl {
	case rules.ClaimRunning:
		c.Running++
	case rules.ClaimAccepted:
		c.Accepted++
	case rules.ClaimRejected:
		c.Rejected++
	case rules.ClaimFailed:
		c.Failed++
	case rules.ClaimCancelled:
		c.Cancelled++
	default: // awaitingReview, and what the card reads as it
		c.AwaitingReview++
	}
}

// Total is the number of rows counted.
func (c ClaimCounts) Total() int {
	return c.Running + c.Accepted + c.Rejected + c.AwaitingReview + c.Failed + c.Cancelled
}
