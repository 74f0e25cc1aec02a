package dispatch

import (
	"fmt"
	"strconv"
	"time"

	"github.com/queen-app/queen-app/internal/rules"
)

// Decision is what the cards say of a row at one instant, before any flag
// or recorded free is taken into account.
type Decision struct {
	Claim       rules.Claim
	Stage       rules.HoldStage // the holds card's stage from the verdict
	IdleMinutes uint32          // whole minutes since finished_at
	SendBack    *rules.Liveness // send_back_claim; nil where it does not apply
	Accept      *rules.Liveness // accept_claim; nil where it does not apply
}

// ClaimInput converts a row to the claim card's input at the boundary.
func (r *Row) ClaimInput(now time.Time) rules.ClaimInput {
	in := rules.ClaimInput{
		Finished:       r.FinishedAt != nil,
		Verdict:        rules.VerdictOf(r.ReviewWord()),
		SendBacks:      r.SendBacks,
		Ceiling:        r.Ceiling,
		Releases:       r.CeilingRelease,
		CriteriaRead:   r.Criteria != nil,
		Criteria:       uint32(len(r.Criteria)),
		FreeAttempts:   r.FreeAttempts,
		ReviewerMisses: r.ReviewerMisses,
	}
	if r.FinishedAt != nil {
		in.IdleMinutes = rules.MinutesSince(*r.FinishedAt, now)
	}
	return in
}

// Decide applies the cards to r at now.
func Decide(r *Row, now time.Time) Decision {
	in := r.ClaimInput(now)
	d := Decision{
		Claim:       rules.ClaimOf(in),
		Stage:       rules.StageOf(in.Finished, r.ReviewWord()),
		IdleMinutes: in.IdleMinutes,
	}
	if in.Finished && r.ReviewWord() == "sendBack" {
		l := rules.SendBackLiveness(r.SendBacks, r.Ceiling)
		d.SendBack = &l
	}
	if in.Finished && r.ReviewWord() == "accept" {
		l := rules.Live
		if p := r.PRs; p != nil {
			l = rules.AcceptLiveness(p.Read, p.Open, p.Merged, p.ClosedUnmerged)
		}
		d.Accept = &l
	}
	return d
}

// RuleFrees names the rule that answers free, or "" when none does.
func (d Decision) RuleFrees() string {
	switch {
	case d.SendBack != nil && *d.SendBack == rules.Free:
		return RuleSendBack
	case d.Accept != nil && *d.Accept == rules.Free:
		return RuleAccept
	}
	return ""
}

// View is the claim view of a row: what the Queen asks for.
type View struct {
	Repo          string      `json:"repo"`
	Issue         int64       `json:"issue"`
	Claim         string      `json:"claim"`
	ClaimsIssue   bool        `json:"claims_issue"`
	Live          bool        `json:"live"`
	Stage         string      `json:"stage"`
	HoldsFiles    bool        `json:"holds_files"`
	HeldPaths     []string    `json:"held_paths"`
	HeldUntil     *time.Time  `json:"held_until"`
	SendBackClaim *string     `json:"send_back_claim"`
	AcceptClaim   *string     `json:"accept_claim"`
	Freed         *FreeRecord `json:"freed"`
	WouldFree     *FreeRecord `json:"would_free"`
	// PRs is the last read of the branch's pull requests, null before any:
	// the attempt's counted, earlier attempts' listed apart (earlier).
	PRs *PRState `json:"prs"`
	// Export is the export push's progress on the row; null before any attempt.
	Export  *ExportState `json:"export"`
	Version int64        `json:"version"`
}

// ViewOf is the claim view of r at now, as the ledger serves it: live is
// false exactly when a free was applied and recorded.
func ViewOf(r *Row, now time.Time) View {
	return Decide(r, now).View(r, r.Freed == nil)
}

// View composes the claim view of r from d with the given liveness. A claim
// that is not live answers free under every rule that applies to it,
// whatever freed it (a person, the other rule): the view never says
// send_back_claim "live" beside live false.
func (d Decision) View(r *Row, live bool) View {
	l := rules.Free
	if live {
		l = rules.Live
	}
	stage := rules.EffectiveStage(l, d.Stage)
	holds := rules.HoldsFiles(stage, d.IdleMinutes)
	v := View{
		Repo:          r.Repo,
		Issue:         r.Issue,
		Claim:         d.Claim.String(),
		ClaimsIssue:   live && rules.ClaimsIssue(d.Claim),
		Live:          live,
		Stage:         stage.String(),
		HoldsFiles:    holds,
		HeldPaths:     []string{},
		SendBackClaim: word(d.SendBack, live),
		AcceptClaim:   word(d.Accept, live),
		Freed:         r.Freed,
		WouldFree:     r.WouldFree,
		PRs:           r.PRs,
		Export:        r.Export,
		Version:       r.Version,
	}
	if holds {
		v.HeldPaths = append(v.HeldPaths, r.OwnedPaths...)
		v.HeldUntil = holdEnd(stage, r.FinishedAt)
	}
	return v
}

