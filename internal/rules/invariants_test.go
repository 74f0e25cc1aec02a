package rules_test

import (
	"math"
	"testing"

	"github.com/queen-app/queen-app/internal/rules"
)

// TestCodesNeverMove: callers, stored rows and dashboards read these numbers.
func TestCodesNeverMove(t *testing.T) {
	type code struct {
		name string
		got  int
		want int
	}
	for _, c := range []code{
		{"ClaimRunning", int(rules.ClaimRunning), 0},
		{"ClaimAccepted", int(rules.ClaimAccepted), 1},
		{"ClaimRejected", int(rules.ClaimRejected), 2},
		{"ClaimAwaitingReview", int(rules.ClaimAwaitingReview), 3},
		{"ClaimFailed", int(rules.ClaimFailed), 4},
		{"ClaimCancelled", int(rules.ClaimCancelled), 5},
		{"VerdictNone", int(rules.VerdictNone), 0},
		{"VerdictAccept", int(rules.VerdictAccept), 1},
		{"VerdictSendBack", int(rules.VerdictSendBack), 2},
		{"VerdictEscalate", int(rules.VerdictEscalate), 3},
		{"VerdictWait", int(rules.VerdictWait), 4},
		{"VerdictFailed", int(rules.VerdictFailed), 5},
		{"VerdictCancelled", int(rules.VerdictCancelled), 6},
		{"VerdictEmpty", int(rules.VerdictEmpty), 7},
		{"VerdictStaleContract", int(rules.VerdictStaleContract), 8},
		{"VerdictObsolete", int(rules.VerdictObsolete), 9},
		{"VerdictOther", int(rules.VerdictOther), 10},
		{"StageWorking", int(rules.StageWorking), 0},
		{"StageSendBack", int(rules.StageSendBack), 1},
		{"StageAwaiting", int(rules.StageAwaiting), 2},
		{"StageEscalated", int(rules.StageEscalated), 3},
		{"StageDone", int(rules.StageDone), 4},
		{"KindUnrecorded", int(rules.KindUnrecorded), 0},
		{"KindNoCriteria", int(rules.KindNoCriteria), 1},
		{"KindSendBackCeiling", int(rules.KindSendBackCeiling), 2},
		{"KindDeadLetter", int(rules.KindDeadLetter), 3},
		{"KindReviewerGaveUp", int(rules.KindReviewerGaveUp), 4},
		{"KindEmptyAccept", int(rules.KindEmptyAccept), 5},
		{"KindBeyondThePatch", int(rules.KindBeyondThePatch), 6},
		{"KindBaseTruthAlone", int(rules.KindBaseTruthAlone), 7},
		{"KindEffectGaveUp", int(rules.KindEffectGaveUp), 8},
		{"StepHold", int(rules.StepHold), 0},
		{"StepRelease", int(rules.StepRelease), 1},
		{"StepBackfill", int(rules.StepBackfill), 2},
		{"StepClose", int(rules.StepClose), 3},
		{"PRNone", int(rules.PRNone), 0},
		{"PRJudge", int(rules.PRJudge), 1},
		{"PRWaitFix", int(rules.PRWaitFix), 2},
		{"PRClose", int(rules.PRClose), 3},
		{"ConflictNone", int(rules.ConflictNone), 0},
		{"ConflictWait", int(rules.ConflictWait), 1},
		{"ConflictUpdate", int(rules.ConflictUpdate), 2},
		{"ConflictRedo", int(rules.ConflictRedo), 3},
		{"ConflictClose", int(rules.ConflictClose), 4},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestConstants: the reference's numbers and words.
func TestConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"RetryFloorMinutes", rules.RetryFloorMinutes, 30},
		{"EmptyFloorMinutes", rules.EmptyFloorMinutes, 30},
		{"SendBackFloorMinutes", rules.SendBackFloorMinutes, 60},
		{"CeilingFloorMinutes", rules.CeilingFloorMinutes, 60},
		{"BackfillWindowMinutes", rules.BackfillWindowMinutes, 120},
		{"WaitFrozenFloorMinutes", rules.WaitFrozenFloorMinutes, 360},
		{"PolicyHoldMinutes", rules.PolicyHoldMinutes, 2880},
		{"DefaultSendBackCeiling", rules.DefaultSendBackCeiling, 2},
		{"FreeAttemptCeiling", rules.FreeAttemptCeiling, 3},
		{"ReviewerMissCeiling", rules.ReviewerMissCeiling, 3},
		{"UnreadCriteria", rules.UnreadCriteria, 1},
		{"MaxReleases", rules.MaxReleases, 1},
		{"AwaitingHoldMinutes", rules.AwaitingHoldMinutes, 30},
		{"SendBackHoldMinutes", rules.SendBackHoldMinutes, 120},
		{"PRFixAttempts", rules.PRFixAttempts, 2},
		{"PRFixWindowHours", rules.PRFixWindowHours, 48},
		{"ConflictUpdates", rules.ConflictUpdates, 2},
		{"UpdateQueueCeiling", rules.UpdateQueueCeiling, 50},
		{"ConflictWaitHours", rules.ConflictWaitHours, 48},
		{"ReviewQueueMax", rules.ReviewQueueMax, 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if uint64(rules.MaxMinutes) != math.MaxUint32 {
		t.Errorf("MaxMinutes = %d", uint64(rules.MaxMinutes))
	}
	for _, c := range [][2]string{
		{rules.ObsoleteState, "obsolete"},
		{rules.ReviewerLogin, "t27-bees[bot]"},
		{rules.QueenBranchPrefix, "queen-"},
	} {
		if c[0] != c[1] {
			t.Errorf("constant %q, want %q", c[0], c[1])
		}
	}
}

// TestInvariants: the cards' invariants, each as the reference states it.
func TestInvariants(t *testing.T) {
	floors := []int{rules.RetryFloorMinutes, rules.CeilingFloorMinutes, rules.BackfillWindowMinutes,
		rules.WaitFrozenFloorMinutes, rules.PolicyHoldMinutes}
	for i := 1; i < len(floors); i++ {
		if floors[i-1] >= floors[i] {
			t.Errorf("floors do not rise: %v", floors)
		}
	}
	if rules.EmptyFloorMinutes != rules.RetryFloorMinutes || rules.SendBackFloorMinutes != rules.CeilingFloorMinutes {
		t.Error("the claim card's floors must be the valve's")
	}
	for name, v := range map[string]int{
		"DefaultSendBackCeiling": rules.DefaultSendBackCeiling, "FreeAttemptCeiling": rules.FreeAttemptCeiling,
		"ReviewerMissCeiling": rules.ReviewerMissCeiling, "UnreadCriteria": rules.UnreadCriteria,
		"MaxReleases": rules.MaxReleases, "PRFixAttempts": rules.PRFixAttempts, "ConflictUpdates": rules.ConflictUpdates,
	} {
		if v <= 0 {
			t.Errorf("%s = %d, want > 0", name, v)
		}
	}
	if !(rules.SendBackHoldMinutes > rules.AwaitingHoldMinutes && rules.AwaitingHoldMinutes > 0) {
		t.Error("want send-back grace > awaiting grace > 0")
	}
	if rules.PRFixWindowHours*60 > rules.PolicyHoldMinutes || rules.ConflictWaitHours*60 > rules.PolicyHoldMinutes {
		t.Error("48 h windows must end within the policy hold")
	}
	if !(rules.StepHold < rules.StepRelease && rules.StepRelease < rules.StepBackfill && rules.StepBackfill < rules.StepClose) {
		t.Error("want HOLD < RELEASE < BACKFILL < CLOSE")
	}
	// No hold outlives the policy's own 48 hours.
	for k := 0; k < 256; k++ {
		if rules.StepHoldsFiles(rules.NextStep(rules.Kind(k), rules.PolicyHoldMinutes, 0)) {
			t.Errorf("kind %d still holds files at the policy hold", k)
		}
	}
	// A freed row never holds files.
	for s := 0; s < 256; s++ {
		for _, m := range []uint32{0, 1, 29, 119, math.MaxUint32} {
			if rules.HoldsFiles(rules.EffectiveStage(rules.Free, rules.HoldStage(s)), m) {
				t.Errorf("holds_files(held_stage(FREE, %d), %d) is true", s, m)
			}
		}
	}
	// claim_of only answers the six claims; every grid row finishes in one.
	forEachGridRow(func(_ string, in rules.ClaimInput) {
		if c := rules.ClaimOf(in); c > rules.ClaimCancelled {
			t.Fatalf("ClaimOf(%+v) = %d, no claim", in, c)
		}
	})
}

// TestClaimMonotone: with everything else fixed, more idle time never turns a
// released or cancelled row back into a held one, except the documented
// spent-release quirk (cancelled before 60, failed from 60).
func TestClaimMonotone(t *testing.T) {
	held := func(c rules.Claim) bool { return c == rules.ClaimRejected || c == rules.ClaimAwaitingReview }
	forEachGridRow(func(word string, in rules.ClaimInput) {
		if in.IdleMinutes != 0 {
			return
		}
		prev := rules.ClaimOf(in)
		for _, idle := range gridIdle[1:] {
			in.IdleMinutes = idle
			c := rules.ClaimOf(in)
			quirk := prev == rules.ClaimCancelled && c == rules.ClaimFailed && in.Verdict == rules.VerdictSendBack && idle >= 60
			if !held(prev) && c != prev && !quirk {
				t.Fatalf("word %q %+v: %s then %s", word, in, prev, c)
			}
			prev = c
		}
	})
}
