package rules

import (
	"math"
	"time"
)

// Claim is the claim card's answer for a dispatch row (CL_*). Codes never move.
type Claim uint8

const (
	ClaimRunning        Claim = 0 // bee not ended; issue and files held
	ClaimAccepted       Claim = 1 // done
	ClaimRejected       Claim = 2 // sent back or empty inside its floor; live claim
	ClaimAwaitingReview Claim = 3 // undecided, or held by the valve; live claim
	ClaimFailed         Claim = 4 // released; the issue goes back to the swarm
	ClaimCancelled      Claim = 5 // closed by the valve as obsolete
	claimStates         Claim = 6 // CLAIM_STATES
)

var claimWords = [...]string{"running", "accepted", "rejected", "awaitingReview", "failed", "cancelled"}

// String returns the claim word the runtime and the API use. A code outside
// the card answers awaitingReview, the newer boundary's safe reading.
func (c Claim) String() string {
	if c < claimStates {
		return claimWords[c]
	}
	return claimWords[ClaimAwaitingReview]
}

// ParseClaim maps a claim word back to its code.
func ParseClaim(word string) (Claim, bool) {
	for i, w := range claimWords {
		if w == word {
			return Claim(i), true
		}
	}
	return 0, false
}

// ClaimsIssue reports whether a row in claim c still claims its issue: the
// four live claims (running, accepted, rejected, awaitingReview).
func ClaimsIssue(c Claim) bool {
	return c <= ClaimAwaitingReview
}

// Verdict is the claim card's code for a review_state word (V_*).
type Verdict uint8

const (
	VerdictNone          Verdict = 0 // null or ""
	VerdictAccept        Verdict = 1
	VerdictSendBack      Verdict = 2
	VerdictEscalate      Verdict = 3
	VerdictWait          Verdict = 4
	VerdictFailed        Verdict = 5
	VerdictCancelled     Verdict = 6
	VerdictEmpty         Verdict = 7
	VerdictStaleContract Verdict = 8
	VerdictObsolete      Verdict = 9
	VerdictOther         Verdict = 10 // any other string
	verdictCodes         Verdict = 11 // VERDICT_CODES; codes at or above behave like OTHER
)

// verdictWords is the card's table: exactly these ten words, indexed by code.
var verdictWords = [...]string{
	VerdictNone:          "",
	VerdictAccept:        "accept",
	VerdictSendBack:      "sendBack",
	VerdictEscalate:      "escalate",
	VerdictWait:          "wait",
	VerdictFailed:        "failed",
	VerdictCancelled:     "cancelled",
	VerdictEmpty:         "empty",
	VerdictStaleContract: "stale-contract",
	VerdictObsolete:      ObsoleteState,
}

// ReviewWords are the review_state words the Queen writes (the table's
// words but ""), in code order; a new slice each call.
func ReviewWords() []string {
	return append([]string(nil), verdictWords[VerdictNone+1:]...)
}

// VerdictOf maps a review_state word to its code: an exact, case-sensitive
// match in the table, never a map lookup, so "__proto__" and friends are just
// other words. null reads as "".
func VerdictOf(reviewState string) Verdict {
	for code, w := range verdictWords {
		if w == reviewState {
			return Verdict(code)
		}
	}
	return VerdictOther
}

// String returns the verdict's word, or "other" for any other code.
func (v Verdict) String() string {
	if int(v) < len(verdictWords) {
		return verdictWords[v]
	}
	return "other"
}

// Floors and ceilings of the claim card, in whole idle minutes since
// finished_at and in counts.
const (
	SendBackFloorMinutes   = 60                // SEND_BACK_FLOOR_MINUTES
	WaitFrozenFloorMinutes = 360               // WAIT_FROZEN_FLOOR_MINUTES
	DefaultSendBackCeiling = 2                 // DEFAULT_SEND_BACK_CEILING: the runtime's maximumRealAttempts
	FreeAttemptCeiling     = 3                 // FREE_ATTEMPT_CEILING: a dead letter after three empty attempts
	ReviewerMissCeiling    = 3                 // REVIEWER_MISS_CEILING
	UnreadCriteria         = 1                 // UNREAD_CRITERIA: unread criteria never count as none
	EmptyFloorMinutes      = RetryFloorMinutes // the empty-attempt floor is the valve's retry floor
)

// CriteriaCount implements criteria_read_as(criteria_read, criteria): an
// unread column counts as one criterion, so it can never look like "none".
func CriteriaCount(read bool, criteria uint32) uint32 {
	if read {
		return criteria
	}
	return UnreadCriteria
}