// holdEnd is when a hold runs out by its clock; nil while a bee works.
func holdEnd(s rules.HoldStage, finished *time.Time) *time.Time {
	var grace time.Duration
	switch s {
	case rules.StageSendBack:
		grace = rules.SendBackHoldMinutes * time.Minute
	case rules.StageAwaiting:
		grace = rules.AwaitingHoldMinutes * time.Minute
	default:
		return nil
	}
	if finished == nil {
		return nil
	}
	t := finished.Add(grace)
	return &t
}

func word(l *rules.Liveness, live bool) *string {
	if l == nil {
		return nil
	}
	s := l.String()
	if !live {
		s = rules.Free.String()
	}
	return &s
}

// Explain says in words which inputs the cards saw and which path they took.
func Explain(r *Row, now time.Time) []string {
	in := r.ClaimInput(now)
	d := Decide(r, now)
	v := d.View(r, r.Freed == nil)
	criteria := "unread (counts as 1)"
	if in.CriteriaRead {
		criteria = fmt.Sprint(in.Criteria)
	}
	lines := []string{
		fmt.Sprintf("inputs: finished=%t review_state=%q idle=%dm send_backs=%d ceiling=%d releases=%d criteria=%s free_attempts=%d reviewer_misses=%d",
			in.Finished, r.ReviewWord(), in.IdleMinutes, in.SendBacks, in.Ceiling, in.Releases, criteria, in.FreeAttempts, in.ReviewerMisses),
		"claim_of: " + claimPath(in, d.Claim),
	}
	if d.SendBack != nil {
		lines = append(lines, fmt.Sprintf("send_back_claim: send_backs %d %s ceiling %d -> %s",
			r.SendBacks, cmp(r.SendBacks < r.Ceiling), r.Ceiling, d.SendBack))
	}
	if d.Accept != nil {
		if p := r.PRs; p == nil || !p.Read {
			lines = append(lines, "accept_claim: pull requests not read -> live")
		} else {
			lines = append(lines, fmt.Sprintf("accept_claim: open=%d merged=%d closed_unmerged=%d -> %s",
				p.Open, p.Merged, p.ClosedUnmerged, d.Accept))
		}
	}
	if p := r.PRs; p != nil && p.Read && len(p.Earlier) > 0 {
		lines = append(lines, fmt.Sprintf("pull requests of this attempt: %s; of earlier attempts, not counted: %s (closed or merged before %s, at a head other than the judged one)",
			numbers(p.Numbers), numbers(p.Earlier), dispatchTime(r.DispatchedAt)))
	}
	switch {
	case r.Freed != nil:
		lines = append(lines, fmt.Sprintf("freed by %s at %s: %s", r.Freed.Rule, r.Freed.At.Format(time.RFC3339), r.Freed.Evidence))
	case r.WouldFree != nil:
		lines = append(lines, fmt.Sprintf("would be freed by %s (flag off) since %s: %s", r.WouldFree.Rule, r.WouldFree.At.Format(time.RFC3339), r.WouldFree.Evidence))
	}
	lines = append(lines, fmt.Sprintf("held_stage: %s (verdict stage %s) -> holds_files=%t, %d paths held",
		v.Stage, d.Stage, v.HoldsFiles, len(v.HeldPaths)))
	return lines
}

// numbers is "#1, #2", or "none".
func numbers(ns []int) string {
	if len(ns) == 0 {
		return "none"
	}
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += "#" + strconv.Itoa(n)
	}
	return s
}

func dispatchTime(t *time.Time) string {
	if t == nil {
		return "the dispatch"
	}
	return "the dispatch at " + t.UTC().Format(time.RFC3339)
}

func cmp(less bool) string {
	if less {
		return "<"
	}
	return ">="
}

func claimPath(in rules.ClaimInput, c rules.Claim) string {
	var why string
	switch {
	case !in.Finished:
		why = "not finished"
	case in.Verdict == rules.VerdictSendBack:
		why = fmt.Sprintf("send-back, idle %dm against the %dm floor, send_backs %d of ceiling %d, releases %d",
			in.IdleMinutes, rules.SendBackFloorMinutes, in.SendBacks, in.Ceiling, in.Releases)
	case in.Verdict == rules.VerdictEscalate:
		k := rules.EscalationKindOf(in.SendBacks, in.Ceiling, in.CriteriaRead, in.Criteria, in.FreeAttempts, in.ReviewerMisses)
		why = fmt.Sprintf("escalate, kind %d, next step %d after %dm idle", k, rules.NextStep(k, in.IdleMinutes, in.Releases), in.IdleMinutes)
	case in.Verdict == rules.VerdictNone || in.Verdict == rules.VerdictWait:
		why = fmt.Sprintf("no verdict or wait, idle %dm against the %dm floor", in.IdleMinutes, rules.WaitFrozenFloorMinutes)
	case in.Verdict == rules.VerdictOther:
		why = "an unknown verdict word is held for review"
	default:
		why = fmt.Sprintf("verdict %q", in.Verdict)
	}
	return why + " -> " + c.String()
}
