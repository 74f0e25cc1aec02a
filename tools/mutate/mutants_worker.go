package main

const (
	exportpush = "internal/worker/exportpush.go"
	githubgo   = "internal/worker/github.go"
)

// workerPkgs: the export's outcome is recorded by internal/worker, whose
// tests run the publisher against a real git remote and a real Redis ledger.
var workerPkgs = []string{"./internal/worker/"}

// workerMutants break the recording of an export attempt: never on a row
// that moved, a refused tag recorded as the failure it is, and git's output
// kept out of the row and the log.
var workerMutants = []Mutant{
	{ID: "W01", File: exportpush, Pkgs: workerPkgs, Tests: "^TestExportOutcomeNotRecordedOnARow",
		Old: "if !rec.SameDispatch(&published.Row) || !publishable(rec, head) {", New: "if !publishable(rec, head) && published != nil {", Desc: "an outcome is recorded on a new dispatch of the row"},
	{ID: "W02", File: exportpush, Pkgs: workerPkgs, Tests: "^TestExportOutcomeNotRecordedOnARow",
		Old: "if !rec.SameDispatch(&published.Row) || !publishable(rec, head) {", New: "if !rec.SameDispatch(&published.Row) {", Desc: "an outcome is recorded on a row no longer accepted at the head"},
	{ID: "W03", File: exportpush, Pkgs: workerPkgs, Tests: "^TestExportOutcomeNotRecordedOnARow|^TestExportPushSkipsRowsThatMovedOn$",
		Old: "rec.JudgedHead != nil && *rec.JudgedHead == head", New: "rec.JudgedHead != nil", Desc: "a row accepted at another head counts as accepted at the task's"},
	{ID: "W04", File: exportpush, Pkgs: workerPkgs, Tests: "^TestExportOutcomeNotRecordedOnARow",
		Old:  "\t\tif !errors.Is(err, ledger.ErrConflict) || attempt >= recordRetries {\n\t\t\treturn st.State, err\n\t\t}\n\t\trec, err = w.d.Ledger.Get(ctx, rec.Repo, rec.Issue)",
		New:  "\t\tif !errors.Is(err, ledger.ErrConflict) || attempt >= recordRetries {\n\t\t\treturn st.State, err\n\t\t}\n\t\trec.Version++\n\t\tif _, err = w.d.Ledger.RecordExport(ctx, rec.Repo, rec.Issue, st, rec.Version, src); err == nil {\n\t\t\treturn st.State, nil\n\t\t}\n\t\trec, err = w.d.Ledger.Get(ctx, rec.Repo, rec.Issue)",
		Desc: "after a conflict the outcome is written on the next version without re-reading the row"},
	{ID: "W05", File: exportpush, Pkgs: workerPkgs, Tests: "^TestExportRefusedTagKeeps|^TestExportDeclinedBranchPushFails$",
		Old: "if errors.Is(perr, export.ErrLeaseLost) || export.IsRetryable(perr) {", New: "if true {", Desc: "a failure a retry cannot fix is recorded as retrying"},
	{ID: "W06", File: gitgo, Pkgs: workerPkgs, Tests: "^TestExportGitEchoNeverLeaksTheToken$",
		Old: "outText, errText := r.scrub(stdout.String()), r.scrub(stderr.String())", New: "outText, errText := stdout.String(), stderr.String()", Desc: "git's output reaches the task's error, the row's last_error and the log unscrubbed"},
	{ID: "W07", File: gitgo, Pkgs: workerPkgs, Tests: "^TestExportGitEchoNeverLeaksTheToken$",
		Old: "ge := &gitError{exitCode: -1, stderr: lastLines(errText)}", New: "ge := &gitError{exitCode: -1, stderr: lastLines(stderr.String())}", Desc: "git's stderr is cut into the row's last_error before it is scrubbed"},
	{ID: "W08", File: exportpush, Pkgs: workerPkgs, Tests: "^TestExportPR(BaseMissing|CreationOutage)",
		Old: "\tcase perr != nil:\n\t\t// A push whose PR", New: "\tcase perr != nil && out.State == \"\":\n\t\t// A push whose PR", Desc: "a push whose PR could not be opened is left pushed, for every sweep to take again"},
	{ID: "W09", File: githubgo, Pkgs: workerPkgs, Tests: "^TestExportPRGitHubRefuses",
		Old: "\tif r := prRefusal(err); r != nil {\n\t\treturn 0, r\n\t}\n", New: "", Desc: "a PR GitHub refuses for good is a failure, tried again after every backoff"},
	{ID: "W10", File: githubgo, Pkgs: workerPkgs, Tests: "^TestPRRefusalReadsGitHubsAnswer$|^TestExportPRBaseMissing",
		Old: "if e.Field == \"base\" || e.Field == \"head\" {", New: "if e.Field == \"head\" {", Desc: "a PR refused for a missing base is refused for good, not retried once the base is back"},
}
