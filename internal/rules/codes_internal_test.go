package rules

import "testing"

// TestCounts: the cards' count constants, which are unexported here.
func TestCounts(t *testing.T) {
	if claimStates != 6 || len(claimWords) != int(claimStates) {
		t.Errorf("CLAIM_STATES = %d with %d words, want 6", claimStates, len(claimWords))
	}
	if verdictCodes != 11 || VerdictOther != verdictCodes-1 {
		t.Errorf("VERDICT_CODES = %d, V_OTHER = %d, want 11 and 10", verdictCodes, VerdictOther)
	}
	if len(verdictWords) != int(VerdictOther) {
		t.Errorf("verdict table has %d words, want 10", len(verdictWords))
	}
	if holdStageCount != 5 || len(stageWords) != int(holdStageCount) {
		t.Errorf("HOLD_STAGES = %d with %d words, want 5", holdStageCount, len(stageWords))
	}
}
