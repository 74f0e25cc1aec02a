package worker

import (
	"testing"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/tasks"
)

// A dry-run task on a worker that publishes for real decides, pushes and
// opens nothing, and changes nothing on the row: its only trace is its own
// audit entry. The next sweep's real push goes ahead.
func TestExportPushDryRunTaskOnARealWorker(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(8, map[string]string{"src/a.rs": "fn a() {}\n"})
	before := e.get(8)
	if err := e.w.ExportPush(e.ctx, dryTask(t, 8, head)); err != nil {
		t.Fatal(err)
	}
	rec := e.get(8)
	if rec.Version != before.Version || rec.Export != nil {
		t.Fatalf("a dry run wrote the row: version %d→%d, export %+v", before.Version, rec.Version, rec.Export)
	}
	if e.pushes() != 0 || e.remote.Ref(t, "queen-8") != "" || len(e.gh.PRs(repo)) != 0 {
		t.Fatal("a dry-run task pushed or opened a PR")
	}
	checkDryRunEntry(t, e, 8, rec, string(export.StateDryRun))
	if rep := e.exportSweep(); rep.Enqueued != 1 || rep.Settled != 0 {
		t.Fatalf("sweep after a dry-run task %+v, want the real push enqueued", rep)
	}
	if err := e.w.ExportPush(e.ctx, pushTask(t, 8, head)); err != nil {
		t.Fatal(err)
	}
	e.checkPublished(map[int64]string{8: head})
}

// A person's dry run on a published row leaves its state and attempts as
// they were (it once turned pr_opened into has_pr and counted an attempt).
func TestExportPushDryRunLeavesAPublishedRowAlone(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(11, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.pushManually(11, head)
	published := e.get(11)
	if st := published.Export; st == nil || st.State != string(export.StatePROpened) {
		t.Fatalf("export state %+v, want pr_opened", st)
	}
	streamBefore, err := e.ledger.Audit(e.ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.w.ExportPush(e.ctx, dryTask(t, 11, head)); err != nil {
		t.Fatal(err)
	}
	rec := e.get(11)
	if rec.Version != published.Version || rec.Export.State != published.Export.State ||
		rec.Export.Attempts != published.Export.Attempts || rec.Digest() != published.Digest() {
		t.Fatalf("a dry run changed a published row: %+v (version %d→%d), was %+v",
			rec.Export, published.Version, rec.Version, published.Export)
	}
	checkDryRunEntry(t, e, 11, rec, string(export.StateHasPR))
	stream, err := e.ledger.Audit(e.ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(stream) != len(streamBefore)+1 || stream[0].Action != audit.ActionExportDryRun {
		t.Fatalf("audit stream grew by %d (newest %+v), want only the dry run's entry", len(stream)-len(streamBefore), stream[0])
	}
	if e.pushes() != 1 || len(e.gh.PRs(repo)) != 1 {
		t.Fatalf("%d pushes, %d PRs after a dry run; want the one real push", e.pushes(), len(e.gh.PRs(repo)))
	}
}

func dryTask(t *testing.T, issue int64, head string) *asynq.Task {
	t.Helper()
	task, err := tasks.NewExportPush(tasks.ExportPushPayload{Repo: repo, Issue: issue, Head: head, DryRun: true, Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// checkDryRunEntry: the row's newest history entry is the dry run's own,
// at the row's version and digest, with what a real push would decide.
func checkDryRunEntry(t *testing.T, e *env, issue int64, rec *ledger.Record, decision string) {
	t.Helper()
	hist, err := e.ledger.History(e.ctx, repo, issue, 5)
	if err != nil || len(hist) == 0 {
		t.Fatalf("history %+v (%v)", hist, err)
	}
	h := hist[0]
	if h.Action != audit.ActionExportDryRun || h.Decision != decision || h.Version != rec.Version ||
		h.Outcome.Digest != rec.Digest() || h.Source.Kind != audit.KindExport {
		t.Fatalf("newest entry %+v, want %s deciding %s at version %d", h, audit.ActionExportDryRun, decision, rec.Version)
	}
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
