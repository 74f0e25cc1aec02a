package rules

// HoldStage is the holds card's stage of a dispatch row (HS_*).
type HoldStage uint8

// Stage codes never move: callers and the chart's dashboards read them.
const (
	StageWorking   HoldStage = 0 // HS_WORKING: queued or running; a bee may be writing
	StageSendBack  HoldStage = 1 // HS_SEND_BACK: verdict was a send-back
	StageAwaiting  HoldStage = 2 // HS_AWAITING: finished, no verdict yet
	StageEscalated HoldStage = 3 // HS_ESCALATED: waiting for a person; no person is in the loop
	StageDone      HoldStage = 4 // HS_DONE: accepted, failed, cancelled
	holdStageCount HoldStage = 5 // HOLD_STAGES: first invalid code
)

// Grace after finished_at, in whole minutes. Finished work releases after a
// short grace so a slow review never idles the swarm; a send-back gets longer
// because the same work was expected back.
const (
	AwaitingHoldMinutes = 30  // AWAITING_HOLD_MINUTES
	SendBackHoldMinutes = 120 // SEND_BACK_HOLD_MINUTES
)

var stageWords = [...]string{"working", "send_back", "awaiting", "escalated", "done"}

// String returns the stage word other programs see (docs/design.md).
func (s HoldStage) String() string {
	if s < holdStageCount {
		return stageWords[s]
	}
	return "invalid"
}

// HoldsFiles implements holds_files(stage, minutes): whether a row in stage s,
// finished minutes ago, still shuts other bees out of its owned paths.
// minutes counts from finished_at, never from the verdict, because a wait
// rewrites the verdict's time every round.
func HoldsFiles(s HoldStage, minutes uint32) bool {
	switch s {
	case StageWorking:
		return true
	case StageSendBack:
		return minutes < SendBackHoldMinutes
	case StageAwaiting:
		return minutes < AwaitingHoldMinutes
	default:
		return false
	}
}

// StageOf implements the holds caller's holdStage(row): the stage of a row
// from whether it finished and its review_state ("" for null).
func StageOf(finished bool, reviewState string) HoldStage {
	if !finished {
		return StageWorking
	}
	switch reviewState {
	case "sendBack":
		return StageSendBack
	case "escalate":
		return StageEscalated
	case "accept", "failed", "cancelled", "obsolete", "stale-contract":
		return StageDone
	default:
		return StageAwaiting
	}
}

// Liveness is the holds card's answer to "does this row still claim
// anything" (CL_FREE / CL_LIVE). It is a type of its own, never a claim code:
// the card's numbers for it were never published.
type Liveness uint8

const (
	Free Liveness = iota // CL_FREE: claims neither its issue nor its files
	Live                 // CL_LIVE: left to the claim card and the valve
)

// String returns "free" or "live", the words of the claim view.
func (l Liveness) String() string {
	if l == Free {
		return "free"
	}
	return "live"
}

// SendBackLiveness implements send_back_claim(send_backs, ceiling). No bee
// ever comes back to a send-back under its ceiling, yet on the live Queen such
// rows kept their issue for 60 minutes and then their files for another 120:
// they claim nothing. At or over the ceiling the review valve decides.
func SendBackLiveness(sendBacks, ceiling uint32) Liveness {
	if sendBacks < ceiling {
		return Free
	}
	return Live
}

// AcceptLiveness implements accept_claim(read, open, merged, closed_unmerged)
// over counts of the pull requests of the branch. Accepted work whose
// branch has only PRs closed unmerged was thrown away, yet stayed claimed
// forever on the live Queen: it is free. A list that could not be read frees
// nothing; merged or open work stays; no PR means the work waits in the export.
func AcceptLiveness(listRead bool, open, merged, closedUnmerged uint32) Liveness {
	if listRead && merged == 0 && open == 0 && closedUnmerged > 0 {
		return Free
	}
	return Live
}

// EffectiveStage implements held_stage(claim, stage): a freed row holds no
// files, whatever stage its verdict put it in.
func EffectiveStage(l Liveness, s HoldStage) HoldStage {
	if l == Free {
		return StageDone
	}
	return s
}
