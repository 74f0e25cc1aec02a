package rules_test

import (
	"math"
	"testing"

	"github.com/queen-app/queen-app/internal/rules"
)

// TestEscalationKind: the valve's escalation_kind vectors.
func TestEscalationKind(t *testing.T) {
	for _, c := range []struct {
		crit            uint32
		sbc, dead, gave bool
		want            rules.Kind
	}{
		{0, T, T, T, rules.KindNoCriteria},
		{3, T, T, F, rules.KindSendBackCeiling},
		{3, F, T, T, rules.KindDeadLetter},
		{3, F, F, T, rules.KindReviewerGaveUp},
		{3, F, F, F, rules.KindUnrecorded},
		{1, T, F, F, rules.KindSendBackCeiling},
		{1, F, F, F, rules.KindUnrecorded},
	} {
		if got := rules.EscalationKind(c.crit, c.sbc, c.dead, c.gave); got != c.want {
			t.Errorf("EscalationKind(%d, %v, %v, %v) = %d, want %d", c.crit, c.sbc, c.dead, c.gave, got, c.want)
		}
	}
}

// TestRecordedEscalationKind: counters first, a recorded-only kind after.
func TestRecordedEscalationKind(t *testing.T) {
	for _, c := range []struct {
		rec             rules.Kind
		crit            uint32
		sbc, dead, gave bool
		want            rules.Kind
	}{
		{rules.KindEffectGaveUp, 3, F, F, F, rules.KindEffectGaveUp},
		{rules.KindUnrecorded, 3, F, F, F, rules.KindUnrecorded},
		{rules.KindEmptyAccept, 3, F, F, F, rules.KindEmptyAccept},
		{rules.KindBeyondThePatch, 3, F, F, F, rules.KindBeyondThePatch},
		{rules.KindBaseTruthAlone, 3, F, F, F, rules.KindBaseTruthAlone},
		{rules.KindEffectGaveUp, 0, F, F, F, rules.KindNoCriteria},
		{rules.KindEffectGaveUp, 3, T, F, F, rules.KindSendBackCeiling},
		{rules.KindEffectGaveUp, 3, F, T, F, rules.KindDeadLetter},
		{rules.KindEffectGaveUp, 3, F, F, T, rules.KindReviewerGaveUp},
		{rules.KindDeadLetter, 3, F, F, F, rules.KindUnrecorded},
		{rules.KindNoCriteria, 3, F, F, F, rules.KindUnrecorded},
		{rules.Kind(9), 3, F, F, F, rules.KindUnrecorded},
	} {
		if got := rules.RecordedEscalationKind(c.rec, c.crit, c.sbc, c.dead, c.gave); got != c.want {
			t.Errorf("RecordedEscalationKind(%d, %d, %v, %v, %v) = %d, want %d", c.rec, c.crit, c.sbc, c.dead, c.gave, got, c.want)
		}
	}
	recorded := map[rules.Kind]bool{5: true, 6: true, 7: true, 8: true}
	for k := 0; k < 256; k++ {
		if got := rules.IsRecordedKind(rules.Kind(k)); got != recorded[rules.Kind(k)] {
			t.Errorf("IsRecordedKind(%d) = %v", k, got)
		}
	}
	backfill := map[rules.Kind]bool{rules.KindNoCriteria: true, rules.KindBeyondThePatch: true, rules.KindBaseTruthAlone: true}
	for k := 0; k < 256; k++ {
		if got := rules.WantsBackfill(rules.Kind(k)); got != backfill[rules.Kind(k)] {
			t.Errorf("WantsBackfill(%d) = %v", k, got)
		}
	}
}

var stepWords = map[rules.Step]string{rules.StepHold: "HOLD", rules.StepRelease: "RELEASE", rules.StepBackfill: "BACKFILL", rules.StepClose: "CLOSE"}

