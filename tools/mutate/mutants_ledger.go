package main

// ledgerTests are the ledger's tests of its transitions: the cluster,
// concurrency and audit-paging tests (12s of the package's 14s) reach
// transitions.go only through the same paths.
const ledgerTests = "^Test(ReopenedPR|FailedRead|NewDispatch|UpsertRefuses|FlagsOff|FreeIsIdempotent|KeepPins|DeleteIsAudited|RecordExport|StaleFree|IndexesFollow|RetriedWrite|AnOlderRead|AStaleRead|ClaimViewOfStored|HoldingAndReview|Transition|RecordPRsOn)"

// attemptLedgerTests are the ledger's tests of re-dispatched rows.
const attemptLedgerTests = "^Test(AReDispatchedRow|AReadIsCounted|EarlierPRsArePart)"

// ledgerMutants break the ledger's transitions: decide, RecordPRs' checks,
// the unfree on a reopened PR, the new-dispatch reset, the export's record.
var ledgerMutants = withTests(ledgerTests, []Mutant{
	// Upsert: a new dispatch starts fresh.
	{ID: "L01", File: trans, Old: "fresh := !sameTime(old, rec.DispatchedAt)", New: "fresh := !sameTime(old, old)", Desc: "a new dispatch keeps what was recorded and the keep"},
	{ID: "L02", File: trans, Old: "\t\t\trec.ResetRecorded()\n", New: "", Desc: "a new dispatch keeps what was recorded"},
	{ID: "L03", File: trans, Old: "\t\t\trec.Pin = nil\n", New: "", Desc: "a new dispatch keeps a person's keep"},
	{ID: "L04", File: trans, Old: "fresh := !sameTime(old, rec.DispatchedAt)", New: "fresh := !sameTime(old, rec.DispatchedAt) || len(patch) > 1", Desc: "any upsert of several fields is a new dispatch"},
	{ID: "L05", File: trans, Old: "\t\treturn a == b\n", New: "\t\treturn true\n", Desc: "a dispatch time set on a row with none is the same dispatch"},
	{ID: "L06", File: trans, Old: "return a.Equal(*b)", New: "return a.Unix()/3600 == b.Unix()/3600", Desc: "dispatch times within the same hour are one dispatch"},
	{ID: "L07", File: trans, Old: "\t\tl.decide(rec, now, true, false, \"\", &ch)\n\t\treturn ch, nil\n\t})\n}\n\ntype upsertInputs", New: "\t\tl.decide(rec, now, false, false, \"\", &ch)\n\t\treturn ch, nil\n\t})\n}\n\ntype upsertInputs", Desc: "an upsert does not decide send_back_claim"},
	{ID: "L08", File: trans, Old: "\t\tl.decide(rec, now, true, false, \"\", &ch)\n\t\treturn ch, nil\n\t})\n}\n\ntype upsertInputs", New: "\t\tl.decide(rec, now, true, true, \"\", &ch)\n\t\treturn ch, nil\n\t})\n}\n\ntype upsertInputs", Desc: "an upsert decides accept_claim on the stored PRs"},
	// RecordPRs: unread, stale, same state.
	{ID: "L09", File: trans, Old: "\tif !prs.Read {\n\t\treturn Result{Outcome: OutcomeUnread}, checkKey(repo, issue)\n\t}\n", New: "", Desc: "a failed PR read is recorded and decided on"},
	{ID: "L10", File: trans, Old: "p.ReadAt.Before(*rec.PRs.ReadAt)", New: "p.ReadAt.After(*rec.PRs.ReadAt)", Desc: "stale-read check inverted (a newer read is stale)"},
	{ID: "L11", File: trans, Old: "if rec.PRs != nil && rec.PRs.ReadAt != nil && p.ReadAt.Before(*rec.PRs.ReadAt) {", New: "if false {", Desc: "an older read landing late is decided on"},
	{ID: "L12", File: trans, Old: "\t\tif rec.PRs != nil && samePRs(*rec.PRs, p) {\n\t\t\tp.ReadAt = rec.PRs.ReadAt\n\t\t}\n", New: "", Desc: "an unchanged read writes a version (read_at moves)"},
	{ID: "L13", File: trans, Old: "a.Read == b.Read && a.Open == b.Open && ", New: "a.Read == b.Read && ", Desc: "same-state check ignores open PRs"},
	{ID: "L14", File: trans, Old: "a.ClosedUnmerged == b.ClosedUnmerged && slices.Equal(a.Numbers, b.Numbers)", New: "a.ClosedUnmerged == b.ClosedUnmerged", Desc: "same-state check ignores PR numbers"},
	{ID: "L15", File: trans, Old: "a.Merged == b.Merged &&\n", New: "\n", Desc: "same-state check ignores merged PRs"},
	{ID: "L16", File: trans, Old: "t := l.opts.Now().UTC()\n\t\tp.ReadAt = &t", New: "p.ReadAt = &time.Time{}", Desc: "a read without read_at is older than every read"},
	{ID: "L17", File: trans, Old: "l.decide(rec, now, false, true, src.Delivery, &ch)", New: "l.decide(rec, now, false, true, \"\", &ch)", Desc: "a free on a PR read does not record its delivery"},
	{ID: "L18", File: trans, Old: "l.decide(rec, now, false, true, src.Delivery, &ch)", New: "l.decide(rec, now, true, true, src.Delivery, &ch)", Desc: "a PR read also decides send_back_claim"},
	// decide: the keep, the unfree, the free and its flags.
	{ID: "L19", File: trans, Old: "\tif rec.Pin != nil {\n\t\treturn\n\t}\n", New: "", Desc: "a kept row is freed by the rules"},
	{ID: "L20", File: trans, Old: "(rec.PRs.Open > 0 || rec.PRs.Merged > 0)", New: "(rec.PRs.Open > 0)", Desc: "a merged PR does not unfree"},
	{ID: "L21", File: trans, Old: "(rec.PRs.Open > 0 || rec.PRs.Merged > 0)", New: "(rec.PRs.Merged > 0)", Desc: "a reopened PR does not unfree"},
	{ID: "L22", File: trans, Old: "case rec.Freed != nil && rec.Freed.Rule == dispatch.RuleAccept:", New: "case rec.Freed != nil:", Desc: "a reopened PR undoes a person's (or send_back_claim's) free"},
	{ID: "L23", File: trans, Old: "\t\t\trec.Freed = nil\n\t\t\tch.Decision, ch.Rule, ch.Evidence = DecisionUnfree,", New: "\t\t\tch.Decision, ch.Rule, ch.Evidence = DecisionUnfree,", Desc: "unfree recorded but the free kept"},
	{ID: "L24", File: trans, Old: "case rec.Freed == nil && rec.WouldFree != nil && rec.WouldFree.Rule == dispatch.RuleAccept:", New: "case false:", Desc: "a reopened PR does not clear accept_claim's would_free"},
	{ID: "L25", File: trans, Old: "\t\t\trec.WouldFree = nil\n\t\t\tch.Decision, ch.Rule, ch.Evidence = DecisionWouldUnfree,", New: "\t\t\tch.Decision, ch.Rule, ch.Evidence = DecisionWouldUnfree,", Desc: "would_unfree recorded but the would_free kept"},
	{ID: "L26", File: trans, Old: "\tif rec.Freed != nil {\n\t\treturn\n\t}\n\td := dispatch.Decide", New: "\td := dispatch.Decide", Desc: "a freed row is freed again (its record rewritten)"},
	{ID: "L27", File: trans, Old: "case sendBack && d.SendBack != nil && *d.SendBack == rules.Free:", New: "case d.SendBack != nil && *d.SendBack == rules.Free:", Desc: "send_back_claim decided on a PR read"},
	{ID: "L28", File: trans, Old: "case accept && d.Accept != nil && *d.Accept == rules.Free:", New: "case d.Accept != nil && *d.Accept == rules.Free:", Desc: "accept_claim decided on an upsert or evaluate"},
	{ID: "L29", File: trans, Old: "rule, on = dispatch.RuleSendBack, l.opts.ReleaseDeadClaims", New: "rule, on = dispatch.RuleSendBack, l.opts.FreeClosedPR", Desc: "send_back_claim behind the accept flag"},
	{ID: "L30", File: trans, Old: "rule, on = dispatch.RuleAccept, l.opts.FreeClosedPR", New: "rule, on = dispatch.RuleAccept, l.opts.ReleaseDeadClaims", Desc: "accept_claim behind the send-back flag"},
	{ID: "L31", File: trans, Old: "rule, on = dispatch.RuleAccept, l.opts.FreeClosedPR", New: "rule, on = dispatch.RuleAccept, true", Desc: "accept_claim frees with its flag off"},
	{ID: "L32", File: trans, Old: "rec.Freed, rec.WouldFree = fr, nil", New: "rec.Freed = fr", Desc: "a free keeps the earlier would_free"},
	{ID: "L33", File: trans, Old: "\t\tif rec.WouldFree != nil {\n\t\t\treturn // recorded when first decided\n\t\t}\n", New: "", Desc: "would_free rewritten on every decision"},
	{ID: "L34", File: trans, Old: "fr := &dispatch.FreeRecord{At: now, Rule: rule, Evidence: evidence, Delivery: delivery}", New: "fr := &dispatch.FreeRecord{At: now, Rule: rule, Evidence: evidence}", Desc: "a free records no delivery"},
	{ID: "L35", File: trans, Old: "evidence = fmt.Sprintf(\"send_backs %d < ceiling %d\", rec.SendBacks, rec.Ceiling)", New: "evidence = \"send_backs under the ceiling\"", Desc: "send_back_claim's evidence names no counts"},
	// Evaluate, Free, Keep, RecordExport.
	{ID: "L36", File: trans, Old: "\t\tif ch.Decision == \"\" {\n\t\t\treturn Change{None: true, Note: OutcomeUnchanged}, nil\n\t\t}\n", New: "", Desc: "an evaluate that decides nothing writes a version",
		Equivalent: "decide changes the row only with a decision, and update writes no version for an unchanged row with none: it answers unchanged either way"},
	{ID: "L37", File: trans, Old: "\t\tif rec.Freed != nil {\n\t\t\treturn Change{None: true, Note: OutcomeAlreadyFree}, nil\n\t\t}\n", New: "", Desc: "freeing a freed row writes it again"},
	{ID: "L38", File: trans, Old: "rec.WouldFree, rec.Pin = nil, nil\n\t\treturn Change{Action: ActionFree", New: "rec.WouldFree = nil\n\t\treturn Change{Action: ActionFree", Desc: "a person's free keeps the keep"},
	{ID: "L39", File: trans, Old: "\t\trec.Freed, rec.WouldFree = nil, nil\n\t\trec.Pin = &dispatch.Pin", New: "\t\trec.WouldFree = nil\n\t\trec.Pin = &dispatch.Pin", Desc: "a keep leaves the free in place"},
	{ID: "L40", File: trans, Old: "updateOpts{expect: expectVersion}", New: "updateOpts{expect: -1}", Desc: "an export outcome lands on a row that moved since the push was decided"},
	{ID: "L41", File: trans, Old: "\tif expectVersion < 1 {\n", New: "\tif expectVersion < 1 {\n\t\texpectVersion = -1\n\t}\n\tif false {\n", Desc: "an export outcome with no version (0) lands on whatever version is current"},
	{ID: "L42", File: trans, Old: "return l.update(ctx, \"free\", repo, issue, updateOpts{expect: expectOf(version)}", New: "return l.update(ctx, \"free\", repo, issue, updateOpts{expect: -1}", Desc: "a person's free lands on a row that moved past the version they saw"},
	{ID: "L43", File: trans, Old: "\tif version > 0 {\n\t\treturn version\n\t}\n\treturn -1", New: "\treturn -1", Desc: "expectOf drops every version"},
	// RecordPRs: the read counted for the row's attempt.
	{ID: "A10", File: trans, Old: "p := rec.Attempt().Count(p)", New: "p := dispatch.Attempt{}.Count(p)", Desc: "a read counts every PR of the branch, earlier attempts' too (issue 21)", Tests: attemptLedgerTests},
	{ID: "A11", File: trans, Old: " && slices.Equal(a.Earlier, b.Earlier)", New: "", Desc: "same-state check ignores earlier attempts' PRs (a newly listed one keeps the older read's read_at)", Tests: attemptLedgerTests},
	{ID: "A12", File: trans, Old: "s += \"; earlier attempts' \" + prNumbers(p.Earlier) + \" not counted\"", New: "", Desc: "the evidence does not say which PRs did not count", Tests: attemptLedgerTests},
	// RecordPRsOn: the caller's copy of the row.
	{ID: "L44", File: upd, Old: "fromSeen := attempt == 0 && o.seen != nil", New: "fromSeen := o.seen != nil", Desc: "a row that moved since the caller read it is never read again"},
	{ID: "L45", File: upd, Old: "\trec, v, err := decodeRow([]any{strconv.FormatInt(seen.Version, 10), string(data)})\n\treturn stored{rec: rec, version: v}, err", New: "\t_ = data\n\treturn stored{rec: seen, version: seen.Version}, nil", Desc: "the write changes the caller's copy of the row"},
	{ID: "L46", File: upd, Old: "\t\tdefault:\n\t\t\tif !fromSeen {", New: "\t\tdefault:\n\t\t\tif true {", Desc: "a caller's stale copy counts as a conflict of the ledger's"},
})

// withTests sets the tests of every mutant in ms that names none.
func withTests(tests string, ms []Mutant) []Mutant {
	for i := range ms {
		if ms[i].Tests == "" {
			ms[i].Tests = tests
		}
	}
	return ms
}
