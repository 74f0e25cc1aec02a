package rules

// Kind is the review valve's escalation kind (KIND_*). Codes never move.
type Kind uint8

const (
	KindUnrecorded      Kind = 0 // counters cannot tell
	KindNoCriteria      Kind = 1 // backfill kind
	KindSendBackCeiling Kind = 2 // uses the 60-minute floor
	KindDeadLetter      Kind = 3 // three empty attempts
	KindReviewerGaveUp  Kind = 4
	KindEmptyAccept     Kind = 5 // recorded-only
	KindBeyondThePatch  Kind = 6 // recorded-only, backfill kind
	KindBaseTruthAlone  Kind = 7 // recorded-only, backfill kind
	KindEffectGaveUp    Kind = 8 // recorded-only
)

// Step is the valve's next step for work that was not accepted (STEP_*).
type Step uint8

const (
	StepHold     Step = 0
	StepRelease  Step = 1
	StepBackfill Step = 2
	StepClose    Step = 3
)

// PRStepKind is the reviewer's step on a pull request (PR_*).
type PRStepKind uint8

const (
	PRNone    PRStepKind = 0
	PRJudge   PRStepKind = 1
	PRWaitFix PRStepKind = 2
	PRClose   PRStepKind = 3
)

// ConflictStepKind is the publisher's step on a conflicting pull request (C_*).
type ConflictStepKind uint8

const (
	ConflictNone   ConflictStepKind = 0
	ConflictWait   ConflictStepKind = 1
	ConflictUpdate ConflictStepKind = 2
	ConflictRedo   ConflictStepKind = 3
	ConflictClose  ConflictStepKind = 4
)

// Valve clocks and counters. No person is in the loop, so every hold ends
// before the policy's own 48-hour hold.
const (
	ObsoleteState         = "obsolete" // OBSOLETE_STATE
	RetryFloorMinutes     = 30         // RETRY_FLOOR_MINUTES
	CeilingFloorMinutes   = 60         // CEILING_FLOOR_MINUTES
	BackfillWindowMinutes = 120        // BACKFILL_WINDOW_MINUTES
	MaxReleases           = 1          // MAX_RELEASES: a release fires once
	PolicyHoldMinutes     = 2880       // POLICY_HOLD_MINUTES (48 h)
	ReviewerLogin         = "t27-bees[bot]"
	QueenBranchPrefix     = "queen-"
	PRFixAttempts         = 2  // PR_FIX_ATTEMPTS
	PRFixWindowHours      = 48 // PR_FIX_WINDOW_HOURS
	ConflictUpdates       = 2  // CONFLICT_UPDATES
	UpdateQueueCeiling    = 50 // UPDATE_QUEUE_CEILING
	ConflictWaitHours     = 48 // CONFLICT_WAIT_HOURS
)

// EscalationKind implements escalation_kind(criteria, send_back_ceiling,
// dead_letter, reviewer_gave_up): the first reason that applies, in order.
func EscalationKind(criteria uint32, sendBackCeiling, deadLetter, reviewerGaveUp bool) Kind {
	switch {
	case criteria == 0:
		return KindNoCriteria
	case sendBackCeiling:
		return KindSendBackCeiling
	case deadLetter:
		return KindDeadLetter
	case reviewerGaveUp:
		return KindReviewerGaveUp
	default:
		return KindUnrecorded
	}
}

// IsRecordedKind implements is_recorded_kind: kinds only a recorded column
// can tell, because no counter shows them.
func IsRecordedKind(k Kind) bool {
	return k >= KindEmptyAccept && k <= KindEffectGaveUp
}

// RecordedEscalationKind implements recorded_escalation_kind: the counters
// speak first; a recorded-only kind is used only where they say nothing.
func RecordedEscalationKind(recorded Kind, criteria uint32, sendBackCeiling, deadLetter, reviewerGaveUp bool) Kind {
	k := EscalationKind(criteria, sendBackCeiling, deadLetter, reviewerGaveUp)
	if k == KindUnrecorded && IsRecordedKind(recorded) {
		return recorded
	}
	return k
}

// WantsBackfill implements wants_backfill: kinds whose fix is to write the
// missing criteria or evidence rather than to retry.
func WantsBackfill(k Kind) bool {
	return k == KindNoCriteria || k == KindBeyondThePatch || k == KindBaseTruthAlone
}

// NextStep implements next_step(kind, idle_minutes, releases). A backfill
// closes after its window whatever the releases; a spent release closes; a
// send-back ceiling waits the longer floor; everything else 30 minutes.
func NextStep(k Kind, idleMinutes, releases uint32) Step {
	backfill := WantsBackfill(k)
	switch {
	case backfill && idleMinutes >= BackfillWindowMinutes:
		return StepClose
	case backfill:
		return StepBackfill
	case releases >= MaxReleases:
		return StepClose
	case k == KindSendBackCeiling && idleMinutes >= CeilingFloorMinutes:
		return StepRelease
	case k != KindSendBackCeiling && idleMinutes >= RetryFloorMinutes:
		return StepRelease
	default:
		return StepHold
	}
}

// StepHoldsFiles implements the valve's holds_files(step): a hold or a
// backfill keeps the files; a release or close lets them go.
func StepHoldsFiles(s Step) bool {
	return s == StepHold || s == StepBackfill
}

// PRStep implements pr_step(queen_branch, changes_on_head, head_judged,
// changes_heads, hours): the reviewer's step on a Queen pull request.
func PRStep(queenBranch, changesOnHead, headJudged bool, changesHeads, hours uint32) PRStepKind {
	switch {
	case !queenBranch:
		return PRNone
	case !headJudged:
		return PRJudge
	case !changesOnHead:
		return PRNone
	case changesHeads > PRFixAttempts:
		return PRClose
	case hours >= PRFixWindowHours:
		return PRClose
	default:
		return PRWaitFix
	}
}

// ConflictStep implements conflict_step(queen_branch, conflicting,
// update_failed, updates, hours, releases, queued_runs): update a conflicting
// PR while updates are cheap, redo it once they are not, close it once the
// release is spent, and wait while the update queue is over its ceiling.
func ConflictStep(queenBranch, conflicting, updateFailed bool, updates, hours, releases, queuedRuns uint32) ConflictStepKind {
	redo := updateFailed || updates >= ConflictUpdates || hours >= ConflictWaitHours
	switch {
	case !queenBranch:
		return ConflictNone
	case !conflicting:
		return ConflictNone
	case redo && releases >= MaxReleases:
		return ConflictClose
	case redo:
		return ConflictRedo
	case queuedRuns > UpdateQueueCeiling:
		return ConflictWait
	default:
		return ConflictUpdate
	}
}