// TestNextStep: the valve's next_step vectors, and the ones the claim card re-asserts.
func TestNextStep(t *testing.T) {
	for _, c := range []struct {
		k         rules.Kind
		idle, rel uint32
		want      rules.Step
	}{
		{rules.KindEffectGaveUp, 29, 0, rules.StepHold},
		{rules.KindEffectGaveUp, 30, 0, rules.StepRelease},
		{rules.KindEffectGaveUp, 30, 1, rules.StepClose},
		{rules.KindDeadLetter, 0, 0, rules.StepHold},
		{rules.KindDeadLetter, 29, 0, rules.StepHold},
		{rules.KindDeadLetter, 30, 0, rules.StepRelease},
		{rules.KindReviewerGaveUp, 30, 0, rules.StepRelease},
		{rules.KindEmptyAccept, 30, 0, rules.StepRelease},
		{rules.KindUnrecorded, 30, 0, rules.StepRelease},
		{rules.KindUnrecorded, 29, 0, rules.StepHold},
		{rules.KindSendBackCeiling, 59, 0, rules.StepHold},
		{rules.KindSendBackCeiling, 60, 0, rules.StepRelease},
		{rules.KindSendBackCeiling, 60, 1, rules.StepClose},
		{rules.KindDeadLetter, 0, 1, rules.StepClose},
		{rules.KindSendBackCeiling, 0, 1, rules.StepClose},
		{rules.KindUnrecorded, 0, 5, rules.StepClose},
		{rules.KindNoCriteria, 0, 0, rules.StepBackfill},
		{rules.KindNoCriteria, 0, 5, rules.StepBackfill},
		{rules.KindBeyondThePatch, 119, 0, rules.StepBackfill},
		{rules.KindBaseTruthAlone, 120, 0, rules.StepClose},
		{rules.KindNoCriteria, 120, 0, rules.StepClose},
		{rules.Kind(9), 30, 0, rules.StepRelease},
		{rules.Kind(9), 29, 0, rules.StepHold},
	} {
		if got := rules.NextStep(c.k, c.idle, c.rel); got != c.want {
			t.Errorf("NextStep(%d, %d, %d) = %s, want %s", c.k, c.idle, c.rel, stepWords[got], stepWords[c.want])
		}
	}
	// A release fires once: at MAX_RELEASES the ceiling's release is a close.
	if got := rules.NextStep(rules.KindSendBackCeiling, 60, rules.MaxReleases); got != rules.StepClose {
		t.Errorf("NextStep(SEND_BACK_CEILING, 60, MaxReleases) = %s, want CLOSE", stepWords[got])
	}
}

// TestStepHoldsFiles: the valve's holds_files(step).
func TestStepHoldsFiles(t *testing.T) {
	for _, c := range []struct {
		s    rules.Step
		want bool
	}{
		{rules.NextStep(rules.KindDeadLetter, 29, 0), true},
		{rules.NextStep(rules.KindNoCriteria, 0, 0), true},
		{rules.StepHold, true},
		{rules.StepBackfill, true},
		{rules.StepClose, false},
		{rules.StepRelease, false},
		{rules.Step(4), false},
		{rules.Step(255), false},
	} {
		if got := rules.StepHoldsFiles(c.s); got != c.want {
			t.Errorf("StepHoldsFiles(%d) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestPRStep: the reviewer's pr_step vectors.
func TestPRStep(t *testing.T) {
	for _, c := range []struct {
		queen, changes, judged bool
		heads, hours           uint32
		want                   rules.PRStepKind
	}{
		{T, T, T, 1, 0, rules.PRWaitFix},
		{T, T, T, 2, 47, rules.PRWaitFix},
		{T, T, T, 3, 0, rules.PRClose},
		{T, T, T, 1, 48, rules.PRClose},
		{T, T, F, 2, 100, rules.PRJudge},
		{F, T, T, 9, 900, rules.PRNone},
		{T, F, T, 0, 900, rules.PRNone},
		{F, F, F, 0, 0, rules.PRNone},
		{T, F, F, 0, 0, rules.PRJudge},
		{T, T, T, 0, math.MaxUint32, rules.PRClose},
	} {
		if got := rules.PRStep(c.queen, c.changes, c.judged, c.heads, c.hours); got != c.want {
			t.Errorf("PRStep(%v, %v, %v, %d, %d) = %d, want %d", c.queen, c.changes, c.judged, c.heads, c.hours, got, c.want)
		}
	}
}

// TestConflictStep: the publisher's conflict_step vectors.
func TestConflictStep(t *testing.T) {
	for _, c := range []struct {
		queen, conflicting, failed bool
		updates, hours, rel, queue uint32
		want                       rules.ConflictStepKind
	}{
		{T, T, F, 0, 0, 0, 0, rules.ConflictUpdate},
		{T, T, F, 1, 47, 0, 50, rules.ConflictUpdate},
		{T, T, F, 0, 0, 0, 51, rules.ConflictWait},
		{T, T, F, 1, 47, 1, 273, rules.ConflictWait},
		{T, T, T, 1, 0, 0, 0, rules.ConflictRedo},
		{T, T, F, 2, 0, 0, 0, rules.ConflictRedo},
		{T, T, F, 1, 48, 0, 273, rules.ConflictRedo},
		{T, T, T, 1, 0, 1, 0, rules.ConflictClose},
		{T, T, F, 2, 0, 1, 0, rules.ConflictClose},
		{T, T, F, 0, 48, 1, 0, rules.ConflictClose},
		{T, F, T, 9, 900, 9, 999, rules.ConflictNone},
		{F, T, T, 9, 900, 0, 0, rules.ConflictNone},
	} {
		if got := rules.ConflictStep(c.queen, c.conflicting, c.failed, c.updates, c.hours, c.rel, c.queue); got != c.want {
			t.Errorf("ConflictStep(%v, %v, %v, %d, %d, %d, %d) = %d, want %d", c.queen, c.conflicting, c.failed, c.updates, c.hours, c.rel, c.queue, got, c.want)
		}
	}
}
