package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redact"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/tasks"
)

// Export states export:push records besides the export.State values.
const (
	// StateRetrying: an attempt failed without deciding anything (an
	// outage, a rate limit, a lease lost); the task tries again.
	StateRetrying = "retrying"
	// StateFailed: an attempt failed in a way retrying cannot change; the
	// task is archived and the next export:sweep enqueues a fresh one.
	StateFailed = "failed"
	// StateWaiting: the PR waits for the installation's turn (the hour's
	// PR creations are spent, or GitHub asked for a pause); export.until
	// says when the task tries again.
	StateWaiting = "waiting"
)

// A failed row is an error a retry alone cannot fix (a remote declining a
// ref, a permission, an answer that cannot be read). Trying it on every
// export:sweep (5m) would only write a version and an audit entry each
// time, so the sweep tries it again FailedBackoff after its failure, twice
// as long after each attempt recorded, up to FailedBackoffMax; a person who
// fixed the cause pushes at once with queenctl export push.
const (
	FailedBackoff    = 15 * time.Minute
	FailedBackoffMax = 6 * time.Hour
)

// failedBackoff is the wait after a failed row's latest attempt.
func failedBackoff(attempts int) time.Duration {
	d := FailedBackoff
	for i := 1; i < attempts && d < FailedBackoffMax; i++ {
		d *= 2
	}
	return min(d, FailedBackoffMax)
}

// maxLastError caps the error recorded on a row (export.last_error).
const maxLastError = 500

// recordRetries bounds re-reading a row that moved while its outcome was
// being recorded.
const recordRetries = 5

// ExportPush handles export:push: it re-reads the row (still accepted at the
// task's head, else there is nothing to do), publishes it through the
// export.Publisher as the repository's installation, and records the outcome
// on the row. Refusals are recorded and end the task; outages of the export
// or GitHub wait without spending the retry budget, so a long outage drains
// by itself once it ends. A dry-run task only decides and records, as the
// whole worker does with QUEEN_EXPORT_DRY_RUN; a sweep's task for a row
// already settled stands down, a person's (Manual) does not.
func (w *Worker) ExportPush(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.ParseExportPush(t)
	if err != nil {
		return retry.Permanent(err)
	}
	log := w.taskLog(ctx, t).With("repo", p.Repo, "issue", p.Issue, "head", p.Head, "dry_run", p.DryRun)
	if w.pub == nil {
		log.Info("export push skipped: the export is not configured")
		return nil
	}
	// The export holds QUEEN_EXPORT_REPO's work only: its queen-N pushed
	// into another repository would publish that work there.
	if !ghrepo.Same(p.Repo, w.d.Export.Repo) {
		return retry.Permanent(fmt.Errorf("export push refused: repo %s is not the export's repository %s (QUEEN_EXPORT_REPO)", p.Repo, w.d.Export.Repo))
	}
	inst, err := w.installation(ctx, p.Repo)
	if errors.Is(err, errNotInstalled) {
		log.Info("export push skipped: repository not installed")
		return nil
	}
	if err != nil {
		return err
	}
	log = log.With("installation_id", inst)
	rec, err := w.d.Ledger.Get(ctx, p.Repo, p.Issue)
	if errors.Is(err, ledger.ErrNotFound) {
		log.Info("export push skipped: no ledger row")
		return nil
	}
	if err != nil {
		return err
	}
	if !publishable(rec, p.Head) {
		log.Info("export push skipped: the row is no longer accepted at this head")
		return nil
	}
	// A sweep reads the rows before it enqueues; a push that finished in
	// between frees the task id, so its task may come again for a row
	// already settled. A person's request is decided again regardless.
	if !p.Manual && w.toPublish(rec) != publish {
		log.Info("export push skipped: already decided at this row version")
		return nil
	}

	release, err := w.acquire(ctx, inst)
	if err != nil {
		return err
	}
	defer release()
	pub := *w.pub
	// A dry-run task (queenctl export push --dry-run) decides and records
	// like QUEEN_EXPORT_DRY_RUN; it cannot turn a worker-wide dry run off.
	pub.DryRun = pub.DryRun || p.DryRun
	pub.GitHub = &publishGitHub{gh: w.d.GitHub, inst: inst, pace: w.pace}
	// The token is the installation's cached one, minted again only near its
	// expiry; git pushes are not content-creating REST requests, so they are
	// not paced (pacing them too cost a second per branch: 7.1 minutes for
	// the 213-branch backlog).
	pub.Token = func(ctx context.Context, _ string) (string, error) {
		tok, err := w.d.GitHub.InstallationToken(ctx, inst)
		if err != nil {
			return "", githubError("installation token", err)
		}
		return tok, nil
	}
	pub.Logger = log
	out, perr := pub.Push(ctx, export.JobOf(&rec.Row))
	var failure error
	var until time.Time // set when the PR waits for a turn
	if perr != nil {
		failure = w.pushFailure(inst, perr)
		var ny *notYet
		var we *retry.WaitError
		switch {
		case errors.As(perr, &ny):
			until = ny.until
		case githubapp.Classify(perr) == githubapp.RateLimited && errors.As(failure, &we):
			// Every replica waits it out, not only this task. Milliseconds,
			// as the pacer keeps it: a replica's turn names the same time.
			until = w.now().Add(we.After).Truncate(time.Millisecond)
			if err := w.pace.holdUntil(ctx, inst, until); err != nil {
				log.Warn("github's pause not shared with the other workers", "err", err)
			}
		}
	}

	taskID, _ := asynq.GetTaskID(ctx)
	if p.DryRun {
		return w.noteDryRun(ctx, log, rec, out, perr, failure, audit.Export(taskID))
	}
	st, recErr := w.recordPush(ctx, rec, p.Head, out, perr, until, audit.Export(taskID))
	if st != "" {
		w.m.Export.WithLabelValues(st).Inc()
	}
	if perr == nil {
		w.export.Succeed()
	}
	if recErr != nil {
		log.Warn("export outcome not recorded", "state", st, "err", recErr, "push_err", perr)
		return recErr
	}
	if perr == nil {
		log.Info("export push", "state", st, "pr", out.PRNumber, "pushed_head", out.PushedHead, "would", out.Would)
		return nil
	}
	if !until.IsZero() {
		log.Info("export push waits for its turn to open the PR", "state", st, "until", until.UTC(), "err", perr)
		return failure
	}
	log.Warn("export push failed", "state", st, "err", failure)
	return failure
}

