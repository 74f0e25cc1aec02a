package main

import "slices"

const (
	view    = "internal/dispatch/view.go"
	row     = "internal/dispatch/row.go"
	branch  = "internal/dispatch/branch.go"
	attempt = "internal/dispatch/attempt.go"
	trans   = "internal/ledger/transitions.go"
	upd     = "internal/ledger/update.go"
)

// mutants is the fixed, hand-written list. Keep each Old exactly once in its
// file (TestSnippetsFoundOnce checks it).
var mutants = slices.Concat(ruleMutants, viewMutants, ledgerMutants, exportMutants, workerMutants, redisconnMutants, idMutants, sessionMutants)

// viewMutants break the claim view: Decide's inputs and rules, and the
// view's live, free and held decisions.
var viewMutants = []Mutant{
	// Decide and the claim card's input.
	{ID: "D01", File: view, Old: "if in.Finished && r.ReviewWord() == \"sendBack\" {", New: "if r.ReviewWord() == \"sendBack\" {", Desc: "send_back_claim decided on an unfinished row"},
	{ID: "D02", File: view, Old: "if in.Finished && r.ReviewWord() == \"accept\" {", New: "if r.ReviewWord() == \"accept\" {", Desc: "accept_claim decided on an unfinished row"},
	{ID: "D03", File: view, Old: "\t\tl := rules.Live\n\t\tif p := r.PRs; p != nil {", New: "\t\tl := rules.Free\n\t\tif p := r.PRs; p != nil {", Desc: "accept_claim frees a row whose PRs were never read"},
	{ID: "D04", File: view, Old: "rules.AcceptLiveness(p.Read, ", New: "rules.AcceptLiveness(true, ", Desc: "accept_claim reads a failed PR read as read"},
	{ID: "D05", File: view, Old: "rules.SendBackLiveness(r.SendBacks, r.Ceiling)", New: "rules.SendBackLiveness(r.SendBacks, r.Ceiling+1)", Desc: "send_back_claim reads the ceiling one higher"},
	{ID: "D06", File: view, Old: "rules.StageOf(in.Finished, r.ReviewWord())", New: "rules.StageOf(true, r.ReviewWord())", Desc: "a working row takes its verdict's stage"},
	{ID: "D07", File: view, Old: "CriteriaRead:   r.Criteria != nil,", New: "CriteriaRead:   len(r.Criteria) > 0,", Desc: "criteria [] read as unread (counts as 1)"},
	{ID: "D08", File: view, Old: "Releases:       r.CeilingRelease,", New: "Releases:       0,", Desc: "ceiling releases spent are not read"},
	{ID: "D09", File: view, Old: "FreeAttempts:   r.FreeAttempts,\n\t\tReviewerMisses: r.ReviewerMisses,", New: "FreeAttempts:   r.ReviewerMisses,\n\t\tReviewerMisses: r.FreeAttempts,", Desc: "free attempts and reviewer misses swapped"},
	{ID: "D10", File: view, Old: "Verdict:        rules.VerdictOf(r.ReviewWord()),", New: "Verdict:        rules.VerdictOf(\"wait\"),", Desc: "the verdict word is not read"},
	{ID: "D11", File: view, Old: "\t\tin.IdleMinutes = rules.MinutesSince(*r.FinishedAt, now)\n", New: "", Desc: "idle minutes never counted"},
	{ID: "D12", File: view, Old: "Claim:       rules.ClaimOf(in),", New: "Claim:       rules.ClaimOf(rules.ClaimInput{Finished: in.Finished, Verdict: in.Verdict, IdleMinutes: in.IdleMinutes, Ceiling: in.Ceiling}),", Desc: "the claim card sees no counters"},
	// RuleFrees.
	{ID: "D13", File: view, Old: "case d.SendBack != nil && *d.SendBack == rules.Free:\n\t\treturn RuleSendBack", New: "case d.SendBack != nil && *d.SendBack == rules.Free:\n\t\treturn RuleAccept", Desc: "a send-back free is named accept_claim"},
	{ID: "D14", File: view, Old: "case d.Accept != nil && *d.Accept == rules.Free:", New: "case d.Accept != nil:", Desc: "accept_claim live names a free"},
	{ID: "D15", File: view, Old: "case d.SendBack != nil && *d.SendBack == rules.Free:", New: "case d.SendBack != nil:", Desc: "send_back_claim live names a free"},
	// The view: live, free, held.
	{ID: "D16", File: view, Old: "return Decide(r, now).View(r, r.Freed == nil)", New: "return Decide(r, now).View(r, r.Freed == nil && r.WouldFree == nil)", Desc: "a would_free (flag off) row reads not live"},
	{ID: "D17", File: view, Old: "return Decide(r, now).View(r, r.Freed == nil)", New: "return Decide(r, now).View(r, true)", Desc: "a freed row reads live"},
	{ID: "D18", File: view, Old: "\tl := rules.Free\n\tif live {\n\t\tl = rules.Live\n\t}", New: "\tl := rules.Live", Desc: "a freed row keeps its verdict's stage"},
	{ID: "D19", File: view, Old: "ClaimsIssue:   live && rules.ClaimsIssue(d.Claim),", New: "ClaimsIssue:   rules.ClaimsIssue(d.Claim),", Desc: "a freed row still claims its issue"},
	{ID: "D20", File: view, Old: "holds := rules.HoldsFiles(stage, d.IdleMinutes)", New: "holds := rules.HoldsFiles(d.Stage, d.IdleMinutes)", Desc: "holds_files ignores the free (verdict stage)"},
	{ID: "D21", File: view, Old: "Live:          live,", New: "Live:          true,", Desc: "the view's live is always true"},
	{ID: "D22", File: view, Old: "Stage:         stage.String(),", New: "Stage:         d.Stage.String(),", Desc: "the view shows the verdict stage, not the effective one"},
	{ID: "D23", File: view, Old: "\tif holds {\n\t\tv.HeldPaths", New: "\tif true {\n\t\tv.HeldPaths", Desc: "held_paths listed when nothing is held"},
	{ID: "D24", File: view, Old: "\tif !live {\n\t\ts = rules.Free.String()\n\t}\n", New: "", Desc: "a freed row's rule words say live"},
	{ID: "D25", File: view, Old: "SendBackClaim: word(d.SendBack, live),\n\t\tAcceptClaim:   word(d.Accept, live),", New: "SendBackClaim: word(d.Accept, live),\n\t\tAcceptClaim:   word(d.SendBack, live),", Desc: "send_back_claim and accept_claim swapped"},
	{ID: "D26", File: view, Old: "\t\tgrace = rules.SendBackHoldMinutes * time.Minute", New: "\t\tgrace = rules.AwaitingHoldMinutes * time.Minute", Desc: "held_until of a send-back uses the 30-minute grace"},
	{ID: "D27", File: view, Old: "\t\tgrace = rules.AwaitingHoldMinutes * time.Minute", New: "\t\tgrace = rules.SendBackHoldMinutes * time.Minute", Desc: "held_until of an awaiting row uses the 120-minute grace"},
	{ID: "D28", File: view, Old: "WouldFree:     r.WouldFree,", New: "WouldFree:     r.Freed,", Desc: "would_free shows the free record"},
	// The row: a dispatch, what is reset, what is compared.
	{ID: "D29", File: row, Old: "return r.DispatchedAt.Equal(*o.DispatchedAt)", New: "return true", Desc: "SameDispatch: any two dispatch times are one dispatch"},
	{ID: "D30", File: row, Old: "return r.DispatchedAt == nil && o.DispatchedAt == nil", New: "return true", Desc: "SameDispatch: a dispatch time set or cleared is the same dispatch"},
	{ID: "D31", File: row, Old: "r.PRs, r.Freed, r.WouldFree, r.Export = nil, nil, nil, nil", New: "r.PRs, r.Freed, r.WouldFree = nil, nil, nil", Desc: "a new dispatch keeps the export state"},
	{ID: "D32", File: row, Old: "r.PRs, r.Freed, r.WouldFree, r.Export = nil, nil, nil, nil", New: "r.Freed, r.WouldFree, r.Export = nil, nil, nil", Desc: "a new dispatch keeps the old PR read"},
	{ID: "D33", File: row, Old: "r.PRs, r.Freed, r.WouldFree, r.Export = nil, nil, nil, nil", New: "r.PRs, r.WouldFree, r.Export = nil, nil, nil", Desc: "a new dispatch keeps the old free"},
	{ID: "D34", File: row, Old: "s.State == o.State && s.PushedHead == o.PushedHead && ", New: "s.State == o.State && ", Desc: "ExportState.Same ignores the head pushed"},
	{ID: "D35", File: row, Old: " && s.Refusal == o.Refusal", New: "", Desc: "ExportState.Same ignores the refusal"},
	{ID: "D36", File: row, Old: " || len(p.Numbers) > 0 }", New: " }", Desc: "PRState.Any ignores listed PR numbers"},
	{ID: "D37", File: row, Old: "return p.Open+p.Merged+p.ClosedUnmerged > 0", New: "return p.Open+p.Merged > 0", Desc: "PRState.Any ignores closed PRs"},
	// Attempts: which PRs of the branch are the row's own.
	{ID: "A01", File: attempt, Old: "case p.Open() || (a.JudgedHead != \"\" && p.HeadSHA == a.JudgedHead):", New: "case p.Open():", Desc: "a closed PR at the judged head is an earlier attempt's (the export proposes it again)"},
	{ID: "A02", File: attempt, Old: "case p.Open() || (a.JudgedHead != \"\" && p.HeadSHA == a.JudgedHead):", New: "case p.Open() || p.HeadSHA == a.JudgedHead:", Desc: "no judged head matches a PR with no head"},
	{ID: "A03", File: attempt, Old: "!p.CreatedAt.Before(a.DispatchedAt.Truncate(time.Second))", New: "p.CreatedAt.After(*a.DispatchedAt)", Desc: "a PR opened in the dispatch's own second (or at it) is an earlier attempt's"},
	{ID: "A04", File: attempt, Old: "\treturn PREarlier\n}", New: "\treturn PRDispatched\n}", Desc: "every PR of the branch is the attempt's: a re-dispatch is freed by the first attempt's closed PR (issue 21)"},
	{ID: "A05", File: attempt, Old: "case a.DispatchedAt == nil || ", New: "case a.DispatchedAt != nil && ", Desc: "a row without a dispatch time counts none of its closed PRs"},
	{ID: "A06", File: attempt, Old: "\tif read.Listed == nil {\n\t\treturn read\n\t}\n", New: "", Desc: "a read without its list counts no PR"},
	{ID: "A07", File: attempt, Old: "return count(read, func(p PR) bool { return a.Role(p) == PRCurrent })", New: "return count(read, a.Mine)", Desc: "the export counts a closed PR of the attempt at another head"},
	{ID: "A08", File: view, Old: "\t\tPRs:           r.PRs,\n", New: "", Desc: "the claim view leaves out the PR read (earlier attempts' PRs unseen)"},
	{ID: "A09", File: view, Old: "if p := r.PRs; p != nil && p.Read && len(p.Earlier) > 0 {", New: "if p := r.PRs; false && p != nil {", Desc: "explain does not name earlier attempts' PRs"},
	// The branch and the head.
	{ID: "D38", File: branch, Old: `headChars = charclass.New("0-9a-f")`, New: `headChars = charclass.New("0-9a-fA-F")`, Desc: "ValidHead accepts upper-case hex"},
	{ID: "D39", File: branch, Old: "headChars.Match(s, 40, 40)", New: "headChars.Match(s, 40, 64)", Desc: "ValidHead accepts a longer id (SHA-256)"},
	{ID: "D40", File: branch, Old: "!digits.Match(n, 1, 10) || n[0] == '0'", New: "!digits.Match(n, 1, 10)", Desc: "IssueOfBranch accepts a leading zero (queen-042 is not #42's branch)"},
	{ID: "D41", File: branch, Old: "n, ok := strings.CutPrefix(ref, branchPrefix)", New: "_, n, ok := strings.Cut(ref, branchPrefix)", Desc: "IssueOfBranch accepts a prefix (feature/queen-42)"},
}
