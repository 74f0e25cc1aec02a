package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/ledger"
)

// sweepReport says what one claim:sweep did.
type sweepReport struct {
	Repos     int // installed, unsuspended repositories swept
	Suspended int // repositories skipped while their installation is suspended
	Rows      int // accepted rows whose branches were asked for
	Read      int // rows whose PR state was read and recorded
	Unread    int // rows left alone: their branch's read failed
	SendBacks int // finished send-back rows evaluated
	Decisions map[string]int
}

// Sweep handles claim:sweep: the installed repositories are synced from
// GitHub, then for every installed, unsuspended repository the accepted
// rows' branches are read with one GraphQL query per 100 branches and
// recorded (accept_claim), and every finished send-back row is evaluated
// (send_back_claim). A branch whose read failed is left alone and counted;
// the next sweep reads it again. A repository whose ledger could not be
// read does not stop the others, but fails the task.
func (w *Worker) Sweep(ctx context.Context, t *asynq.Task) error {
	log := w.taskLog(ctx, t)
	if err := installs.Sync(ctx, w.d.GitHub, w.d.Installs); err != nil {
		log.Warn("installation sync failed; sweeping the repositories known", "err", err)
	}
	slot, _ := asynq.GetTaskID(ctx)
	rep, err := w.sweep(ctx, log, audit.Sweep(slot))
	result := "ok"
	switch {
	case err != nil:
		result = "error"
	case rep.Unread > 0:
		result = "partial"
	}
	w.m.SweepRuns.WithLabelValues("claim", result).Inc()
	log.Info("claim sweep", "repos", rep.Repos, "suspended", rep.Suspended, "rows", rep.Rows,
		"read", rep.Read, "unread", rep.Unread, "send_backs", rep.SendBacks, "decisions", rep.Decisions, "err", err)
	return err
}

func (w *Worker) sweep(ctx context.Context, log *slog.Logger, src audit.Source) (sweepReport, error) {
	rep := sweepReport{Decisions: map[string]int{}}
	repos, err := w.d.Installs.Repos(ctx)
	if err != nil {
		return rep, err
	}
	var errs []error
	// A Cluster's audit entries whose append failed after their row was written.
	if err := w.d.Ledger.FlushAudit(ctx); err != nil {
		errs = append(errs, err)
	}
	for _, r := range repos {
		if ctx.Err() != nil {
			return rep, errors.Join(append(errs, ctx.Err())...)
		}
		if r.Suspended {
			rep.Suspended++
			continue
		}
		rep.Repos++
		if err := w.sweepRepo(ctx, log.With("repo", r.Name, "installation_id", r.InstallationID), r, src, &rep); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name, err))
		}
	}
	return rep, errors.Join(errs...)
}

func (w *Worker) sweepRepo(ctx context.Context, log *slog.Logger, r installs.Repo, src audit.Source, rep *sweepReport) error {
	var errs []error
	owner, name := ghrepo.Split(r.Name)
	failed := 0
	// A page of accepted rows is one GraphQL query: memory holds one page.
	err := w.d.Ledger.Each(ctx, r.Name, ledger.IndexAccepted, ledger.DefaultPage, func(rows []*ledger.Record) error {
		branches := make([]string, len(rows))
		for i, row := range rows {
			branches[i] = row.BranchName()
		}
		rep.Rows += len(rows)
		read := w.d.GitHub.BatchPRStates(ctx, r.InstallationID, owner, name, branches)
		for i, row := range rows {
			res, ok := read[branches[i]]
			if !ok || res.Err != nil {
				rep.Unread++
				if failed++; failed <= 5 { // one outage fails every branch: log a few
					log.Warn("branch unread: nothing decided", "branch", branches[i], "err", res.Err)
				}
				continue
			}
			out, err := w.d.Ledger.RecordPRs(ctx, r.Name, row.Issue, res.State, src)
			if errors.Is(err, ledger.ErrNotFound) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rep.Read++
			w.decided(log, dispatch.RuleAccept, row.Issue, out, rep)
		}
		return ctx.Err()
	})
	if err != nil {
		errs = append(errs, err)
	}
	if failed > 0 {
		log.Warn("sweep left branches unread", "unread", failed)
	}

	err = w.d.Ledger.Each(ctx, r.Name, ledger.IndexSendBacks, ledger.DefaultPage, func(rows []*ledger.Record) error {
		for _, row := range rows {
			out, err := w.d.Ledger.Evaluate(ctx, r.Name, row.Issue, src)
			if errors.Is(err, ledger.ErrNotFound) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rep.SendBacks++
			w.decided(log, dispatch.RuleSendBack, row.Issue, out, rep)
		}
		return ctx.Err()
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// decided counts and logs a decision that changed something.
func (w *Worker) decided(log *slog.Logger, rule string, issue int64, out ledger.Result, rep *sweepReport) {
	switch out.Outcome {
	case ledger.DecisionFree, ledger.DecisionWouldFree, ledger.DecisionUnfree, ledger.DecisionWouldUnfree:
		w.m.Claims.WithLabelValues(rule, claimOutcome(out.Outcome)).Inc()
		rep.Decisions[out.Outcome]++
		log.Info("sweep decision", "issue", issue, "rule", rule, "decision", out.Outcome)
	}
}
