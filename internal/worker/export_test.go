package worker

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/gittest"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

// accepted makes the export's branch queen-<issue> with one commit on the
// remote's master, writes the row accepted at its head and opens the issue.
func (e *env) accepted(issue int64, files map[string]string) string {
	e.t.Helper()
	branch := fmt.Sprintf("queen-%d", issue)
	e.work.Branch(e.t, branch, "origin/master")
	head := e.work.Commit(e.t, branch, files, fmt.Sprintf("bee work on #%d", issue))
	e.gh.SetIssue(repo, int(issue), true, fmt.Sprintf("Issue %d: make the compiler faster", issue))
	e.row(issue, "accept", map[string]any{"judged_head": head})
	return head
}

func (e *env) exportSweep() exportSweepReport {
	e.t.Helper()
	log := e.w.log
	rep, rows, err := e.w.exportSweep(e.ctx, log)
	if err != nil {
		e.t.Fatalf("export sweep: %v", err)
	}
	e.w.reportUnmatched(e.ctx, log, rows, &rep)
	return rep
}

func (e *env) exportState(issue int64) string {
	if st := e.get(issue).Export; st != nil {
		return st.State
	}
	return ""
}

func (e *env) allPublished(heads map[int64]string) func() bool {
	return func() bool {
		for issue := range heads {
			if e.exportState(issue) != string(export.StatePROpened) {
				return false
			}
		}
		return true
	}
}

// checkPublished asserts each branch is at its judged head on the remote
// with exactly one PR on GitHub, and nothing else was opened.
func (e *env) checkPublished(heads map[int64]string) {
	e.t.Helper()
	prs := map[string]int{}
	for _, p := range e.gh.PRs(repo) {
		prs[p.HeadRef]++
	}
	for issue, head := range heads {
		branch := fmt.Sprintf("queen-%d", issue)
		if got := e.remote.Ref(e.t, branch); got != head {
			e.t.Errorf("%s on the remote is %q, want the judged head %s", branch, got, head)
		}
		if prs[branch] != 1 {
			e.t.Errorf("%s has %d PRs, want exactly 1", branch, prs[branch])
		}
		st := e.get(issue).Export
		if st == nil || st.PushedHead != head || st.PRNumber == 0 || st.LastError != "" {
			e.t.Errorf("#%d export state %+v, want pr_opened at %s with its PR", issue, st, head)
		}
	}
	if len(e.gh.PRs(repo)) != len(heads) {
		e.t.Errorf("%d PRs on GitHub, want %d", len(e.gh.PRs(repo)), len(heads))
	}
}

func TestExportBacklogDrains(t *testing.T) {
	e := newEnv(t, options{export: true})
	heads := map[int64]string{}
	for i := int64(1); i <= 30; i++ {
		heads[i] = e.accepted(i, map[string]string{fmt.Sprintf("src/part%d.rs", i): fmt.Sprintf("fn part%d() {}\n", i)})
	}
	e.row(31, "accept", map[string]any{"judged_head": nil}) // no head: never pushed
	e.row(32, "sendBack", nil)                              // not accepted

	rep := e.exportSweep()
	if rep.Enqueued != 30 || rep.NoHead != 1 || rep.Rows != 31 {
		t.Fatalf("first sweep %+v, want 30 enqueued, 1 without head, 31 accepted rows", rep)
	}
	// A second sweep before any ran enqueues no head twice.
	if rep := e.exportSweep(); rep.Enqueued != 0 || rep.Queued != 30 {
		t.Fatalf("second sweep %+v, want all 30 already queued", rep)
	}
	if q, err := e.insp.GetQueueInfo(tasks.Queue); err != nil || q.Pending != 30 {
		t.Fatalf("pending tasks %+v (%v), want 30", q, err)
	}

	e.serve(10 * time.Millisecond)
	e.eventually("the backlog to drain", e.allPublished(heads))
	e.checkPublished(heads)
	if n := e.pushes(); n != 30 {
		t.Errorf("pushes = %d, want one per branch", n)
	}
	// One installation token for all 30 pushes and PRs: minted once, reused.
	if n := e.gh.Mints(); n != 1 {
		t.Errorf("%d installation tokens minted for the backlog, want 1", n)
	}
	pr := e.gh.PRs(repo)[0]
	if pr.Base != "master" || !strings.Contains(pr.Body, "Closes #") || !strings.HasPrefix(pr.Title, "Issue ") {
		t.Errorf("PR %+v: want base master, the issue's title and Closes #N", pr)
	}
	// Published rows are left alone by later sweeps.
	if rep := e.exportSweep(); rep.Enqueued != 0 || rep.Published != 30 {
		t.Fatalf("sweep after the drain %+v, want 30 published, nothing enqueued", rep)
	}
	if n := value(e.m.Export.WithLabelValues(string(export.StatePROpened))); n != 30 {
		t.Errorf("export outcomes pr_opened = %v, want 30", n)
	}
}