// ClaimAfterStep implements claim_of_step(step, held): a release fails the
// claim, a close cancels it, anything else keeps the held claim.
func ClaimAfterStep(s Step, held Claim) Claim {
	switch s {
	case StepRelease:
		return ClaimFailed
	case StepClose:
		return ClaimCancelled
	default:
		return held
	}
}

// EscalationKindOf implements escalation_kind_of: the valve's kind from a
// row's counters.
func EscalationKindOf(sendBacks, ceiling uint32, criteriaRead bool, criteria, freeAttempts, reviewerMisses uint32) Kind {
	return EscalationKind(
		CriteriaCount(criteriaRead, criteria),
		sendBacks >= ceiling,
		freeAttempts >= FreeAttemptCeiling,
		reviewerMisses >= ReviewerMissCeiling,
	)
}

// ClaimInput is the card's input for one row, already converted at the
// boundary (VerdictOf, Minutes).
type ClaimInput struct {
	Finished       bool
	Verdict        Verdict
	IdleMinutes    uint32 // whole minutes since finished_at
	SendBacks      uint32
	Ceiling        uint32
	Releases       uint32 // the row's ceiling_releases
	CriteriaRead   bool
	Criteria       uint32
	FreeAttempts   uint32
	ReviewerMisses uint32
}

// ClaimOf implements claim_of: what a dispatch row still claims. The first
// matching rule wins; never from what a row wrote about itself, never from a
// timer alone.
func ClaimOf(in ClaimInput) Claim {
	underCeiling := in.SendBacks < in.Ceiling
	switch {
	case !in.Finished:
		return ClaimRunning
	case in.Verdict == VerdictAccept:
		return ClaimAccepted
	case in.Verdict == VerdictFailed || in.Verdict == VerdictCancelled:
		return ClaimFailed
	case in.Verdict == VerdictEmpty && in.IdleMinutes >= EmptyFloorMinutes:
		return ClaimFailed
	case in.Verdict == VerdictEmpty:
		return ClaimRejected
	case in.Verdict == VerdictStaleContract:
		return ClaimFailed
	case in.Verdict == VerdictObsolete:
		return ClaimCancelled
	case in.Verdict == VerdictSendBack && in.IdleMinutes >= SendBackFloorMinutes && underCeiling:
		return ClaimFailed
	case in.Verdict == VerdictSendBack:
		return ClaimAfterStep(NextStep(KindSendBackCeiling, in.IdleMinutes, in.Releases), ClaimRejected)
	case in.Verdict == VerdictEscalate:
		kind := EscalationKindOf(in.SendBacks, in.Ceiling, in.CriteriaRead, in.Criteria, in.FreeAttempts, in.ReviewerMisses)
		return ClaimAfterStep(NextStep(kind, in.IdleMinutes, in.Releases), ClaimAwaitingReview)
	case (in.Verdict == VerdictNone || in.Verdict == VerdictWait) && in.IdleMinutes >= WaitFrozenFloorMinutes && underCeiling:
		return ClaimFailed
	default:
		return ClaimAwaitingReview
	}
}

// MaxMinutes is where a clock saturates (2^32-1 minutes).
const MaxMinutes = math.MaxUint32

// Minutes is the card boundary's u32 rule for a clock given in milliseconds:
// whole minutes, floor; NaN and negative read 0 (a clock that cannot be read
// keeps the hold); huge and +Inf saturate.
func Minutes(ms float64) uint32 {
	if math.IsNaN(ms) || ms <= 0 {
		return 0
	}
	m := math.Floor(ms / 60000)
	if m >= MaxMinutes {
		return MaxMinutes
	}
	return uint32(m)
}

// MinutesSince is Minutes for the time between since and now. A zero since
// (unknown) or a since later than now reads 0.
func MinutesSince(since, now time.Time) uint32 {
	if since.IsZero() {
		return 0
	}
	d := now.Sub(since)
	if d <= 0 {
		return 0
	}
	// time.Duration saturates near 292 years, far below MaxMinutes: no overflow.
	m := d / time.Minute
	if m >= MaxMinutes {
		return MaxMinutes
	}
	return uint32(m)
}

// Count is the u32 rule for a counter: floor, negative and NaN read 0, huge
// saturates.
func Count(x float64) uint32 {
	if math.IsNaN(x) || x <= 0 {
		return 0
	}
	if x >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(math.Floor(x))
}
