package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/tasks"
)

// Reevaluate handles claim:reevaluate: it re-reads every PR of the row's
// branch from GitHub (the webhook payload is only a hint) and records what
// it read, which applies accept_claim to the PRs of the row's attempt: a
// free (QUEEN_FREE_CLOSED_PR on), a would_free (off), or an unfree of a
// row whose PR was reopened.
func (w *Worker) Reevaluate(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.ParseReevaluate(t)
	if err != nil {
		return retry.Permanent(err)
	}
	log := w.taskLog(ctx, t).With("repo", p.Repo, "issue", p.Issue, "delivery_id", p.Delivery,
		"event", p.Event, "action", p.Action)

	inst, err := w.installation(ctx, p.Repo)
	if errors.Is(err, errNotInstalled) {
		log.Info("reevaluate skipped: repository not installed")
		return nil
	}
	if err != nil {
		log.Info("reevaluate waits", "err", err)
		return err
	}
	log = log.With("installation_id", inst)
	rec, err := w.d.Ledger.Get(ctx, p.Repo, p.Issue)
	if errors.Is(err, ledger.ErrNotFound) {
		var old string
		if old, rec, err = w.underOldName(ctx, p.Repo, p.Issue); err == nil {
			// Read and recorded under the old name: GitHub redirects it.
			log = log.With("old_repo", old)
			p.Repo = old
		}
	}
	if errors.Is(err, ledger.ErrNotFound) {
		log.Info("reevaluate skipped: no ledger row")
		return nil
	}
	if err != nil {
		return err
	}

	owner, name := ghrepo.Split(p.Repo)
	branch := rec.BranchName()
	// A read is as old as its request, on the clock githubapp stamps batch
	// reads with: a slower, older read must not win. It may be sent with
	// the reads of other tasks of the repository (readBranch).
	prs, sent, err := w.readBranch(ctx, inst, owner, name, branch)
	if err != nil {
		err = w.githubFailure(inst, err)
		log.Warn("pull requests unread: nothing decided", "branch", branch, "err", err)
		return err
	}
	w.githubAnswered(inst)

	// Right after a close, reopen or open GitHub can still list the old state.
	if stale := staleHint(p, prs); stale != "" {
		if n, _ := asynq.GetRetryCount(ctx); n < w.d.CloseRetries {
			log.Info("pull request state not settled yet: read again", "pr", p.PRNumber, "listed", stale)
			return fmt.Errorf("%s#%d: pull request #%d still listed %s after its %s event", p.Repo, p.Issue, p.PRNumber, stale, p.Action)
		}
		if stale != "open" {
			// GitHub still denies the merge or the reopen the event reported.
			// Recording it would free a claim on a read that contradicts the
			// event: decide nothing and leave it to the sweep's fresh read.
			log.Warn("pull request state still contradicts the event: nothing decided", "pr", p.PRNumber, "listed", stale)
			return nil
		}
		log.Warn("pull request still listed open after its close: recording what GitHub lists", "pr", p.PRNumber)
	}

	state := githubapp.Summarize(prs, sent)
	res, err := w.d.Ledger.RecordPRsOn(ctx, p.Repo, p.Issue, rec, state, audit.Webhook(p.Delivery))
	if errors.Is(err, ledger.ErrNotFound) {
		log.Info("reevaluate skipped: ledger row deleted")
		return nil
	}
	if err != nil {
		return err
	}
	w.m.Claims.WithLabelValues(dispatch.RuleAccept, claimOutcome(res.Outcome)).Inc()
	w.observeWebhookToFree(p, claimOutcome(res.Outcome))
	counted := state // what the ledger counted for the row's attempt, when it wrote
	if res.Row != nil && res.Row.PRs != nil {
		counted = *res.Row.PRs
	}
	log.Info("reevaluated", "decision", res.Outcome, "open", counted.Open, "merged", counted.Merged,
		"closed_unmerged", counted.ClosedUnmerged, "prs", counted.Numbers, "earlier_prs", counted.Earlier)
	return nil
}

// staleHint reports how GitHub still lists the event's PR when that
// contradicts the event ("open" after a close, "closed" after a reopen,
// "missing" after an open),
// else "".
func staleHint(p tasks.ReevaluatePayload, prs []githubapp.PR) string {
	if p.PRNumber <= 0 {
		return ""
	}
	listed := false
	for _, pr := range prs {
		if pr.Number != p.PRNumber {
			continue
		}
		listed = true
		switch {
		case p.Action == "closed" && pr.State == "open":
			return "open"
		case p.Action == "reopened" && pr.State != "open":
			return "closed"
		case p.Action == "closed" && p.Merged && !pr.Merged:
			return "unmerged"
		}
	}
	if p.Action == "opened" && !listed {
		// GitHub's list lags the PR it just announced.
		return "missing"
	}
	return ""
}

// underOldName finds issue's row under a name repo had before a rename or
// transfer: GitHub's webhooks name the repository by its new name, its rows
// were written under the old.
func (w *Worker) underOldName(ctx context.Context, repo string, issue int64) (string, *ledger.Record, error) {
	olds, err := w.d.Installs.OldNames(ctx, repo)
	if err != nil {
		return "", nil, err
	}
	for _, old := range olds {
		rec, err := w.d.Ledger.Get(ctx, old, issue)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		return old, rec, err
	}
	return "", nil, ledger.ErrNotFound
}