// The export fails for longer than the retry budget would last if outages
// spent it; once it is back everything is published once.
func TestExportOutageThenRecovery(t *testing.T) {
	e := newEnv(t, options{export: true})
	heads := map[int64]string{}
	for i := int64(1); i <= 4; i++ {
		heads[i] = e.accepted(i, map[string]string{fmt.Sprintf("lib/m%d.go", i): "package lib\n"})
	}
	e.exp.Fail(http.StatusServiceUnavailable, -1)
	if rep := e.exportSweep(); rep.Enqueued != 4 {
		t.Fatalf("sweep %+v, want 4 enqueued", rep)
	}
	// The listing failed too: the sweep still enqueued everything.
	if rep := e.exportSweep(); rep.Unmatched != -1 || rep.Queued != 4 {
		t.Fatalf("sweep during the outage %+v: want the listing unread and 4 still queued", rep)
	}
	e.serve(5 * time.Millisecond)
	budget := tasks.ExportPushMaxRetry + 2
	e.eventually("every push to outlast its retry budget", func() bool {
		for i := range heads {
			if e.exp.Requests(fmt.Sprintf("/queen/export/%d", i)) < budget {
				return false
			}
		}
		return true
	})
	if a := e.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived during the outage: %s", len(a), a[0].LastErr)
	}
	// Only the first waiting attempt wrote the row.
	st := e.get(1).Export
	if st == nil || st.State != StateRetrying || st.Attempts != 1 || !strings.Contains(st.LastError, "503") {
		t.Fatalf("row during the outage: %+v, want retrying recorded once with the last error", st)
	}
	if e.pushes() != 0 || len(e.gh.PRs(repo)) != 0 {
		t.Fatal("something was published while the export was down")
	}

	e.exp.Fail(0, 0)
	e.eventually("the backlog to drain after the outage", e.allPublished(heads))
	e.checkPublished(heads)
	if n := e.pushes(); n != 4 {
		t.Errorf("pushes = %d, want 4", n)
	}
	if a := e.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived", len(a))
	}
}