// noteDryRun ends a requested dry run: the row is not written (no state,
// no attempt), and what a real push would decide is recorded as the dry
// run's own audit entry. A failed dry run records nothing and fails as a
// push would (failure).
func (w *Worker) noteDryRun(ctx context.Context, log *slog.Logger, rec *ledger.Record, out export.Outcome, perr, failure error, src audit.Source) error {
	if perr != nil {
		log.Warn("export dry run failed", "err", failure)
		return failure
	}
	w.export.Succeed()
	var st dispatch.ExportState
	out.Record(&st)
	_, err := w.d.Ledger.Note(ctx, rec, ledger.Change{
		Action: audit.ActionExportDryRun, Decision: st.State, Evidence: st.Refusal, Source: src,
		Inputs: struct {
			Head  string `json:"head"`
			Would string `json:"would,omitempty"`
			PR    int    `json:"pr,omitempty"`
		}{out.Head, out.Would, out.PRNumber},
	})
	if err != nil {
		// A row that moved on is decided again on its new version.
		log.Warn("export dry run not recorded", "decision", st.State, "err", err)
		return err
	}
	log.Info("export dry run", "decision", st.State, "pr", out.PRNumber, "would", out.Would)
	return nil
}

// pushFailure is what asynq should do after a failed push.
func (w *Worker) pushFailure(inst int64, err error) error {
	var ny *notYet
	switch {
	case errors.As(err, &ny):
		return retry.Wait(ny.until.Sub(w.now()), "waiting for the installation's turn to open a PR", err)
	case errors.Is(err, export.ErrLeaseLost):
		return fmt.Errorf("export push: %w", err) // re-read and retry
	case githubapp.Classify(err) == githubapp.RateLimited:
		return w.githubFailure(inst, err)
	case githubapp.Classify(err) == githubapp.BadAnswer:
		return err // each try counts: waiting would park it forever
	case export.IsRetryable(err):
		return retry.Wait(w.export.Fail(w.now()), "export or github unavailable", err)
	}
	return retry.Permanent(err)
}

