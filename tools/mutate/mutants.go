package main

import (
	"path"
	"strings"
)

// Mutant is one deliberate break of a decision: the exact original snippet
// of File and its replacement. Equivalent, when set, says why the mutant
// cannot change any behaviour; such a mutant must survive and is never
// counted as killed.
type Mutant struct {
	ID         string
	File       string
	Old, New   string
	Desc       string
	Equivalent string
	// Tests is the go test -run of the tests that must kill the mutant; ""
	// runs them all. The Redis and git tests of a whole package run 12-40s:
	// a mutant runs those that reach the code it breaks.
	Tests string
	// Pkgs are the packages whose tests run; nil is File's own package.
	Pkgs []string
}

// Packages are the packages whose tests run against m.
func (m Mutant) Packages() []string {
	if len(m.Pkgs) > 0 {
		return m.Pkgs
	}
	return []string{"./" + path.Dir(m.File) + "/"}
}

// Package is the mutated file's package, as the summary counts it.
func (m Mutant) Package() string { return strings.TrimSuffix(path.Dir(m.File), "/") }

const (
	holds  = "internal/rules/holds.go"
	claim  = "internal/rules/claim.go"
	valve  = "internal/rules/valve.go"
	review = "internal/rules/reviewfirst.go"
)

// mutants is the fixed, hand-written list. Keep each Old exactly once in its
// file (TestSnippetsFoundOnce checks it).
var ruleMutants = []Mutant{
	// holds.go: graces.
	{ID: "H01", File: holds, Old: "AwaitingHoldMinutes = 30 ", New: "AwaitingHoldMinutes = 31 ", Desc: "awaiting grace 30 -> 31"},
	{ID: "H02", File: holds, Old: "AwaitingHoldMinutes = 30 ", New: "AwaitingHoldMinutes = 29 ", Desc: "awaiting grace 30 -> 29"},
	{ID: "H03", File: holds, Old: "SendBackHoldMinutes = 120 ", New: "SendBackHoldMinutes = 121 ", Desc: "send-back grace 120 -> 121"},
	{ID: "H04", File: holds, Old: "SendBackHoldMinutes = 120 ", New: "SendBackHoldMinutes = 119 ", Desc: "send-back grace 120 -> 119"},
	// holds.go: HoldsFiles.
	{ID: "H05", File: holds, Old: "case StageWorking:\n\t\treturn true", New: "case StageWorking:\n\t\treturn minutes < MaxMinutes", Desc: "working stops holding at the saturated clock"},
	{ID: "H06", File: holds, Old: "return minutes < SendBackHoldMinutes", New: "return minutes <= SendBackHoldMinutes", Desc: "send-back hold < loosened to <="},
	{ID: "H07", File: holds, Old: "return minutes < AwaitingHoldMinutes", New: "return minutes <= AwaitingHoldMinutes", Desc: "awaiting hold < loosened to <="},
	{ID: "H08", File: holds, Old: "return minutes < SendBackHoldMinutes", New: "return minutes < AwaitingHoldMinutes", Desc: "send-back branch uses the awaiting grace"},
	{ID: "H09", File: holds, Old: "return minutes < AwaitingHoldMinutes", New: "return minutes < SendBackHoldMinutes", Desc: "awaiting branch uses the send-back grace"},
	{ID: "H10", File: holds, Old: "default:\n\t\treturn false", New: "default:\n\t\treturn true", Desc: "escalated/done/invalid stages hold files"},
	{ID: "H11", File: holds, Old: "default:\n\t\treturn false", New: "case StageEscalated:\n\t\treturn minutes < AwaitingHoldMinutes\n\tdefault:\n\t\treturn false", Desc: "escalated stage gets the awaiting grace"},
	{ID: "H12", File: holds, Old: "default:\n\t\treturn false", New: "default:\n\t\treturn s >= holdStageCount", Desc: "invalid stage codes hold files"},
	// holds.go: StageOf.
	{ID: "H13", File: holds, Old: "if !finished {\n\t\treturn StageWorking", New: "if !finished {\n\t\treturn StageAwaiting", Desc: "unfinished row is awaiting, not working"},
	{ID: "H14", File: holds, Old: "case \"sendBack\":\n\t\treturn StageSendBack", New: "case \"sendBack\":\n\t\treturn StageAwaiting", Desc: "sendBack stage -> awaiting"},
	{ID: "H15", File: holds, Old: "case \"escalate\":\n\t\treturn StageEscalated", New: "case \"escalate\":\n\t\treturn StageAwaiting", Desc: "escalate stage -> awaiting"},
	{ID: "H16", File: holds, Old: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\":", New: "case \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\":", Desc: "accept dropped from done"},
	{ID: "H17", File: holds, Old: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\":", New: "case \"accept\", \"cancelled\", \"obsolete\", \"stale-contract\":", Desc: "failed dropped from done"},
	{ID: "H18", File: holds, Old: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\":", New: "case \"accept\", \"failed\", \"obsolete\", \"stale-contract\":", Desc: "cancelled dropped from done"},
	{ID: "H19", File: holds, Old: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\":", New: "case \"accept\", \"failed\", \"cancelled\", \"stale-contract\":", Desc: "obsolete dropped from done"},
	{ID: "H20", File: holds, Old: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\":", New: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\":", Desc: "stale-contract dropped from done"},
	{ID: "H21", File: holds, Old: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\":", New: "case \"accept\", \"failed\", \"cancelled\", \"obsolete\", \"stale-contract\", \"empty\":", Desc: "empty moved to done"},
	{ID: "H22", File: holds, Old: "case \"sendBack\":\n\t\treturn StageSendBack\n\tcase \"escalate\":\n\t\treturn StageEscalated\n\tcase \"accept\", ", New: "case \"sendBack\", \"accept\":\n\t\treturn StageSendBack\n\tcase \"escalate\":\n\t\treturn StageEscalated\n\tcase ", Desc: "accept moved to send_back"},
	{ID: "H23", File: holds, Old: "case \"escalate\":\n\t\treturn StageEscalated\n\tcase \"accept\", ", New: "case \"escalated\":\n\t\treturn StageEscalated\n\tcase \"escalate\", \"accept\", ", Desc: "escalate moved to done (escalated takes its place)"},
	{ID: "H24", File: holds, Old: "default:\n\t\treturn StageAwaiting", New: "default:\n\t\treturn StageDone", Desc: "unknown words are done, not awaiting"},
	{ID: "H25", File: holds, Old: "\"working\", \"send_back\", \"awaiting\"", New: "\"working\", \"sendBack\", \"awaiting\"", Desc: "stage word send_back -> sendBack"},
	{ID: "H26", File: holds, Old: "\"working\", \"send_back\", \"awaiting\"", New: "\"working\", \"send_back\", \"awaitingReview\"", Desc: "stage word awaiting -> awaitingReview"},
	{ID: "H27", File: holds, Old: "if s < holdStageCount {", New: "if s <= holdStageCount {", Desc: "stage String bound < -> <= (index out of range)"},
	{ID: "H28", File: holds, Old: "return \"invalid\"", New: "return \"done\"", Desc: "invalid stage code reads done"},
	// holds.go: liveness.
	{ID: "H29", File: holds, Old: "return \"free\"", New: "return \"Free\"", Desc: "liveness word free -> Free"},
	{ID: "H30", File: holds, Old: "return \"live\"", New: "return \"alive\"", Desc: "liveness word live -> alive"},
	{ID: "H31", File: holds, Old: "if sendBacks < ceiling {", New: "if sendBacks <= ceiling {", Desc: "send_back_claim < loosened to <="},
	{ID: "H32", File: holds, Old: "if sendBacks < ceiling {", New: "if sendBacks < ceiling-1 {", Desc: "send_back_claim reads the ceiling one lower"},
	{ID: "H33", File: holds, Old: "if sendBacks < ceiling {\n\t\treturn Free\n\t}\n\treturn Live", New: "if sendBacks < ceiling {\n\t\treturn Live\n\t}\n\treturn Free", Desc: "send_back_claim answers swapped"},
	{ID: "H34", File: holds, Old: "if listRead && merged == 0", New: "if merged == 0", Desc: "accept_claim frees on an unread PR list"},
	{ID: "H35", File: holds, Old: "merged == 0 && open", New: "merged <= 1 && open", Desc: "accept_claim merged == 0 loosened to <= 1"},
	{ID: "H36", File: holds, Old: "open == 0 && closedUnmerged", New: "open <= 1 && closedUnmerged", Desc: "accept_claim open == 0 loosened to <= 1"},
	{ID: "H37", File: holds, Old: "closedUnmerged > 0 {", New: "closedUnmerged >= 0 {", Desc: "accept_claim closed > 0 loosened to >= 0"},
	{ID: "H38", File: holds, Old: "merged == 0 && open == 0 && ", New: "open == 0 && ", Desc: "accept_claim ignores merged PRs"},
	{ID: "H39", File: holds, Old: "open == 0 && closedUnmerged", New: "closedUnmerged", Desc: "accept_claim ignores open PRs"},
	{ID: "H40", File: holds, Old: "merged == 0 && open == 0 && closedUnmerged > 0 {", New: "merged == 0 && open == 0 {", Desc: "accept_claim frees with no PR at all"},
	{ID: "H41", File: holds, Old: "if l == Free {\n\t\treturn StageDone", New: "if l != Free {\n\t\treturn StageDone", Desc: "held_stage condition == -> !="},
	{ID: "H42", File: holds, Old: "return StageDone\n\t}\n\treturn s\n", New: "return StageAwaiting\n\t}\n\treturn s\n", Desc: "a freed row is awaiting (30-minute hold), not done"},
	{ID: "H43", File: holds, Old: "return StageDone\n\t}\n\treturn s\n", New: "return StageDone\n\t}\n\treturn s &^ 1\n", Desc: "held_stage(LIVE) changes the stage"},

	// claim.go: codes and words.
	{ID: "C01", File: claim, Old: "ClaimCancelled      Claim = 5", New: "ClaimCancelled      Claim = 6", Desc: "claim code cancelled 5 -> 6"},
	{ID: "C02", File: claim, Old: "ClaimFailed         Claim = 4", New: "ClaimFailed         Claim = 3", Desc: "claim code failed 4 -> 3"},
	{ID: "C03", File: claim, Old: "VerdictOther         Verdict = 10", New: "VerdictOther         Verdict = 11", Desc: "verdict code other 10 -> 11"},
	{ID: "C04", File: claim, Old: "VerdictObsolete      Verdict = 9", New: "VerdictObsolete      Verdict = 10", Desc: "verdict code obsolete 9 -> 10"},
	{ID: "C05", File: claim, Old: "{\"running\", \"accepted\"", New: "{\"run\", \"accepted\"", Desc: "claim word running -> run"},
	{ID: "C06", File: claim, Old: "\"running\", \"accepted\", \"rejected\"", New: "\"running\", \"accept\", \"rejected\"", Desc: "claim word accepted -> accept"},
	{ID: "C07", File: claim, Old: "\"accepted\", \"rejected\", \"awaitingReview\"", New: "\"accepted\", \"sendBack\", \"awaitingReview\"", Desc: "claim word rejected -> sendBack"},
	{ID: "C08", File: claim, Old: "\"rejected\", \"awaitingReview\", \"failed\"", New: "\"rejected\", \"awaiting_review\", \"failed\"", Desc: "claim word awaitingReview -> awaiting_review"},
	{ID: "C09", File: claim, Old: "\"awaitingReview\", \"failed\", \"cancelled\"}", New: "\"awaitingReview\", \"released\", \"cancelled\"}", Desc: "claim word failed -> released"},
	{ID: "C10", File: claim, Old: "\"failed\", \"cancelled\"}", New: "\"failed\", \"canceled\"}", Desc: "claim word cancelled -> canceled"},
	{ID: "C11", File: claim, Old: "if c < claimStates {", New: "if c <= claimStates {", Desc: "claim String bound < -> <= (index out of range)"},
	{ID: "C12", File: claim, Old: "return claimWords[ClaimAwaitingReview]", New: "return claimWords[ClaimFailed]", Desc: "a code outside the card reads failed"},
	{ID: "C13", File: claim, Old: "return 0, false", New: "return ClaimRunning, true", Desc: "ParseClaim accepts any word"},
	{ID: "C14", File: claim, Old: "return c <= ClaimAwaitingReview", New: "return c < ClaimAwaitingReview", Desc: "ClaimsIssue <= -> < (awaitingReview frees its issue)"},
	{ID: "C15", File: claim, Old: "return c <= ClaimAwaitingReview", New: "return c != ClaimFailed && c != ClaimCancelled", Desc: "ClaimsIssue true for codes outside the card"},
	// claim.go: the ten-word table.
	{ID: "C16", File: claim, Old: "\tVerdictNone:          \"\",\n", New: "", Desc: "verdict word \"\" dropped from the table",
		Equivalent: "the table is a keyed array: index 0 keeps its zero value \"\", so the table is unchanged"},
	{ID: "C17", File: claim, Old: "VerdictNone:          \"\",", New: "VerdictNone:          \"null\",", Desc: "verdict word \"\" -> \"null\""},
	{ID: "C18", File: claim, Old: "\tVerdictAccept:        \"accept\",\n", New: "", Desc: "verdict word accept dropped"},
	{ID: "C19", File: claim, Old: "\tVerdictSendBack:      \"sendBack\",\n", New: "", Desc: "verdict word sendBack dropped"},
	{ID: "C20", File: claim, Old: "\tVerdictEscalate:      \"escalate\",\n", New: "", Desc: "verdict word escalate dropped"},
	{ID: "C21", File: claim, Old: "\tVerdictWait:          \"wait\",\n", New: "", Desc: "verdict word wait dropped"},
	{ID: "C22", File: claim, Old: "\tVerdictFailed:        \"failed\",\n", New: "", Desc: "verdict word failed dropped"},
	{ID: "C23", File: claim, Old: "\tVerdictCancelled:     \"cancelled\",\n", New: "", Desc: "verdict word cancelled dropped"},
	{ID: "C24", File: claim, Old: "\tVerdictEmpty:         \"empty\",\n", New: "", Desc: "verdict word empty dropped"},
	{ID: "C25", File: claim, Old: "\tVerdictStaleContract: \"stale-contract\",\n", New: "", Desc: "verdict word stale-contract dropped"},
	{ID: "C26", File: claim, Old: "\tVerdictObsolete:      ObsoleteState,\n", New: "", Desc: "verdict word obsolete dropped"},
	// claim.go: VerdictOf.
	{ID: "C27", File: claim, Old: "if w == reviewState {", New: "if w == reviewState || len(w) > 0 && len(w) == len(reviewState) && w[0]|0x20 == reviewState[0]|0x20 && w[1:] == reviewState[1:] {", Desc: "first letter matched case-insensitively (Accept reads accept)"},
	{ID: "C28", File: claim, Old: "if w == reviewState {", New: "if w == reviewState || w != \"\" && w+\"d\" == reviewState {", Desc: "escalated reads escalate (suffix tolerated)"},
	{ID: "C29", File: claim, Old: "if w == reviewState {", New: "if w == reviewState || code == 0 && reviewState == \"0\" {", Desc: "the number 0 reads as no verdict"},
	{ID: "C30", File: claim, Old: "if w == reviewState {", New: "if w == reviewState || code == 0 && len(reviewState) > 1 && reviewState[0] == '_' {", Desc: "__proto__ reads as no verdict"},
	{ID: "C31", File: claim, Old: "if w == reviewState {", New: "if w == reviewState || code == 0 && reviewState == \"constructor\" {", Desc: "constructor reads as no verdict"},
	{ID: "C32", File: claim, Old: "if w == reviewState {", New: "if w == reviewState || code == int(VerdictSendBack) && reviewState == \"SENDBACK\" {", Desc: "SENDBACK reads sendBack"},
	{ID: "C33", File: claim, Old: "return VerdictOther\n}", New: "return VerdictNone\n}", Desc: "unknown word reads as no verdict"},
	{ID: "C34", File: claim, Old: "if int(v) < len(verdictWords) {", New: "if int(v) <= len(verdictWords) {", Desc: "verdict String bound < -> <= (index out of range)"},
	{ID: "C35", File: claim, Old: "return \"other\"", New: "return \"\"", Desc: "verdict String of other reads \"\""},
	// claim.go: floors and ceilings.
	{ID: "C36", File: claim, Old: "SendBackFloorMinutes   = 60 ", New: "SendBackFloorMinutes   = 61 ", Desc: "send-back floor 60 -> 61"},
	{ID: "C37", File: claim, Old: "SendBackFloorMinutes   = 60 ", New: "SendBackFloorMinutes   = 59 ", Desc: "send-back floor 60 -> 59"},
	{ID: "C38", File: claim, Old: "WaitFrozenFloorMinutes = 360 ", New: "WaitFrozenFloorMinutes = 361 ", Desc: "frozen-wait floor 360 -> 361"},
	{ID: "C39", File: claim, Old: "WaitFrozenFloorMinutes = 360 ", New: "WaitFrozenFloorMinutes = 359 ", Desc: "frozen-wait floor 360 -> 359"},
	{ID: "C40", File: claim, Old: "DefaultSendBackCeiling = 2 ", New: "DefaultSendBackCeiling = 3 ", Desc: "default send-back ceiling 2 -> 3"},
	{ID: "C41", File: claim, Old: "DefaultSendBackCeiling = 2 ", New: "DefaultSendBackCeiling = 1 ", Desc: "default send-back ceiling 2 -> 1"},
	{ID: "C42", File: claim, Old: "FreeAttemptCeiling     = 3 ", New: "FreeAttemptCeiling     = 4 ", Desc: "free-attempt ceiling 3 -> 4"},
	{ID: "C43", File: claim, Old: "FreeAttemptCeiling     = 3 ", New: "FreeAttemptCeiling     = 2 ", Desc: "free-attempt ceiling 3 -> 2"},
	{ID: "C44", File: claim, Old: "ReviewerMissCeiling    = 3 ", New: "ReviewerMissCeiling    = 4 ", Desc: "reviewer-miss ceiling 3 -> 4"},
	{ID: "C45", File: claim, Old: "ReviewerMissCeiling    = 3 ", New: "ReviewerMissCeiling    = 2 ", Desc: "reviewer-miss ceiling 3 -> 2"},
	{ID: "C46", File: claim, Old: "UnreadCriteria         = 1 ", New: "UnreadCriteria         = 2 ", Desc: "unread criteria 1 -> 2"},
	{ID: "C47", File: claim, Old: "UnreadCriteria         = 1 ", New: "UnreadCriteria         = 0 ", Desc: "unread criteria 1 -> 0 (unread reads as none)"},
	{ID: "C48", File: claim, Old: "EmptyFloorMinutes      = RetryFloorMinutes", New: "EmptyFloorMinutes      = CeilingFloorMinutes", Desc: "empty floor is the 60-minute floor"},
	// claim.go: criteria_read_as, claim_of_step, escalation_kind_of.
	{ID: "C49", File: claim, Old: "if read {\n\t\treturn criteria", New: "if !read {\n\t\treturn criteria", Desc: "criteria_read_as condition inverted"},
	{ID: "C50", File: claim, Old: "return UnreadCriteria", New: "return criteria", Desc: "unread criteria count as read"},
	{ID: "C51", File: claim, Old: "case StepRelease:\n\t\treturn ClaimFailed", New: "case StepRelease:\n\t\treturn held", Desc: "claim_of_step RELEASE keeps the held claim"},
	{ID: "C52", File: claim, Old: "case StepClose:\n\t\treturn ClaimCancelled", New: "case StepClose:\n\t\treturn ClaimFailed", Desc: "claim_of_step CLOSE fails instead of cancels"},
	{ID: "C53", File: claim, Old: "default:\n\t\treturn held", New: "default:\n\t\treturn ClaimAwaitingReview", Desc: "claim_of_step HOLD/BACKFILL answer awaitingReview"},
	{ID: "C54", File: claim, Old: "sendBacks >= ceiling,", New: "sendBacks > ceiling,", Desc: "escalation_kind_of ceiling >= -> >"},
	{ID: "C55", File: claim, Old: "freeAttempts >= FreeAttemptCeiling,", New: "freeAttempts > FreeAttemptCeiling,", Desc: "escalation_kind_of dead letter >= -> >"},
	{ID: "C56", File: claim, Old: "reviewerMisses >= ReviewerMissCeiling,", New: "reviewerMisses > ReviewerMissCeiling,", Desc: "escalation_kind_of reviewer misses >= -> >"},
	{ID: "C57", File: claim, Old: "freeAttempts >= FreeAttemptCeiling,\n\t\treviewerMisses >= ReviewerMissCeiling,", New: "reviewerMisses >= ReviewerMissCeiling,\n\t\tfreeAttempts >= FreeAttemptCeiling,", Desc: "escalation_kind_of dead-letter and gave-up flags swapped"},
	// claim.go: claim_of.
	{ID: "C58", File: claim, Old: "underCeiling := in.SendBacks < in.Ceiling", New: "underCeiling := in.SendBacks <= in.Ceiling", Desc: "under-ceiling < loosened to <="},
	{ID: "C59", File: claim, Old: "case !in.Finished:\n\t\treturn ClaimRunning", New: "case !in.Finished:\n\t\treturn ClaimAwaitingReview", Desc: "unfinished row awaitingReview, not running"},
	{ID: "C60", File: claim, Old: "case !in.Finished:", New: "case !in.Finished && in.Verdict != VerdictAccept:", Desc: "an unfinished accept reads accepted"},
	{ID: "C61", File: claim, Old: "case in.Verdict == VerdictAccept:\n\t\treturn ClaimAccepted", New: "case in.Verdict == VerdictAccept:\n\t\treturn ClaimCancelled", Desc: "accept -> cancelled"},
	{ID: "C62", File: claim, Old: "in.Verdict == VerdictFailed || in.Verdict == VerdictCancelled:", New: "in.Verdict == VerdictFailed:", Desc: "the word cancelled no longer fails"},
	{ID: "C63", File: claim, Old: "in.Verdict == VerdictCancelled:\n\t\treturn ClaimFailed", New: "in.Verdict == VerdictCancelled:\n\t\treturn ClaimCancelled", Desc: "failed/cancelled words -> cancelled"},
	{ID: "C64", File: claim, Old: "in.IdleMinutes >= EmptyFloorMinutes", New: "in.IdleMinutes > EmptyFloorMinutes", Desc: "empty floor >= -> >"},
	{ID: "C65", File: claim, Old: "EmptyFloorMinutes:\n\t\treturn ClaimFailed", New: "EmptyFloorMinutes:\n\t\treturn ClaimCancelled", Desc: "empty past its floor -> cancelled"},
	{ID: "C66", File: claim, Old: "case in.Verdict == VerdictEmpty:\n\t\treturn ClaimRejected", New: "case in.Verdict == VerdictEmpty:\n\t\treturn ClaimAwaitingReview", Desc: "empty inside its floor -> awaitingReview"},
	{ID: "C67", File: claim, Old: "case in.Verdict == VerdictStaleContract:\n\t\treturn ClaimFailed", New: "case in.Verdict == VerdictStaleContract:\n\t\treturn ClaimCancelled", Desc: "stale-contract -> cancelled"},
	{ID: "C68", File: claim, Old: "case in.Verdict == VerdictObsolete:\n\t\treturn ClaimCancelled", New: "case in.Verdict == VerdictObsolete:\n\t\treturn ClaimFailed", Desc: "obsolete -> failed"},
	{ID: "C69", File: claim, Old: "in.IdleMinutes >= SendBackFloorMinutes", New: "in.IdleMinutes > SendBackFloorMinutes", Desc: "send-back floor >= -> >"},
	{ID: "C70", File: claim, Old: "SendBackFloorMinutes && underCeiling", New: "SendBackFloorMinutes", Desc: "send-back release ignores the ceiling"},
	{ID: "C71", File: claim, Old: "SendBackFloorMinutes && underCeiling:\n\t\treturn ClaimFailed", New: "SendBackFloorMinutes && underCeiling:\n\t\treturn ClaimRejected", Desc: "under-ceiling send-back past 60 stays rejected"},
	{ID: "C72", File: claim, Old: "NextStep(KindSendBackCeiling, in.IdleMinutes, in.Releases)", New: "NextStep(KindUnrecorded, in.IdleMinutes, in.Releases)", Desc: "send-back at ceiling takes the 30-minute path"},
	{ID: "C73", File: claim, Old: "in.Releases), ClaimRejected)", New: "in.Releases), ClaimAwaitingReview)", Desc: "held send-back reads awaitingReview"},
	{ID: "C74", File: claim, Old: "NextStep(KindSendBackCeiling, in.IdleMinutes, in.Releases)", New: "NextStep(KindSendBackCeiling, in.IdleMinutes, 0)", Desc: "send-back ignores spent releases"},
	{ID: "C75", File: claim, Old: "in.Releases), ClaimAwaitingReview)", New: "in.Releases), ClaimRejected)", Desc: "held escalation reads rejected"},
	{ID: "C76", File: claim, Old: "NextStep(kind, in.IdleMinutes, in.Releases)", New: "NextStep(kind, in.IdleMinutes, 0)", Desc: "escalation ignores spent releases"},
	{ID: "C77", File: claim, Old: "in.Ceiling, in.CriteriaRead, in.Criteria", New: "in.Ceiling, true, in.Criteria", Desc: "escalation reads unread criteria as read"},
	{ID: "C78", File: claim, Old: "EscalationKindOf(in.SendBacks, in.Ceiling,", New: "EscalationKindOf(in.SendBacks, in.Ceiling+1,", Desc: "escalation reads the ceiling one higher"},
	{ID: "C79", File: claim, Old: "in.IdleMinutes >= WaitFrozenFloorMinutes", New: "in.IdleMinutes > WaitFrozenFloorMinutes", Desc: "frozen-wait floor >= -> >"},
	{ID: "C80", File: claim, Old: "WaitFrozenFloorMinutes && underCeiling", New: "WaitFrozenFloorMinutes", Desc: "frozen wait ignores the ceiling"},
	{ID: "C81", File: claim, Old: "(in.Verdict == VerdictNone || in.Verdict == VerdictWait)", New: "(in.Verdict == VerdictWait)", Desc: "no verdict never freezes"},
	{ID: "C82", File: claim, Old: "(in.Verdict == VerdictNone || in.Verdict == VerdictWait)", New: "(in.Verdict == VerdictNone)", Desc: "wait never freezes"},
	{ID: "C83", File: claim, Old: "(in.Verdict == VerdictNone || in.Verdict == VerdictWait)", New: "(in.Verdict == VerdictNone || in.Verdict == VerdictWait || in.Verdict >= VerdictOther)", Desc: "unknown words take the wait clock"},
	{ID: "C84", File: claim, Old: "underCeiling:\n\t\treturn ClaimFailed\n\tdefault:", New: "underCeiling:\n\t\treturn ClaimCancelled\n\tdefault:", Desc: "frozen wait -> cancelled"},
	{ID: "C85", File: claim, Old: "default:\n\t\treturn ClaimAwaitingReview\n\t}", New: "default:\n\t\treturn ClaimFailed\n\t}", Desc: "claim_of's last row -> failed"},
	{ID: "C86", File: claim, Old: "case in.Verdict == VerdictStaleContract:", New: "case in.Verdict == VerdictStaleContract && in.SendBacks < 4:", Desc: "stale-contract only fails under 4 send-backs"},
	// claim.go: Minutes, MinutesSince, Count.
	{ID: "C87", File: claim, Old: "if math.IsNaN(ms) || ms <= 0 {\n\t\treturn 0\n\t}", New: "if math.IsNaN(ms) {\n\t\treturn MaxMinutes\n\t}\n\tif ms <= 0 {\n\t\treturn 0\n\t}", Desc: "Minutes: NaN saturates instead of reading 0"},
	{ID: "C88", File: claim, Old: "if math.IsNaN(ms) || ms <= 0 {", New: "if math.IsNaN(ms) {", Desc: "Minutes: negative clocks not clamped (wrap on amd64)"},
	{ID: "C89", File: claim, Old: "if math.IsNaN(ms) || ms <= 0 {", New: "if math.IsNaN(ms) || ms < 0 {", Desc: "Minutes: ms <= 0 -> < 0",
		Equivalent: "ms == 0 (or -0) goes on to floor(0/60000) = 0 and converts to 0"},
	{ID: "C90", File: claim, Old: "m := math.Floor(ms / 60000)", New: "m := math.Ceil(ms / 60000)", Desc: "Minutes: floor -> ceil"},
	{ID: "C91", File: claim, Old: "m := math.Floor(ms / 60000)", New: "m := math.Floor(ms / 60001)", Desc: "Minutes: minute of 60001 ms"},
	{ID: "C92", File: claim, Old: "m := math.Floor(ms / 60000)\n\tif m >= MaxMinutes {\n\t\treturn MaxMinutes\n\t}\n", New: "m := math.Floor(ms / 60000)\n", Desc: "Minutes: saturation removed (+Inf, huge wrap)"},
	{ID: "C93", File: claim, Old: "m := math.Floor(ms / 60000)\n\tif m >= MaxMinutes {", New: "m := math.Floor(ms / 60000)\n\tif m > MaxMinutes {", Desc: "Minutes: saturation >= -> >",
		Equivalent: "m == 2^32-1 converts to 2^32-1 exactly, the saturated value"},
	{ID: "C94", File: claim, Old: "m := math.Floor(ms / 60000)\n\tif m >= MaxMinutes {\n\t\treturn MaxMinutes\n", New: "m := math.Floor(ms / 60000)\n\tif m >= MaxMinutes {\n\t\treturn MaxMinutes - 1\n", Desc: "Minutes: saturates one short"},
	{ID: "C95", File: claim, Old: "if since.IsZero() {\n\t\treturn 0\n\t}\n\t", New: "", Desc: "MinutesSince: unknown (zero) since is counted"},
	{ID: "C96", File: claim, Old: "if d <= 0 {\n\t\treturn 0\n\t}\n\t", New: "", Desc: "MinutesSince: future since not clamped"},
	{ID: "C97", File: claim, Old: "if d <= 0 {", New: "if d < 0 {", Desc: "MinutesSince: d <= 0 -> < 0",
		Equivalent: "d == 0 goes on to 0 / time.Minute = 0"},
	{ID: "C98", File: claim, Old: "m := d / time.Minute", New: "m := (d + time.Minute - 1) / time.Minute", Desc: "MinutesSince: floor -> ceil"},
	{ID: "C99", File: claim, Old: "m := d / time.Minute\n\tif m >= MaxMinutes {\n\t\treturn MaxMinutes\n\t}\n", New: "m := d / time.Minute\n", Desc: "MinutesSince: saturation removed",
		Equivalent: "time.Duration saturates at 2^63 ns, about 1.5e8 minutes, below 2^32-1: the branch is unreachable"},
	{ID: "C100", File: claim, Old: "if math.IsNaN(x) || x <= 0 {\n\t\treturn 0\n\t}", New: "if math.IsNaN(x) {\n\t\treturn math.MaxUint32\n\t}\n\tif x <= 0 {\n\t\treturn 0\n\t}", Desc: "Count: NaN saturates instead of reading 0"},
	{ID: "C101", File: claim, Old: "if math.IsNaN(x) || x <= 0 {", New: "if math.IsNaN(x) {", Desc: "Count: negative counters not clamped (wrap on amd64)"},
	{ID: "C102", File: claim, Old: "if x >= math.MaxUint32 {\n\t\treturn math.MaxUint32\n\t}\n\t", New: "", Desc: "Count: saturation removed"},
	{ID: "C103", File: claim, Old: "if x >= math.MaxUint32 {", New: "if x > math.MaxUint32 {", Desc: "Count: saturation >= -> >",
		Equivalent: "x == 2^32-1 floors and converts to 2^32-1 exactly"},
	{ID: "C104", File: claim, Old: "return uint32(math.Floor(x))", New: "return uint32(math.Round(x))", Desc: "Count: floor -> round"},
	{ID: "C105", File: claim, Old: "if x >= math.MaxUint32 {\n\t\treturn math.MaxUint32", New: "if x >= math.MaxUint32 {\n\t\treturn 0", Desc: "Count: saturates to 0"},

	// valve.go: codes.
	{ID: "V01", File: valve, Old: "KindEffectGaveUp    Kind = 8", New: "KindEffectGaveUp    Kind = 9", Desc: "kind code effect-gave-up 8 -> 9"},
	{ID: "V02", File: valve, Old: "KindSendBackCeiling Kind = 2", New: "KindSendBackCeiling Kind = 3", Desc: "kind code send-back-ceiling 2 -> 3"},
	{ID: "V03", File: valve, Old: "StepBackfill Step = 2", New: "StepBackfill Step = 4", Desc: "step code backfill 2 -> 4"},
	{ID: "V04", File: valve, Old: "PRClose   PRStepKind = 3", New: "PRClose   PRStepKind = 4", Desc: "PR step code close 3 -> 4"},
	{ID: "V05", File: valve, Old: "ConflictClose  ConflictStepKind = 4", New: "ConflictClose  ConflictStepKind = 5", Desc: "conflict step code close 4 -> 5"},
	{ID: "V06", File: valve, Old: "= \"obsolete\"", New: "= \"Obsolete\"", Desc: "OBSOLETE_STATE word changed"},
	{ID: "V07", File: valve, Old: "= \"t27-bees[bot]\"", New: "= \"t27-bees\"", Desc: "REVIEWER_LOGIN changed"},
	{ID: "V08", File: valve, Old: "= \"queen-\"", New: "= \"queen\"", Desc: "QUEEN_BRANCH_PREFIX changed"},
	// valve.go: numbers.
	{ID: "V09", File: valve, Old: "RetryFloorMinutes     = 30 ", New: "RetryFloorMinutes     = 31 ", Desc: "retry floor 30 -> 31"},
	{ID: "V10", File: valve, Old: "RetryFloorMinutes     = 30 ", New: "RetryFloorMinutes     = 29 ", Desc: "retry floor 30 -> 29"},
	{ID: "V11", File: valve, Old: "CeilingFloorMinutes   = 60 ", New: "CeilingFloorMinutes   = 61 ", Desc: "ceiling floor 60 -> 61"},
	{ID: "V12", File: valve, Old: "CeilingFloorMinutes   = 60 ", New: "CeilingFloorMinutes   = 59 ", Desc: "ceiling floor 60 -> 59"},
	{ID: "V13", File: valve, Old: "BackfillWindowMinutes = 120 ", New: "BackfillWindowMinutes = 121 ", Desc: "backfill window 120 -> 121"},
	{ID: "V14", File: valve, Old: "BackfillWindowMinutes = 120 ", New: "BackfillWindowMinutes = 119 ", Desc: "backfill window 120 -> 119"},
	{ID: "V15", File: valve, Old: "MaxReleases           = 1 ", New: "MaxReleases           = 2 ", Desc: "MAX_RELEASES 1 -> 2"},
	{ID: "V16", File: valve, Old: "MaxReleases           = 1 ", New: "MaxReleases           = 0 ", Desc: "MAX_RELEASES 1 -> 0"},
	{ID: "V17", File: valve, Old: "PolicyHoldMinutes     = 2880 ", New: "PolicyHoldMinutes     = 2881 ", Desc: "policy hold 2880 -> 2881"},
	{ID: "V18", File: valve, Old: "PolicyHoldMinutes     = 2880 ", New: "PolicyHoldMinutes     = 2879 ", Desc: "policy hold 2880 -> 2879"},
	{ID: "V19", File: valve, Old: "PRFixAttempts         = 2 ", New: "PRFixAttempts         = 3 ", Desc: "PR_FIX_ATTEMPTS 2 -> 3"},
	{ID: "V20", File: valve, Old: "PRFixAttempts         = 2 ", New: "PRFixAttempts         = 1 ", Desc: "PR_FIX_ATTEMPTS 2 -> 1"},
	{ID: "V21", File: valve, Old: "PRFixWindowHours      = 48 ", New: "PRFixWindowHours      = 49 ", Desc: "PR_FIX_WINDOW_HOURS 48 -> 49"},
	{ID: "V22", File: valve, Old: "PRFixWindowHours      = 48 ", New: "PRFixWindowHours      = 47 ", Desc: "PR_FIX_WINDOW_HOURS 48 -> 47"},
	{ID: "V23", File: valve, Old: "ConflictUpdates       = 2 ", New: "ConflictUpdates       = 3 ", Desc: "CONFLICT_UPDATES 2 -> 3"},
	{ID: "V24", File: valve, Old: "ConflictUpdates       = 2 ", New: "ConflictUpdates       = 1 ", Desc: "CONFLICT_UPDATES 2 -> 1"},
	{ID: "V25", File: valve, Old: "UpdateQueueCeiling    = 50 ", New: "UpdateQueueCeiling    = 51 ", Desc: "UPDATE_QUEUE_CEILING 50 -> 51"},
	{ID: "V26", File: valve, Old: "UpdateQueueCeiling    = 50 ", New: "UpdateQueueCeiling    = 49 ", Desc: "UPDATE_QUEUE_CEILING 50 -> 49"},
	{ID: "V27", File: valve, Old: "ConflictWaitHours     = 48 ", New: "ConflictWaitHours     = 49 ", Desc: "CONFLICT_WAIT_HOURS 48 -> 49"},
	{ID: "V28", File: valve, Old: "ConflictWaitHours     = 48 ", New: "ConflictWaitHours     = 47 ", Desc: "CONFLICT_WAIT_HOURS 48 -> 47"},
	// valve.go: escalation_kind and its recorded variant.
	{ID: "V29", File: valve, Old: "case criteria == 0:", New: "case criteria <= 1:", Desc: "no criteria == 0 loosened to <= 1"},
	{ID: "V30", File: valve, Old: "case criteria == 0:\n\t\treturn KindNoCriteria", New: "case criteria == 0:\n\t\treturn KindSendBackCeiling", Desc: "no-criteria branch -> send-back ceiling"},
	{ID: "V31", File: valve, Old: "case sendBackCeiling:\n\t\treturn KindSendBackCeiling", New: "case sendBackCeiling:\n\t\treturn KindDeadLetter", Desc: "ceiling branch -> dead letter"},
	{ID: "V32", File: valve, Old: "case deadLetter:\n\t\treturn KindDeadLetter", New: "case deadLetter:\n\t\treturn KindReviewerGaveUp", Desc: "dead-letter branch -> reviewer gave up"},
	{ID: "V33", File: valve, Old: "case reviewerGaveUp:\n\t\treturn KindReviewerGaveUp", New: "case reviewerGaveUp:\n\t\treturn KindUnrecorded", Desc: "gave-up branch -> unrecorded"},
	{ID: "V34", File: valve, Old: "default:\n\t\treturn KindUnrecorded", New: "default:\n\t\treturn KindEffectGaveUp", Desc: "escalation_kind default -> effect gave up"},
	{ID: "V35", File: valve, Old: "case deadLetter:\n\t\treturn KindDeadLetter\n\tcase reviewerGaveUp:\n\t\treturn KindReviewerGaveUp", New: "case reviewerGaveUp:\n\t\treturn KindReviewerGaveUp\n\tcase deadLetter:\n\t\treturn KindDeadLetter", Desc: "gave-up checked before dead letter"},
	{ID: "V36", File: valve, Old: "case criteria == 0:\n\t\treturn KindNoCriteria\n\tcase sendBackCeiling:\n\t\treturn KindSendBackCeiling", New: "case sendBackCeiling:\n\t\treturn KindSendBackCeiling\n\tcase criteria == 0:\n\t\treturn KindNoCriteria", Desc: "ceiling checked before no criteria"},
	{ID: "V37", File: valve, Old: "k >= KindEmptyAccept && ", New: "k > KindEmptyAccept && ", Desc: "is_recorded_kind >= -> >"},
	{ID: "V38", File: valve, Old: "k <= KindEffectGaveUp", New: "k < KindEffectGaveUp", Desc: "is_recorded_kind <= -> <"},
	{ID: "V39", File: valve, Old: " && k <= KindEffectGaveUp", New: "", Desc: "is_recorded_kind has no upper bound"},
	{ID: "V40", File: valve, Old: "if k == KindUnrecorded && IsRecordedKind(recorded) {", New: "if IsRecordedKind(recorded) {", Desc: "recorded kind overrides the counters"},
	{ID: "V41", File: valve, Old: "if k == KindUnrecorded && IsRecordedKind(recorded) {", New: "if k == KindUnrecorded {", Desc: "any recorded code is used"},
	{ID: "V42", File: valve, Old: "\t\treturn recorded\n", New: "\t\treturn KindEffectGaveUp\n", Desc: "recorded kind always reads effect gave up"},
	// valve.go: wants_backfill, next_step, holds_files(step).
	{ID: "V43", File: valve, Old: "return k == KindNoCriteria || ", New: "return ", Desc: "no criteria no longer backfills"},
	{ID: "V44", File: valve, Old: "k == KindBeyondThePatch || ", New: "", Desc: "beyond-the-patch no longer backfills"},
	{ID: "V45", File: valve, Old: " || k == KindBaseTruthAlone", New: "", Desc: "base-truth-alone no longer backfills"},
	{ID: "V46", File: valve, Old: "|| k == KindBaseTruthAlone\n", New: "|| k == KindBaseTruthAlone || k == KindEffectGaveUp\n", Desc: "effect gave up backfills"},
	{ID: "V47", File: valve, Old: "idleMinutes >= BackfillWindowMinutes", New: "idleMinutes > BackfillWindowMinutes", Desc: "backfill window >= -> >"},
	{ID: "V48", File: valve, Old: "BackfillWindowMinutes:\n\t\treturn StepClose", New: "BackfillWindowMinutes:\n\t\treturn StepRelease", Desc: "backfill past its window releases instead of closing"},
	{ID: "V49", File: valve, Old: "case backfill:\n\t\treturn StepBackfill", New: "case backfill:\n\t\treturn StepHold", Desc: "backfill step -> hold"},
	{ID: "V50", File: valve, Old: "case releases >= MaxReleases:", New: "case releases > MaxReleases:", Desc: "spent release >= -> >"},
	{ID: "V51", File: valve, Old: "case releases >= MaxReleases:\n\t\treturn StepClose", New: "case releases >= MaxReleases:\n\t\treturn StepRelease", Desc: "spent release releases again instead of closing"},
	{ID: "V52", File: valve, Old: "idleMinutes >= CeilingFloorMinutes", New: "idleMinutes > CeilingFloorMinutes", Desc: "ceiling floor >= -> >"},
	{ID: "V53", File: valve, Old: "CeilingFloorMinutes:\n\t\treturn StepRelease", New: "CeilingFloorMinutes:\n\t\treturn StepClose", Desc: "ceiling release -> close"},
	{ID: "V54", File: valve, Old: "case k != KindSendBackCeiling && idleMinutes", New: "case idleMinutes", Desc: "the ceiling kind also takes the 30-minute path"},
	{ID: "V55", File: valve, Old: "idleMinutes >= RetryFloorMinutes", New: "idleMinutes > RetryFloorMinutes", Desc: "retry floor >= -> >"},
	{ID: "V56", File: valve, Old: "RetryFloorMinutes:\n\t\treturn StepRelease", New: "RetryFloorMinutes:\n\t\treturn StepClose", Desc: "30-minute release -> close"},
	{ID: "V57", File: valve, Old: "default:\n\t\treturn StepHold", New: "default:\n\t\treturn StepBackfill", Desc: "next_step default hold -> backfill"},
	{ID: "V58", File: valve, Old: "case backfill:\n\t\treturn StepBackfill\n\tcase releases >= MaxReleases:\n\t\treturn StepClose", New: "case releases >= MaxReleases:\n\t\treturn StepClose\n\tcase backfill:\n\t\treturn StepBackfill", Desc: "a spent release closes a backfill"},
	{ID: "V59", File: valve, Old: "return s == StepHold || s == StepBackfill", New: "return s == StepHold", Desc: "backfill no longer holds files"},
	{ID: "V60", File: valve, Old: "return s == StepHold || s == StepBackfill", New: "return s != StepClose && s != StepRelease", Desc: "unknown steps hold files"},
	// valve.go: pr_step.
	{ID: "V61", File: valve, Old: "case !queenBranch:\n\t\treturn PRNone", New: "case !queenBranch:\n\t\treturn PRJudge", Desc: "non-Queen PR is judged"},
	{ID: "V62", File: valve, Old: "case !headJudged:\n\t\treturn PRJudge", New: "case !headJudged:\n\t\treturn PRWaitFix", Desc: "unjudged head waits for a fix"},
	{ID: "V63", File: valve, Old: "case !changesOnHead:\n\t\treturn PRNone", New: "case !changesOnHead:\n\t\treturn PRWaitFix", Desc: "no REQUEST_CHANGES waits for a fix"},
	{ID: "V64", File: valve, Old: "changesHeads > PRFixAttempts", New: "changesHeads >= PRFixAttempts", Desc: "PR fix attempts > -> >="},
	{ID: "V65", File: valve, Old: "changesHeads > PRFixAttempts:\n\t\treturn PRClose", New: "changesHeads > PRFixAttempts:\n\t\treturn PRWaitFix", Desc: "too many change heads waits instead of closing"},
	{ID: "V66", File: valve, Old: "hours >= PRFixWindowHours", New: "hours > PRFixWindowHours", Desc: "PR fix window >= -> >"},
	{ID: "V67", File: valve, Old: "PRFixWindowHours:\n\t\treturn PRClose", New: "PRFixWindowHours:\n\t\treturn PRWaitFix", Desc: "PR past its window waits instead of closing"},
	{ID: "V68", File: valve, Old: "default:\n\t\treturn PRWaitFix", New: "default:\n\t\treturn PRNone", Desc: "pr_step default wait-fix -> none"},
	{ID: "V69", File: valve, Old: "case !queenBranch:\n\t\treturn PRNone\n\tcase !headJudged:\n\t\treturn PRJudge", New: "case !headJudged:\n\t\treturn PRJudge\n\tcase !queenBranch:\n\t\treturn PRNone", Desc: "judge checked before the Queen branch"},
	// valve.go: conflict_step.
	{ID: "V70", File: valve, Old: "redo := updateFailed || ", New: "redo := ", Desc: "failed update no longer redoes"},
	{ID: "V71", File: valve, Old: "updates >= ConflictUpdates", New: "updates > ConflictUpdates", Desc: "conflict updates >= -> >"},
	{ID: "V72", File: valve, Old: "hours >= ConflictWaitHours", New: "hours > ConflictWaitHours", Desc: "conflict wait >= -> >"},
	{ID: "V73", File: valve, Old: "case !queenBranch:\n\t\treturn ConflictNone", New: "case !queenBranch:\n\t\treturn ConflictUpdate", Desc: "non-Queen conflicting PR is updated"},
	{ID: "V74", File: valve, Old: "case !conflicting:\n\t\treturn ConflictNone", New: "case !conflicting:\n\t\treturn ConflictUpdate", Desc: "non-conflicting PR is updated"},
	{ID: "V75", File: valve, Old: "redo && releases >= MaxReleases", New: "redo && releases > MaxReleases", Desc: "conflict release >= -> >"},
	{ID: "V76", File: valve, Old: "MaxReleases:\n\t\treturn ConflictClose", New: "MaxReleases:\n\t\treturn ConflictRedo", Desc: "spent release redoes instead of closing"},
	{ID: "V77", File: valve, Old: "case redo:\n\t\treturn ConflictRedo", New: "case redo:\n\t\treturn ConflictUpdate", Desc: "redo -> update"},
	{ID: "V78", File: valve, Old: "queuedRuns > UpdateQueueCeiling", New: "queuedRuns >= UpdateQueueCeiling", Desc: "update queue > -> >="},
	{ID: "V79", File: valve, Old: "UpdateQueueCeiling:\n\t\treturn ConflictWait", New: "UpdateQueueCeiling:\n\t\treturn ConflictUpdate", Desc: "full update queue updates anyway"},
	{ID: "V80", File: valve, Old: "default:\n\t\treturn ConflictUpdate", New: "default:\n\t\treturn ConflictWait", Desc: "conflict_step default update -> wait"},
	{ID: "V81", File: valve, Old: "case redo:\n\t\treturn ConflictRedo\n\tcase queuedRuns > UpdateQueueCeiling:\n\t\treturn ConflictWait", New: "case queuedRuns > UpdateQueueCeiling:\n\t\treturn ConflictWait\n\tcase redo:\n\t\treturn ConflictRedo", Desc: "a full queue delays a redo"},

	// reviewfirst.go.
	{ID: "R01", File: review, Old: "const ReviewQueueMax = 0", New: "const ReviewQueueMax = 1", Desc: "REVIEW_QUEUE_MAX 0 -> 1"},
	{ID: "R02", File: review, Old: "open := issueOpen == nil || *issueOpen", New: "open := issueOpen != nil && *issueOpen", Desc: "unknown issue state reads closed"},
	{ID: "R03", File: review, Old: "return started && finished && ", New: "return finished && ", Desc: "review queue ignores started"},
	{ID: "R04", File: review, Old: "return started && finished && ", New: "return started && ", Desc: "review queue ignores finished"},
	{ID: "R05", File: review, Old: "(reviewState == \"\" || reviewState == \"wait\")", New: "(reviewState == \"wait\")", Desc: "no verdict is not in review"},
	{ID: "R06", File: review, Old: "(reviewState == \"\" || reviewState == \"wait\")", New: "(reviewState == \"\")", Desc: "a wait is not in review"},
	{ID: "R07", File: review, Old: "(reviewState == \"\" || reviewState == \"wait\")", New: "(reviewState != \"accept\")", Desc: "any verdict but accept is in review"},
	{ID: "R08", File: review, Old: " && !reaped && open", New: " && open", Desc: "reaped rows stay in review"},
	{ID: "R09", File: review, Old: " && !reaped && open", New: " && !reaped && (open || !open)", Desc: "closed issues stay in review"},
	{ID: "R10", File: review, Old: "case ownerAssigned:\n\t\treturn KindAssigned\n\tcase sentBack:\n\t\treturn KindSendBackCandidate", New: "case sentBack:\n\t\treturn KindSendBackCandidate\n\tcase ownerAssigned:\n\t\treturn KindAssigned", Desc: "send-back outranks assigned"},
	{ID: "R11", File: review, Old: "case ownerAssigned:\n\t\treturn KindAssigned", New: "case ownerAssigned:\n\t\treturn KindSendBackCandidate", Desc: "assigned -> send-back kind"},
	{ID: "R12", File: review, Old: "case sentBack:\n\t\treturn KindSendBackCandidate", New: "case sentBack:\n\t\treturn KindBacklog", Desc: "send-back -> backlog kind"},
	{ID: "R13", File: review, Old: "default:\n\t\treturn KindBacklog", New: "default:\n\t\treturn KindSendBackCandidate", Desc: "backlog -> send-back kind"},
	{ID: "R14", File: review, Old: "if k == KindBacklog {", New: "if k != KindAssigned {", Desc: "send-backs are held like the backlog"},
	{ID: "R15", File: review, Old: "return queueLen <= ReviewQueueMax", New: "return queueLen < ReviewQueueMax", Desc: "admits <= -> < (backlog never admitted)"},
	{ID: "R16", File: review, Old: "\treturn true\n}", New: "\treturn queueLen < 100\n}", Desc: "assigned/send-back held once the queue is long"},
	{ID: "R17", File: review, Old: "candidates > 0 && admitted == 0", New: "candidates >= 0 && admitted == 0", Desc: "round_refused > -> >= (empty round refused)"},
	{ID: "R18", File: review, Old: "candidates > 0 && admitted == 0", New: "candidates > 0 && admitted <= 1", Desc: "round_refused admitted == 0 loosened to <= 1"},
	{ID: "R19", File: review, Old: "candidates > 0 && admitted == 0", New: "candidates > 0 || admitted == 0", Desc: "round_refused && -> ||"},
	{ID: "R20", File: review, Old: "%d dispatches wait in review", New: "%d dispatch(es) wait in review", Desc: "refusal text changed"},
	{ID: "R21", File: review, Old: "the review queue is empty\", queueLen)", New: "the review queue is empty\", queueLen+1)", Desc: "refusal text counts one more"},
}
