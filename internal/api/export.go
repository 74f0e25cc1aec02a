package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/tasks"
)

// ExportWorkers reports whether a worker with the export on is running; an
// error means unknown.
type ExportWorkers interface {
	Running(ctx context.Context) (bool, error)
}

// exportPush enqueues export:push for one row now, without waiting for the
// next export:sweep. The worker re-reads the row and applies every check.
// Only QUEEN_EXPORT_REPO's rows are pushed: the export holds that
// repository's work, so another repository's issue N would get that
// repository's queen-N, possibly private, pushed into it.
func (s *server) exportPush(ctx context.Context, w *responseWriter, r *request) error {
	if _, err := query(r); err != nil {
		return err
	}
	dryRun := false
	if r.ContentLength != 0 { // the body is optional
		obj, err := readObject(w, r)
		if err != nil {
			return err
		}
		if err := onlyFields(obj, "", "dry_run"); err != nil {
			return err
		}
		if raw, ok := obj["dry_run"]; ok {
			if err := json.Unmarshal(raw, &dryRun); err != nil || string(raw) == "null" {
				return badField("dry_run", "must be true or false")
			}
		}
	}
	if s.enqueuer == nil {
		return &apiError{code: http.StatusServiceUnavailable, msg: "export push not configured"}
	}
	if err := s.exportScope(r.repo); err != nil {
		return err
	}
	rec, err := s.ledger.Get(ctx, r.repo, r.issue)
	if err != nil {
		return err
	}
	switch {
	case rec.FinishedAt == nil || rec.ReviewWord() != "accept":
		return &apiError{code: http.StatusConflict, msg: fmt.Sprintf(
			"%s is not accepted (claim %s): only accepted work is pushed", rec.Key(), rec.View(s.now()).Claim)}
	case rec.JudgedHead == nil || !dispatch.ValidHead(*rec.JudgedHead):
		return &apiError{code: http.StatusConflict, msg: fmt.Sprintf(
			"%s is accepted but its judged_head is not 40 lowercase hex: nothing to push", rec.Key())}
	}
	// The export's settings live in the workers: with none running with
	// them, a queued push would only wait.
	running, err := s.exporters.Running(ctx)
	if err != nil {
		w.err = err
		return &apiError{code: http.StatusServiceUnavailable, msg: "the task queue is unavailable; retry"}
	}
	if !running {
		return &apiError{code: http.StatusConflict, msg: "QUEEN_EXPORT_URL is not set on any running worker", field: "QUEEN_EXPORT_URL"}
	}
	p := tasks.ExportPushPayload{Repo: r.repo, Issue: r.issue, Head: *rec.JudgedHead, DryRun: dryRun, Manual: true}
	t, err := tasks.NewExportPush(p)
	if err != nil {
		return err
	}
	res, err := s.enqueuer.Enqueue(ctx, t)
	if err != nil {
		w.err = err
		return &apiError{code: http.StatusServiceUnavailable, msg: "the task queue is unavailable; retry"}
	}
	w.json(http.StatusAccepted, apiwire.ExportPush{Repo: r.repo, Issue: r.issue, Head: p.Head, DryRun: dryRun,
		TaskID: tasks.ExportPushID(p), AlreadyEnqueued: res == tasks.AlreadyEnqueued})
	return nil
}

// exportScope refuses any repository but the export's, compared as GitHub
// does (ghrepo.Same: case aside).
func (s *server) exportScope(repo string) error {
	switch {
	case s.exportRepo == "":
		return &apiError{code: http.StatusConflict, field: "QUEEN_EXPORT_REPO",
			msg: "QUEEN_EXPORT_REPO is not set on the webhook: it cannot tell which repository the export holds"}
	case !ghrepo.Same(repo, s.exportRepo):
		return badField("repo", fmt.Sprintf("%s is not the export's repository %s (QUEEN_EXPORT_REPO): only its rows are pushed", repo, s.exportRepo))
	}
	return nil
}
