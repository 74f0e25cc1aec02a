package worker

import (
	"time"

	"github.com/queen-app/queen-app/internal/tasks"
)

// observeWebhookToFree records how long a delivery took to free (or, flags
// off, would free) its claim. The clock starts at the webhook's receipt,
// carried in the task, not at the PR event's time: GitHub's own delivery
// delay is not ours to watch, and a redelivery days later would read as a
// slow free. The webhook's and the worker's clocks differ by their skew; a
// negative span counts as 0.
func (w *Worker) observeWebhookToFree(p tasks.ReevaluatePayload, outcome string) {
	if p.ReceivedAt <= 0 || (outcome != "freed" && outcome != "would_free") {
		return
	}
	d := w.now().Sub(time.UnixMilli(p.ReceivedAt))
	w.m.WebhookToFree.WithLabelValues(outcome).Observe(max(d, 0).Seconds())
}