func TestExportRefusalRecordedNotRetriedUntilRowChanges(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(7, map[string]string{".github/workflows/ci.yml": "on: push\n"})

	if err := e.w.ExportPush(e.ctx, pushTask(t, 7, head)); err != nil {
		t.Fatalf("a refusal ends the task without retry: %v", err)
	}
	rec := e.get(7)
	st := rec.Export
	if st == nil || st.State != string(export.StateRefused) || !strings.Contains(st.Refusal, export.KindWorkflow) ||
		!strings.Contains(st.Refusal, ".github/workflows/ci.yml") || st.Attempts != 1 || st.Version != rec.Version {
		t.Fatalf("export state %+v (row version %d), want refused (workflow) at the row's version", st, rec.Version)
	}
	hist, err := e.ledger.History(e.ctx, repo, 7, 10)
	if err != nil || len(hist) == 0 || hist[0].Decision != string(export.StateRefused) {
		t.Fatalf("audit %+v (%v), want the refusal as the latest entry", hist, err)
	}
	if e.pushes() != 0 || e.remote.Ref(t, "queen-7") != "" || len(e.gh.PRs(repo)) != 0 {
		t.Fatal("a refused row was pushed or got a PR")
	}

	if rep := e.exportSweep(); rep.Enqueued != 0 || rep.Settled != 1 {
		t.Fatalf("sweep after the refusal %+v, want it settled", rep)
	}
	// The Queen writes the row again: decided afresh.
	e.upsert(7, map[string]any{"owned_paths": []string{"src/"}})
	if rep := e.exportSweep(); rep.Enqueued != 1 {
		t.Fatalf("sweep after the row changed %+v, want it enqueued again", rep)
	}
}

func TestExportDryRunPublishesNothing(t *testing.T) {
	e := newEnv(t, options{export: true, dryRun: true})
	head := e.accepted(3, map[string]string{"src/a.rs": "fn a() {}\n"})
	if err := e.w.ExportPush(e.ctx, pushTask(t, 3, head)); err != nil {
		t.Fatal(err)
	}
	st := e.get(3).Export
	if st == nil || st.State != string(export.StateDryRun) {
		t.Fatalf("export state %+v, want dry_run", st)
	}
	if e.pushes() != 0 || e.remote.Ref(t, "queen-3") != "" || len(e.gh.PRs(repo)) != 0 {
		t.Fatal("a dry run pushed or opened a PR")
	}
	if rep := e.exportSweep(); rep.Enqueued != 0 || rep.Settled != 1 {
		t.Fatalf("sweep after the dry run %+v, want it settled", rep)
	}
}

func TestExportPushSkipsRowsThatMovedOn(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(4, map[string]string{"src/a.rs": "fn a() {}\n"})
	// The Queen sent it back after the task was enqueued.
	e.upsert(4, map[string]any{"review_state": "sendBack"})
	if err := e.w.ExportPush(e.ctx, pushTask(t, 4, head)); err != nil {
		t.Fatal(err)
	}
	if e.get(4).Export != nil || e.pushes() != 0 {
		t.Fatal("a row no longer accepted at the head was published")
	}
}