// publishable reports whether rec is still accepted at head.
func publishable(rec *ledger.Record, head string) bool {
	return rec.FinishedAt != nil && rec.ReviewWord() == "accept" &&
		rec.JudgedHead != nil && *rec.JudgedHead == head
}

// recordPush writes the attempt onto the row with a compare-and-set on the
// version it was decided on, unless it changes nothing recorded. When the
// row moved in between it is re-read and, if it is still the same dispatch
// accepted at head, recorded on the new version. state is the attempt's
// ("" when the row moved on and nothing was recorded).
func (w *Worker) recordPush(ctx context.Context, rec *ledger.Record, head string, out export.Outcome, perr error, until time.Time, src audit.Source) (state string, err error) {
	published := rec
	for attempt := 0; ; attempt++ {
		st := exportState(rec, out, perr, until, w.now())
		if !exportChanged(rec, st) {
			return st.State, nil
		}
		_, err = w.d.Ledger.RecordExport(ctx, rec.Repo, rec.Issue, st, rec.Version, src)
		if err == nil {
			return st.State, nil
		}
		if !errors.Is(err, ledger.ErrConflict) || attempt >= recordRetries {
			return st.State, err
		}
		rec, err = w.d.Ledger.Get(ctx, rec.Repo, rec.Issue)
		if errors.Is(err, ledger.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return st.State, err
		}
		if !rec.SameDispatch(&published.Row) || !publishable(rec, head) {
			return "", nil
		}
	}
}

// exportChanged reports whether st has to be written on rec. An attempt
// that ends as the recorded one did writes nothing (during an outage every
// waiting attempt would write a version and an audit entry, and turn a
// person's --version into a conflict), except a failure, whose time and
// attempts set the sweep's backoff, and a settled decision taken again on
// a row that moved past it, which the sweep reads only at its version.
func exportChanged(rec *ledger.Record, st dispatch.ExportState) bool {
	old := rec.Export
	if old == nil || !old.Same(st) {
		return true
	}
	switch st.State {
	case StateFailed:
		return true
	case StateWaiting:
		return old.Until == nil || !old.Until.Equal(*st.Until)
	case string(export.StateRefused), string(export.StateHasPR), string(export.StateDryRun):
		return old.Version != rec.Version
	}
	return false
}

// exportState is rec's export state after one attempt at now; a non-zero
// until is the turn its PR waits for.
func exportState(rec *ledger.Record, out export.Outcome, perr error, until, now time.Time) dispatch.ExportState {
	var st dispatch.ExportState
	if rec.Export != nil {
		st = *rec.Export
	}
	st.Attempts++
	st.LastError = ""
	st.At = nil
	st.Until = nil
	switch {
	case perr != nil:
		// A push whose PR could not be opened is recorded in the failure's
		// state with the head it pushed, never left pushed or already: the
		// sweep would take it again every run, a PR creation each time.
		if out.PushedHead != "" {
			st.PushedHead = out.PushedHead
		}
		st.Refusal = ""
		st.State = StateFailed
		if errors.Is(perr, export.ErrLeaseLost) || export.IsRetryable(perr) {
			st.State = StateRetrying
		}
	case out.State != "":
		out.Record(&st)
		if out.State == export.StatePROpened {
			st.PushedHead = out.Head // the branch is at the head, pushed now or before
		}
	}
	if perr != nil && !until.IsZero() {
		st.Refusal = ""
		st.State = StateWaiting
		u := until.UTC()
		st.Until = &u
	}
	if perr != nil {
		st.LastError = redact.Line(perr.Error(), maxLastError)
	}
	if st.State == StateFailed {
		at := now.UTC()
		st.At = &at
	}
	st.Version = rec.Version + 1 // the version this write gives the row
	return st
}
