package worker

import (
	"context"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/githubapp"
)

// Redeliver handles deliveries:redeliver: GitHub never redelivers a failed
// webhook delivery by itself, so the deliveries since the last complete run
// are listed and each GUID with no successful attempt is redelivered.
func (w *Worker) Redeliver(ctx context.Context, t *asynq.Task) error {
	log := w.taskLog(ctx, t)
	if w.d.Redeliverer == nil {
		log.Info("redelivery not configured")
		return nil
	}
	rep, err := w.d.Redeliverer.Run(ctx, w.now())
	if n := len(rep.Redelivered); n > 0 {
		w.m.Redeliveries.WithLabelValues("redelivered").Add(float64(n))
	}
	if err != nil {
		w.m.Redeliveries.WithLabelValues("error").Inc()
		log.Warn("redelivery incomplete", "since", rep.Since, "listed", rep.Listed,
			"redelivered", rep.Redelivered, "err", err)
		if githubapp.Classify(err) == githubapp.RateLimited {
			return w.githubFailure(appLimits, err)
		}
		return err
	}
	log.Info("redelivery", "since", rep.Since, "listed", rep.Listed, "redelivered", rep.Redelivered)
	return nil
}
