package worker

import (
	"context"
	"errors"
	"log/slog"
	"sort"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/tasks"
)

// exportSweepReport says what one export:sweep did.
type exportSweepReport struct {
	Rows      int // accepted rows of the export's repository
	Enqueued  int // export:push tasks enqueued
	Queued    int // rows whose export:push was already queued
	Published int // rows whose branch has its PR at the judged head
	Settled   int // refused, has_pr or dry-run at the row's current version
	Backoff   int // failed rows waiting out their backoff
	NoHead    int // rows with no 40-hex judged head
	Failed    int // enqueues that failed
	Unmatched int // export branches with no ledger row (-1: listing unread)
	// UnmatchedIssues are those branches' issues.
	UnmatchedIssues []int64
}

// ExportSweep handles export:sweep: it enqueues export:push for every
// accepted row of QUEEN_EXPORT_REPO still to publish, working from the
// ledger alone. Then, best effort and within its own time budget, it reads
// the export's slow listing only to report export branches that have no
// ledger row; a listing that fails or times out does not fail the sweep.
func (w *Worker) ExportSweep(ctx context.Context, t *asynq.Task) error {
	log := w.taskLog(ctx, t)
	e := w.d.Export
	if w.pub == nil || e == nil {
		log.Info("export sweep skipped: the export is not configured")
		return nil
	}
	log = log.With("repo", e.Repo)
	if e.Enqueue == nil {
		return retry.Permanent(errors.New("export sweep: no enqueuer configured"))
	}
	rep, known, err := w.exportSweep(ctx, log)
	if err == nil {
		w.reportUnmatched(ctx, log, known, &rep)
	}
	result := "ok"
	if err != nil || rep.Failed > 0 {
		result = "error"
	}
	w.m.SweepRuns.WithLabelValues("export", result).Inc()
	log.Info("export sweep", "rows", rep.Rows, "enqueued", rep.Enqueued, "queued", rep.Queued,
		"published", rep.Published, "settled", rep.Settled, "backoff", rep.Backoff, "no_head", rep.NoHead, "failed", rep.Failed,
		"unmatched", rep.Unmatched, "err", err)
	if err == nil && rep.Failed > 0 {
		err = errors.New("export sweep: some export:push tasks could not be enqueued")
	}
	return err
}

// exportSweep returns the issues of the accepted rows it saw.
func (w *Worker) exportSweep(ctx context.Context, log *slog.Logger) (exportSweepReport, map[int64]bool, error) {
	e := w.d.Export
	rep := exportSweepReport{Unmatched: -1}
	_, err := w.installation(ctx, e.Repo)
	if errors.Is(err, errNotInstalled) {
		log.Warn("export sweep: the export's repository is not installed")
		return rep, nil, nil
	}
	if err != nil {
		log.Info("export sweep: nothing enqueued", "err", err)
		return rep, nil, nil // suspended: the next sweep looks again
	}
	known := map[int64]bool{}
	err = w.d.Ledger.Each(ctx, e.Repo, ledger.IndexAccepted, ledger.DefaultPage, func(rows []*ledger.Record) error {
		for _, row := range rows {
			known[row.Issue] = true
			w.enqueuePush(ctx, log, row, &rep)
		}
		return ctx.Err()
	})
	return rep, known, err
}

// enqueuePush enqueues export:push for row when it still has to be published.
func (w *Worker) enqueuePush(ctx context.Context, log *slog.Logger, row *ledger.Record, rep *exportSweepReport) {
	rep.Rows++
	switch w.toPublish(row) {
	case skipNoHead:
		rep.NoHead++
		return
	case skipPublished:
		rep.Published++
		return
	case skipSettled:
		rep.Settled++
		return
	case skipBackoff:
		rep.Backoff++
		return
	}
	task, err := tasks.NewExportPush(tasks.ExportPushPayload{Repo: row.Repo, Issue: row.Issue, Head: *row.JudgedHead})
	if err == nil {
		var res tasks.Result
		if res, err = w.d.Export.Enqueue.Enqueue(ctx, task); err == nil {
			if res == tasks.Enqueued {
				rep.Enqueued++
			} else {
				rep.Queued++
			}
			return
		}
	}
	rep.Failed++
	log.Warn("export push not enqueued", "issue", row.Issue, "err", err)
}

type publishDecision int

const (
	publish publishDecision = iota
	skipNoHead
	skipPublished
	skipSettled
	skipBackoff
)

// toPublish decides whether row needs an export:push.
func (w *Worker) toPublish(row *ledger.Record) publishDecision {
	if row.JudgedHead == nil || !dispatch.ValidHead(*row.JudgedHead) {
		return skipNoHead
	}
	st := row.Export
	if st == nil {
		return publish
	}
	switch export.State(st.State) {
	case export.StatePROpened:
		if st.PushedHead == *row.JudgedHead {
			return skipPublished
		}
	case export.StateRefused, export.StateHasPR:
		if st.Version == row.Version {
			return skipSettled // decided on this very row; a change decides again
		}
	case export.StateDryRun:
		if w.pub.DryRun && st.Version == row.Version {
			return skipSettled
		}
	}
	if st.State == StateFailed && st.At != nil && w.now().Before(st.At.Add(failedBackoff(st.Attempts))) {
		return skipBackoff
	}
	return publish
}

// reportUnmatched reads the export's listing within ListingBudget and
// reports its branches that have no ledger row.
func (w *Worker) reportUnmatched(ctx context.Context, log *slog.Logger, known map[int64]bool, rep *exportSweepReport) {
	e := w.d.Export
	if e.Lister == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, w.d.ListingBudget)
	defer cancel()
	l, err := e.Lister.List(lctx)
	if err != nil {
		log.Warn("export listing unread (only used to report branches with no row)", "err", err)
		return
	}
	for _, b := range l.Branches {
		if b.Issue <= 0 || known[b.Issue] {
			continue
		}
		_, err := w.d.Ledger.Get(ctx, e.Repo, b.Issue)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			rep.UnmatchedIssues = append(rep.UnmatchedIssues, b.Issue)
		case err != nil:
			log.Warn("export listing: ledger unread", "issue", b.Issue, "err", err)
			return
		}
	}
	sort.Slice(rep.UnmatchedIssues, func(i, j int) bool { return rep.UnmatchedIssues[i] < rep.UnmatchedIssues[j] })
	rep.Unmatched = len(rep.UnmatchedIssues)
	w.orphans.Set(float64(rep.Unmatched))
	if rep.Unmatched > 0 {
		shown := rep.UnmatchedIssues
		if len(shown) > 20 {
			shown = shown[:20]
		}
		log.Warn("export branches with no ledger row", "count", rep.Unmatched, "issues", shown)
	}
}
