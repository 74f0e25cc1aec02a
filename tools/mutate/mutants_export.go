package main

import "slices"

const (
	check   = "internal/export/check.go"
	publish = "internal/export/publish.go"
	gitgo   = "internal/export/git.go"
)

// The export's tests, in file order: the checks' unit tests (milliseconds)
// run before the publisher's, which push to real git repositories. The
// client's and the workers' tests do not reach these files.
const (
	exportCheckTests   = "^Test(BoundaryMatches|RefusalsComeIn|ChecksWaitFor|TitleIsCut|MaySupersede|OnlyAccept|CommitsWithNoDiff|HasPRCounts)"
	exportPublishTests = "^Test(PublishEndToEnd|AlreadyAt|EachRefusal|AcceptedHeadGate|AnOlderAttempt|ANewerRemote|ARemoteWithAnOpenPR|AFailedGitHubRead|ALeaseLost|ABundleTimeout|TheGitToken|DryRun|AJobNaming|AKilledTasks|AnExistingPR|GitsStderr|ARefusedTagPush|ABranchThatMoved|ADeclinedBranch|ScrubRemoves|OnlyARealConflict|ACorruptCache|AKilledBundleVerify|TheCacheIsCollected|APRGitHubRefuses|ADryRunsFailedAncestor)"
)