func TestExportPushWaitsOutGitHub(t *testing.T) {
	clk := testkit.NewClock(time.Now())
	e := newEnv(t, options{export: true, clock: clk})
	head := e.accepted(5, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.gh.Down(true)
	err := e.w.ExportPush(e.ctx, pushTask(t, 5, head))
	if !isWait(err) {
		t.Fatalf("GitHub down: %v, want a wait", err)
	}
	if st := e.get(5).Export; st == nil || st.State != StateRetrying || st.Attempts != 1 {
		t.Fatalf("export state %+v, want the failed attempt recorded", st)
	}
	e.gh.Down(false)
	e.gh.SecondaryRateLimit(1, 42*time.Second)
	err = e.w.ExportPush(e.ctx, pushTask(t, 5, head))
	if !isWait(err) || !strings.Contains(err.Error(), "42s") {
		t.Fatalf("secondary rate limit: %v, want a wait of 42s", err)
	}
	until := clk.Now().Add(42 * time.Second).UTC().Truncate(time.Millisecond)
	if st := e.get(5).Export; st.State != StateWaiting || st.Until == nil || !st.Until.Equal(until) || st.Attempts != 2 {
		t.Fatalf("export state %+v, want waiting until %v", st, until)
	}
	// GitHub's pause holds for every replica: a second worker on the same
	// Redis opens no PR of the installation before it ends.
	other := New(Deps{Ledger: e.ledger, Installs: e.reg, GitHub: e.app, RDB: e.rdb, Now: clk.Now,
		Export: e.w.d.Export, Metrics: e.m, Logger: e.w.log})
	err = other.ExportPush(e.ctx, pushTask(t, 5, head))
	if !isWait(err) || e.gh.Count(githubtest.RouteCreatePull) != 0 {
		t.Fatalf("another replica during GitHub's pause: %v, %d PRs created", err, e.gh.Count(githubtest.RouteCreatePull))
	}
	// Git is not paced: the branch went out, its PR waits for the same turn.
	if st := e.get(5).Export; st.State != StateWaiting || !st.Until.Equal(until) || st.PushedHead != head || st.Attempts != 3 {
		t.Fatalf("export state %+v, want pushed and waiting until %v", st, until)
	}
	// Waiting again for the same turn records nothing new.
	if err := other.ExportPush(e.ctx, pushTask(t, 5, head)); !isWait(err) {
		t.Fatalf("again during the pause: %v, want a wait", err)
	}
	if st := e.get(5).Export; st.Attempts != 3 {
		t.Fatalf("attempts = %d, want 3 recorded", st.Attempts)
	}
	clk.Add(43 * time.Second)
	if err := other.ExportPush(e.ctx, pushTask(t, 5, head)); err != nil {
		t.Fatal(err)
	}
	e.checkPublished(map[int64]string{5: head})
	if st := e.get(5).Export; st.Attempts != 4 || st.Until != nil {
		t.Fatalf("export state %+v, want published on the fourth recorded attempt", st)
	}
}

// Past the hour's PR creations the backlog waits its turn and says when;
// the branches are pushed meanwhile (git is not paced).
func TestExportPRCreationsPastTheHourWait(t *testing.T) {
	clk := testkit.NewClock(time.Now())
	e := newEnv(t, options{export: true, clock: clk, prsPerHour: 2})
	heads := map[int64]string{}
	for _, n := range []int64{1, 2, 3} {
		heads[n] = e.accepted(n, map[string]string{fmt.Sprintf("src/%d.rs", n): "fn f() {}\n"})
	}
	t0 := clk.Now()
	for _, n := range []int64{1, 2} {
		if err := e.w.ExportPush(e.ctx, pushTask(t, n, heads[n])); err != nil {
			t.Fatalf("#%d: %v", n, err)
		}
	}
	err := e.w.ExportPush(e.ctx, pushTask(t, 3, heads[3]))
	if !isWait(err) {
		t.Fatalf("third PR of an hour of two: %v, want a wait", err)
	}
	st := e.get(3).Export
	if want := t0.Add(time.Hour).UTC().Truncate(time.Millisecond); st.State != StateWaiting || st.Until == nil || st.Until.Before(want) || st.Until.After(want.Add(2*time.Second)) {
		t.Fatalf("export state %+v, want waiting until about %v", st, want)
	}
	if st.PushedHead != heads[3] || remoteHeads(e.remote.Dir)["queen-3"] != heads[3] {
		t.Fatalf("branch queen-3 not pushed while its PR waits: %+v", st)
	}
	if n := e.gh.Count(githubtest.RouteCreatePull); n != 2 {
		t.Fatalf("%d PRs created, want 2 in the hour", n)
	}
	clk.Set(st.Until.Add(time.Millisecond))
	if err := e.w.ExportPush(e.ctx, pushTask(t, 3, heads[3])); err != nil {
		t.Fatal(err)
	}
	e.checkPublished(heads)
}

func TestExportSweepReportsBranchesWithoutRows(t *testing.T) {
	e := newEnv(t, options{export: true})
	e.accepted(1, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.work.Branch(t, "queen-99", "origin/master")
	e.work.Commit(t, "queen-99", map[string]string{"src/z.rs": "fn z() {}\n"}, "orphan work")
	rep := e.exportSweep()
	if rep.Unmatched != 1 || len(rep.UnmatchedIssues) != 1 || rep.UnmatchedIssues[0] != 99 {
		t.Fatalf("sweep %+v, want queen-99 reported without a row", rep)
	}
	if v := value(e.w.orphans); v != 1 {
		t.Fatalf("unmatched gauge = %v, want 1", v)
	}
}

// olderAttempt puts an earlier attempt of queen-<issue> on the remote, one
// the judged head does not contain, and returns its tip.
func (e *env) olderAttempt(issue int64) string {
	e.t.Helper()
	branch := fmt.Sprintf("queen-%d", issue)
	e.remote.Work.Branch(e.t, branch, "origin/master")
	old := e.remote.Work.CommitAt(e.t, branch, map[string]string{"src/first.rs": "fn first_try() {}\n"}, "attempt 1",
		gittest.Epoch.Add(-24*time.Hour))
	e.remote.Work.Push(e.t, branch)
	return old
}

// A PR list GitHub failed to answer decides nothing: the push waits (its
// retry budget kept), is recorded retrying, never refused, and does no git
// work; once the list reads, the branch is published.
func TestExportUnreadPRListWaitsAndNeverRefuses(t *testing.T) {
	e := newEnv(t, options{export: true})
	old := e.olderAttempt(12) // replacing it needs the PR list
	heads := map[int64]string{
		12: e.accepted(12, map[string]string{"src/a.rs": "fn a() {}\n"}),
		13: e.accepted(13, map[string]string{"src/b.rs": "fn b() {}\n"}), // a fast-forward
	}
	pushes0 := e.pushes()
	const outages = 2
	e.gh.FailNext("/repos/"+repo+"/pulls", http.StatusBadGateway, nil, outages*len(heads))
	for i := 0; i < outages; i++ {
		for issue, head := range heads {
			err := e.w.ExportPush(e.ctx, pushTask(t, issue, head))
			if !isWait(err) || !strings.Contains(err.Error(), "github BranchPRs") {
				t.Fatalf("#%d with /pulls answering 502: %v, want a wait naming the read", issue, err)
			}
			if st := e.get(issue).Export; st == nil || st.State != StateRetrying || st.Refusal != "" {
				t.Fatalf("#%d export state %+v, want retrying with no refusal", issue, st)
			}
		}
	}
	if e.pushes() != pushes0 || e.remote.Ref(t, "queen-12") != old || e.remote.Ref(t, "queen-13") != "" || len(e.gh.PRs(repo)) != 0 {
		t.Fatalf("something was pushed or opened on an unread PR list: %d pushes, queen-12 at %s, queen-13 at %q, %d PRs",
			e.pushes()-pushes0, e.remote.Ref(t, "queen-12"), e.remote.Ref(t, "queen-13"), len(e.gh.PRs(repo)))
	}
	for issue := range heads {
		if n := e.exp.Requests(fmt.Sprintf("/queen/export/%d", issue)); n != 0 {
			t.Fatalf("#%d: %d bundle requests on an unread PR list, want none", issue, n)
		}
	}
	if rep := e.exportSweep(); rep.Enqueued != 2 || rep.Settled != 0 {
		t.Fatalf("sweep during the outage %+v: the rows are not settled", rep)
	}

	// /pulls answers again.
	for issue, head := range heads {
		if err := e.w.ExportPush(e.ctx, pushTask(t, issue, head)); err != nil {
			t.Fatalf("#%d after the outage: %v", issue, err)
		}
	}
	e.checkPublished(heads)
	if tag := "refs/tags/queen-superseded/12/" + old[:12]; e.remote.Ref(t, tag) != old {
		t.Fatalf("the older attempt was not kept as %s", tag)
	}
	for issue := range heads {
		hist, err := e.ledger.History(e.ctx, repo, issue, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hist {
			if h.Decision == string(export.StateRefused) || h.Decision == string(export.StatePushed) {
				t.Errorf("#%d history holds %q: decided on an unread PR list", issue, h.Decision)
			}
		}
	}
}
