package worker

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

// histogram reads a histogram's count and sum.
func histogram(t *testing.T, o prometheus.Observer) (uint64, float64) {
	t.Helper()
	var d dto.Metric
	if err := o.(prometheus.Metric).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount(), d.GetHistogram().GetSampleSum()
}

// A free that follows a delivery is timed from the webhook's receipt of it,
// on the worker's clock; a would_free (flags off) too, so shadow mode shows
// what the latency would be. A claim kept, or a task without a receipt time
// (queued by an older webhook), is not timed.
func TestWebhookToFreeIsTimedFromTheDelivery(t *testing.T) {
	cases := []struct {
		name     string
		flag     bool
		merged   bool
		received time.Duration // before the worker's now; 0: not stamped
		outcome  string        // the series observed, "" for none
	}{
		{"freed 90 s after the delivery", true, false, 90 * time.Second, "freed"},
		{"would_free, flags off", false, false, 7 * time.Second, "would_free"},
		{"merged: kept, not timed", true, true, 90 * time.Second, ""},
		{"no receipt time: not timed", true, false, 0, ""},
		{"the webhook's clock ahead: 0, not negative", true, false, -3 * time.Second, "freed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := testkit.NewClock(time.Now().Truncate(time.Millisecond)) // ReceivedAt is in ms
			e := newEnv(t, options{freeClosedPR: c.flag, clock: clock})
			e.row(5, "accept", nil)
			p := tasks.ReevaluatePayload{Repo: repo, Issue: 5, Delivery: "d-1", Event: "pull_request",
				Action: "closed", InstallationID: instID, PRNumber: e.pr(5, "closed", c.merged)}
			if c.received != 0 {
				p.ReceivedAt = clock.Now().Add(-c.received).UnixMilli()
			}
			task, err := tasks.NewReevaluate(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.w.Reevaluate(e.ctx, task); err != nil {
				t.Fatalf("Reevaluate: %v", err)
			}
			for _, outcome := range []string{"freed", "would_free"} {
				n, sum := histogram(t, e.m.WebhookToFree.WithLabelValues(outcome))
				switch {
				case outcome != c.outcome && n != 0:
					t.Errorf("%s observed %d times, want none", outcome, n)
				case outcome == c.outcome && n != 1:
					t.Errorf("%s observed %d times, want 1", outcome, n)
				case outcome == c.outcome && sum != max(c.received, 0).Seconds():
					t.Errorf("%s observed %v s, want %v", outcome, sum, max(c.received, 0).Seconds())
				}
			}
		})
	}
}
