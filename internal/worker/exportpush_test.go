package worker

import (
	"testing"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/tasks"
)

// A dry-run task on a worker that publishes for real decides and records,
// pushes and opens nothing, and leaves the row to the next sweep's real push.
func TestExportPushDryRunTaskOnARealWorker(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(8, map[string]string{"src/a.rs": "fn a() {}\n"})
	dry, err := tasks.NewExportPush(tasks.ExportPushPayload{Repo: repo, Issue: 8, Head: head, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.w.ExportPush(e.ctx, dry); err != nil {
		t.Fatal(err)
	}
	rec := e.get(8)
	if st := rec.Export; st == nil || st.State != string(export.StateDryRun) || st.Attempts != 1 || st.Version != rec.Version {
		t.Fatalf("export state %+v, want dry_run recorded at the row's version", st)
	}
	if e.pushes() != 0 || e.remote.Ref(t, "queen-8") != "" || len(e.gh.PRs(repo)) != 0 {
		t.Fatal("a dry-run task pushed or opened a PR")
	}
	hist, err := e.ledger.History(e.ctx, repo, 8, 5)
	if err != nil || len(hist) == 0 || hist[0].Decision != string(export.StateDryRun) {
		t.Fatalf("audit %+v (%v), want the dry run as the latest entry", hist, err)
	}
	// The worker itself is not in dry run: the dry run settles nothing.
	if rep := e.exportSweep(); rep.Enqueued != 1 || rep.Settled != 0 {
		t.Fatalf("sweep after a dry-run task %+v, want the real push enqueued", rep)
	}
	if err := e.w.ExportPush(e.ctx, pushTask(t, 8, head)); err != nil {
		t.Fatal(err)
	}
	e.checkPublished(map[int64]string{8: head})
}

// A task without dry_run cannot turn a worker-wide QUEEN_EXPORT_DRY_RUN off.
func TestExportPushWorkerDryRunWins(t *testing.T) {
	e := newEnv(t, options{export: true, dryRun: true})
	head := e.accepted(9, map[string]string{"src/b.rs": "fn b() {}\n"})
	if err := e.w.ExportPush(e.ctx, pushTask(t, 9, head)); err != nil {
		t.Fatal(err)
	}
	if st := e.get(9).Export; st == nil || st.State != string(export.StateDryRun) {
		t.Fatalf("export state %+v, want dry_run", st)
	}
	if e.pushes() != 0 || len(e.gh.PRs(repo)) != 0 {
		t.Fatal("a worker in dry run pushed or opened a PR")
	}
}

// A sweep reads the rows before it enqueues, so its task can arrive after
// another push settled the row: it stands down. A person's request is
// decided again: the issue reopened on GitHub changes nothing on the row.
func TestExportPushStaleSweepTaskStandsDownManualDoesNot(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(10, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.gh.SetIssue(repo, 10, false, "Issue 10: closed for now")
	if err := e.w.ExportPush(e.ctx, pushTask(t, 10, head)); err != nil {
		t.Fatal(err)
	}
	refused := e.get(10)
	if st := refused.Export; st == nil || st.State != string(export.StateRefused) || st.Attempts != 1 {
		t.Fatalf("export state %+v, want refused once", st)
	}
	// The same task again, as a sweep that read the row before the refusal would enqueue it.
	if err := e.w.ExportPush(e.ctx, pushTask(t, 10, head)); err != nil {
		t.Fatal(err)
	}
	if rec := e.get(10); rec.Version != refused.Version || rec.Export.Attempts != 1 {
		t.Fatalf("a stale sweep task decided again: version %d→%d, %+v", refused.Version, rec.Version, rec.Export)
	}

	e.gh.SetIssue(repo, 10, true, "Issue 10: reopened")
	if rep := e.exportSweep(); rep.Enqueued != 0 || rep.Settled != 1 {
		t.Fatalf("sweep %+v: the row did not change, so it stays settled", rep)
	}
	e.pushManually(10, head)
	e.checkPublished(map[int64]string{10: head})
	published := e.get(10)

	// A stale sweep task for the published row leaves it alone: no has_pr over pr_opened.
	if err := e.w.ExportPush(e.ctx, pushTask(t, 10, head)); err != nil {
		t.Fatal(err)
	}
	if rec := e.get(10); rec.Version != published.Version || rec.Export.State != string(export.StatePROpened) {
		t.Fatalf("a stale task on a published row: %+v (version %d→%d)", rec.Export, published.Version, rec.Version)
	}
	if e.pushes() != 1 || len(e.gh.PRs(repo)) != 1 {
		t.Fatalf("%d pushes, %d PRs; want one of each", e.pushes(), len(e.gh.PRs(repo)))
	}
}