// exportMutants break the checks before a push, in their order (a PR, the
// issue, the accepted head, the diff, workflows, size, conflicts, the
// Boundary), the branch state read before pushing, the supersede (tag the
// old tip first, then replace under a lease) and the scrub of git's output.
var exportMutants = slices.Concat(withTests(exportCheckTests, []Mutant{
	// Check: the order and each check.
	{ID: "E01", File: check, Old: "\tif p := (dispatch.Attempt{JudgedHead: f.JudgedHead}).Publishing(f.PRs); p.Any() {\n\t\treturn &Refusal{KindHasPR, fmt.Sprintf(\"the branch already has a pull request (%s)\", prList(p))}\n\t}\n\tif !f.IssueOpen {\n\t\treturn &Refusal{KindIssueNotOpen, \"the issue is not open\"}\n\t}\n",
		New: "\tif !f.IssueOpen {\n\t\treturn &Refusal{KindIssueNotOpen, \"the issue is not open\"}\n\t}\n\tif p := (dispatch.Attempt{JudgedHead: f.JudgedHead}).Publishing(f.PRs); p.Any() {\n\t\treturn &Refusal{KindHasPR, fmt.Sprintf(\"the branch already has a pull request (%s)\", prList(p))}\n\t}\n", Desc: "the issue is checked before the branch's PRs"},
	{ID: "E02", File: check, Old: "); p.Any() {\n\t\treturn &Refusal{KindHasPR", New: "); p.Open > 0 {\n\t\treturn &Refusal{KindHasPR", Desc: "only an open PR stops the push (one at the judged head, closed or merged, does not)"},
	{ID: "A13", File: check, Old: "if p := (dispatch.Attempt{JudgedHead: f.JudgedHead}).Publishing(f.PRs); p.Any() {", New: "if p := f.PRs; p.Any() {", Desc: "an earlier attempt's closed PR stops the push (issue 21)"},
	{ID: "E03", File: check, Old: "\tif !f.IssueOpen {\n\t\treturn &Refusal{KindIssueNotOpen", New: "\tif false {\n\t\treturn &Refusal{KindIssueNotOpen", Desc: "a closed issue is published"},
	{ID: "E04", File: check, Old: "case !dispatch.ValidHead(judged):", New: "case judged == \"\":", Desc: "a judged head that is not a full lower-case commit id is accepted"},
	{ID: "E05", File: check, Old: "case head != \"\" && head != judged:", New: "case false:", Desc: "the export's head is published though it is not the judged head"},
	{ID: "E06", File: check, Old: "case verdict != \"accept\":", New: "case verdict == \"sendBack\":", Desc: "a verdict other than accept (or sendBack) is published"},
	{ID: "E07", File: check, Old: "if d.Commits <= 0 {", New: "if d.Commits < 0 {", Desc: "a branch with no commits ahead is published"},
	{ID: "E08", File: check, Old: "\tif len(d.Files) == 0 {\n\t\treturn &Refusal{KindNoCommits, \"no diff against the base\"}\n\t}\n", New: "", Desc: "a branch with no diff is published"},
	{ID: "E09", File: check, Old: "if strings.HasPrefix(p, \".github/workflows/\") {", New: "if p == \".github/workflows\" {", Desc: "a workflow change is published"},
	{ID: "E10", File: check, Old: "d.Commits > MaxCommits || ", New: "d.Commits >= MaxCommits || ", Desc: "20 commits refused as too large"},
	{ID: "E11", File: check, Old: "len(d.Files) > MaxFiles {", New: "len(d.Files) > MaxFiles+1 {", Desc: "26 files published"},
	{ID: "E12", File: check, Old: "if d.Conflict != \"\" {", New: "if false {", Desc: "a branch that conflicts with the base is published"},
	{ID: "E13", File: check, Old: "len(strays) > 0 {", New: "len(strays) > 1 {", Desc: "one write outside the Boundary is published"},
	{ID: "E14", File: check, Old: "\tif d.Conflict != \"\" {\n\t\treturn &Refusal{KindConflicts, \"conflicts with the base: \" + d.Conflict}\n\t}\n\tif strays",
		New: "\tif strays := Strays(f.OwnedPaths, d.Files); len(strays) > 0 {\n\t\treturn &Refusal{KindBoundary, \"wrote outside its boundary\"}\n\t}\n\tif d.Conflict != \"\" {\n\t\treturn &Refusal{KindConflicts, \"conflicts with the base: \" + d.Conflict}\n\t}\n\tif strays", Desc: "the Boundary is checked before conflicts"},
	{ID: "E15", File: check, Old: "return path == owned || strings.HasPrefix(path, owned+\"/\")", New: "return path == owned || strings.HasPrefix(path, owned)", Desc: "the Boundary holds by string prefix (docs holds docsite/x)"},
	{ID: "E16", File: check, Old: "return path == owned || strings.HasPrefix(path, owned+\"/\")", New: "return strings.HasPrefix(path, owned+\"/\")", Desc: "an owned file does not hold itself"},
	{ID: "E17", File: check, Old: "\tif len(paths) == 0 {\n\t\treturn nil\n\t}\n\tvar out []string", New: "\tvar out []string", Desc: "a row with no Boundary has every file stray"},
	{ID: "E18", File: check, Old: "return strings.TrimRight(p, \"/\")", New: "return p", Desc: "a trailing / is not normalized"},
	{ID: "E19", File: check, Old: "case strings.HasPrefix(p, \"./\"):\n\t\t\tp = p[2:]\n", New: "", Desc: "a leading ./ is not normalized"},
	{ID: "E20", File: check, Old: "case exportTime <= tipTime:", New: "case exportTime < tipTime:", Desc: "a remote tip committed at the same second as the export is replaced"},
	{ID: "E21", File: check, Old: "case prs.Open > 0:", New: "case prs.Open > 1:", Desc: "a remote branch with one open PR is replaced"},
	{ID: "E22", File: check, Old: "case !accepted:\n\t\treturn false, ", New: "case false:\n\t\treturn false, ", Desc: "a head that is not the accepted one replaces the remote"},
}), withTests(exportPublishTests, []Mutant{
	// Push: GitHub facts first, then the branch state, the checks on the real diff.
	{ID: "E23", File: publish, Tests: "^Test(PublishEndToEnd|EachRefusal)", Old: "\tif r := Check(f); r != nil {\n\t\treturn p.refused(log, job, r, prs), nil\n\t}\n", New: "", Desc: "the GitHub facts are checked only after the bundle is fetched and imported"},
	{ID: "E24", File: publish, Tests: "^Test(AcceptedHeadGate)", Old: "\tf.Head = head\n", New: "", Desc: "the imported head is not checked against the judged head"},
	{ID: "E25", File: publish, Tests: "^Test(AlreadyAtHeadStillRunsTheChecks)", Old: "\tif ref := Check(*f); ref != nil {\n\t\treturn Outcome{State: StateRefused, Refusal: ref, Head: head}, nil\n\t}\n", New: "", Desc: "the real diff is not checked (workflows, size, conflicts, Boundary)"},
	{ID: "E26", File: publish, Tests: "^Test(AnOlderAttemptIsSuperseded|AlreadyAt)", Old: "already := remoteHead != \"\" && remoteHead == job.JudgedHead", New: "already := remoteHead != \"\"", Desc: "any remote branch counts as already at the judged head"},
	{ID: "E27", File: publish, Tests: "^Test(ABranchThatMovedWhileReadIsReadAgain)", Old: "\t\tif head != remoteHead {\n\t\t\treturn Outcome{}, &Error{Op: \"git fetch\"", New: "\t\tif false {\n\t\t\treturn Outcome{}, &Error{Op: \"git fetch\"", Desc: "a branch that moved while being read is taken as at the judged head"},
	{ID: "E28", File: publish, Tests: "^Test(ADeclinedBranchPushIsAFailure)", Old: "\tif !isNotFastForward(res.reason) {", New: "\tif false {", Desc: "a push the remote declined (a hook, protection) is superseded"},
	{ID: "E29", File: publish, Tests: "^Test(ANewerRemoteCommitIsNotReplaced|ARemoteWithAnOpenPRIsLeftAlone)", Old: "\tif !ok {\n\t\treturn Outcome{State: StateRefused, Head: head,\n\t\t\tRefusal: &Refusal{KindNotFastForward, fmt.Sprintf(\"%s is at %s, not an ancestor of %s: %s\", branch,", New: "\tif !ok && false {\n\t\treturn Outcome{State: StateRefused, Head: head,\n\t\t\tRefusal: &Refusal{KindNotFastForward, fmt.Sprintf(\"%s is at %s, not an ancestor of %s: %s\", branch,", Desc: "a remote tip MaySupersede keeps is replaced"},
	{ID: "E30", File: publish, Tests: "^Test(ARefusedTagPushNeverReplacesTheBranch)", Old: "if !res.ok && !alreadyExists(res.reason) {", New: "if false {", Desc: "the branch is replaced although the tag keeping its old tip was refused"},
	{ID: "E31", File: publish, Tests: "^Test(ARefusedTagPushNeverReplacesTheBranch|ALeaseLostBetweenReadAndPushIsRetryable)", Old: "\tres, err := r.push(ctx, tip+\":\"+tag)\n\tif err != nil {\n\t\treturn Outcome{}, err\n\t}\n\tif !res.ok && !alreadyExists(res.reason) {",
		New: "\tif res, err := r.push(ctx, r.ref(branch)+\":refs/heads/\"+branch, \"--force-with-lease=refs/heads/\"+branch+\":\"+tip); err != nil || !res.ok {\n\t\treturn Outcome{}, &Error{Op: \"git push\", Retryable: true, Err: ErrLeaseLost}\n\t}\n\tres, err := r.push(ctx, tip+\":\"+tag)\n\tif err != nil {\n\t\treturn Outcome{}, err\n\t}\n\tif !res.ok && !alreadyExists(res.reason) {", Desc: "the branch is replaced before the tag keeping its old tip is pushed"},
	{ID: "E32", File: publish, Tests: "^Test(AnOlderAttemptIsSuperseded|ALeaseLost)", Old: "res, err := r.push(ctx, tip+\":\"+tag)", New: "res, err := r.push(ctx, head+\":\"+tag)", Desc: "the supersede tag keeps the new head, not the old tip"},
	{ID: "E33", File: publish, Tests: "^Test(ALeaseLostBetweenReadAndPushIsRetryable)", Old: "\"--force-with-lease=refs/heads/\"+branch+\":\"+tip)", New: "\"--force\")", Desc: "the branch is replaced without a lease on the tip read"},
	{ID: "E34", File: publish, Tests: "^Test(ARefusedTagPushNeverReplacesTheBranch)", Old: "return Outcome{}, &Error{Op: \"git push\", Err: fmt.Errorf(\"keeping %s as %s: %s\"", New: "return Outcome{}, &Error{Op: \"git push\", Retryable: true, Err: fmt.Errorf(\"keeping %s as %s: %s\"", Desc: "a refused supersede tag is an outage to wait out, not a failure"},
	{ID: "E35", File: publish, Tests: "^Test(ADeclinedBranchPushIsAFailure)", Old: "return Outcome{}, &Error{Op: \"git push\", Err: fmt.Errorf(\"%s: the remote declined the push: %s\"", New: "return Outcome{}, &Error{Op: \"git push\", Retryable: true, Err: fmt.Errorf(\"%s: the remote declined the push: %s\"", Desc: "a declined branch push is an outage to wait out"},
	{ID: "E36", File: publish, Tests: "^Test(ALeaseLostBetweenReadAndPushIsRetryable)", Old: "\t\treturn Outcome{}, &Error{Op: \"git push\", Retryable: true,\n\t\t\tErr: fmt.Errorf(\"%s: lease on %s refused (%s): %w\"", New: "\t\treturn Outcome{}, &Error{Op: \"git push\",\n\t\t\tErr: fmt.Errorf(\"%s: lease on %s refused (%s): %w\"", Desc: "a lost lease is a failure, not a retry"},
	{ID: "E37", File: publish, Tests: "^Test(AnOlderAttemptIsSuperseded|ANewerRemote|AcceptedHeadGate|DryRun)", Old: "accepted := acceptedAt(f.Verdict, f.JudgedHead, head) == nil", New: "accepted := true", Desc: "the supersede does not check the exported head is the accepted one",
		Equivalent: "the checks on the real diff ran the same gate on the same head and refused before any push"},
	{ID: "E38", File: publish, Tests: "^Test(AnOlderAttemptIsSuperseded|ALeaseLost|ARefusedTagPush)", Old: "return strings.Contains(reason, \"already exists\") || ", New: "return ", Desc: "a supersede tag already kept (a retry) blocks the supersede",
		Equivalent: "the tag is named by the tip's 12-character id: kept by an earlier try it points at that tip, which git push reports up to date (=), never already exists, unless two commits share those 12 characters"},
	{ID: "E39", File: publish, Tests: "^Test(AJobNamingNoRepositoryIsAnError)", Old: "\tif !ghrepo.Valid(job.Repo) {", New: "\tif !ghrepo.Valid(job.Repo) && job.Repo == \"\" {", Desc: "a job naming no owner/name repository is pushed"},
	{ID: "E40", File: publish, Tests: "^Test(AnOlderAttemptIsSuperseded)", Old: "tag := \"refs/tags/queen-superseded/\" + strconv.FormatInt(job.Issue, 10) + \"/\" + short(tip)", New: "tag := \"refs/tags/queen-superseded/\" + strconv.FormatInt(job.Issue, 10)", Desc: "the supersede tag does not name the old tip (a second supersede finds it taken)"},
	// git.go: what git printed is scrubbed before it reaches an error or a log.
	{ID: "E41", File: gitgo, Tests: "^Test(GitsStderrNeverCarriesTheCredential|TheGitTokenNeverAppearsInErrors|ScrubRemoves)", Old: "outText, errText := r.scrub(stdout.String()), r.scrub(stderr.String())", New: "outText, errText := stdout.String(), stderr.String()", Desc: "git's output reaches errors unscrubbed"},
	{ID: "E42", File: gitgo, Tests: "^Test(ScrubRemovesTheHeadersBase64|GitsStderr)", Old: "return redact.String(s, r.token, r.header, strings.TrimPrefix(r.header, \"Basic \"))", New: "return redact.String(s, r.token)", Desc: "the Authorization header's base64 is not scrubbed"},
	{ID: "E43", File: gitgo, Tests: "^Test(GitsStderrNeverCarriesTheCredential)", Old: "ge := &gitError{exitCode: -1, stderr: lastLines(errText)}", New: "ge := &gitError{exitCode: -1, stderr: lastLines(stderr.String())}", Desc: "git's stderr cut and kept in the error unscrubbed"},
	{ID: "E44", File: gitgo, Tests: "^Test(ScrubRemovesTheHeadersBase64|GitsStderr)", Old: "return redact.String(s, r.token, r.header, strings.TrimPrefix(r.header, \"Basic \"))", New: "_ = redact.String // still imported\n\treturn strings.ReplaceAll(s, r.token, \"***\")", Desc: "only the whole token is scrubbed (a cut piece or another credential's shape stays)"},
	// git.go: only git's conflict answer refuses; the cache is collected.
	{ID: "E45", File: gitgo, Tests: "^Test(OnlyARealConflictIsRefused|ACorruptCacheIsNotAConflict|EachRefusal)", Old: "if !errors.As(err, &ge) || ge.exitCode != mergeConflictStatus || ge.timedOut {", New: "if !errors.As(err, &ge) || ge.timedOut {", Desc: "any failed git merge-tree (a full disk, a killed or old git, a corrupt clone) is the refusal conflicts"},
	{ID: "E46", File: gitgo, Tests: "^Test(OnlyARealConflictIsRefused|EachRefusal)", Old: "if len(lines) < 2 || !objectID(lines[0]) {", New: "if len(lines) < 1 {", Desc: "a merge-tree exit 1 without the merged tree's id is the refusal conflicts"},
	{ID: "E47", File: gitgo, Tests: "^Test(AKilledBundleVerifyIsNotABadBundle|EachRefusal)", Old: "return errors.As(err, &ge) && ge.exitCode >= 0 && !ge.timedOut", New: "return errors.As(err, &ge) && !ge.timedOut", Desc: "a git bundle verify killed before it answered refuses the bundle"},
	{ID: "E48", File: gitgo, Tests: "^Test(TheCacheIsCollectedPastItsBound)", Old: "if loose <= orDefault(r.g.GCLoose, DefaultGCLoose) && packs <= orDefault(r.g.GCPacks, DefaultGCPacks) {", New: "if loose >= 0 || packs >= 0 {", Desc: "the clone cache is never collected"},
	{ID: "E49", File: gitgo, Tests: "^Test(TheCacheIsCollectedPastItsBound)", Old: "\"gc\", \"--quiet\", \"--prune=now\")", New: "\"gc\", \"--quiet\")", Desc: "gc keeps the finished tasks' unreachable imports (two weeks, git's default)"},
	// publish.go: GitHub's lasting refusal of the PR; a dry run's ancestry read (git.go).
	{ID: "E50", File: publish, Tests: "^Test(APRGitHubRefusesIsARefusal)", Old: "case errors.As(err, &ref) && ref.Kind == KindPRRefused:", New: "case false:", Desc: "a PR GitHub refuses for good is an error, the row left pushed"},
	{ID: "E51", File: gitgo, Tests: "^Test(ADryRunsFailedAncestorReadIsNotARefusal|DryRun)", Old: "return errors.As(err, &ge) && ge.exitCode == notAncestorStatus && !ge.timedOut", New: "return errors.As(err, &ge) || err != nil", Desc: "a dry run takes any failed ancestry read for \"not an ancestor\" and may refuse a fast-forward"},
}))
