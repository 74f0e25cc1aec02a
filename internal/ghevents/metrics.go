package ghevents

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/serve"
)

// Metrics are the webhook's Prometheus collectors.
type Metrics struct {
	// Requests counts requests by event, action and status code. Event and
	// action are those of verified deliveries, from a fixed set ("other"
	// otherwise, "" before verification), so a caller cannot grow the label set.
	Requests *prometheus.CounterVec
	// SignatureFailures counts requests refused 401, by reason
	// (missing, mismatch).
	SignatureFailures *prometheus.CounterVec
	// Enqueues counts task enqueues by type and result
	// (enqueued, duplicate, error).
	Enqueues *prometheus.CounterVec
	// InFlight and BodyBytes are the places and body bytes the handler's
	// Budget holds now.
	InFlight, BodyBytes prometheus.GaugeFunc

	budget atomic.Pointer[serve.Budget] // the handler's, once there is one
}

// NewMetrics creates the collectors and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_webhook_requests_total",
			Help: "Webhook requests by event, action and HTTP status code.",
		}, []string{"event", "action", "code"}),
		SignatureFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_webhook_signature_failures_total",
			Help: "Webhook requests refused for a missing or wrong X-Hub-Signature-256.",
		}, []string{"reason"}),
		Enqueues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_webhook_enqueues_total",
			Help: "Tasks enqueued by the webhook, by type and result.",
		}, []string{"type", "result"}),
	}
	inUse := func(bytes bool) func() float64 {
		return func() float64 {
			b := m.budget.Load()
			if b == nil {
				return 0
			}
			places, n := b.InUse()
			if bytes {
				return float64(n)
			}
			return float64(places)
		}
	}
	m.InFlight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "queen_webhook_in_flight",
		Help: "Webhook deliveries being served now (ghevents.Limits bounds them).",
	}, inUse(false))
	m.BodyBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "queen_webhook_body_bytes",
		Help: "Body bytes buffered by the webhook deliveries being served now.",
	}, inUse(true))
	if reg != nil {
		reg.MustRegister(m.Requests, m.SignatureFailures, m.Enqueues, m.InFlight, m.BodyBytes)
	}
	return m
}

var knownEvents = map[string]bool{
	"ping": true, "pull_request": true, "installation": true, "installation_repositories": true,
	"repository": true,
}

var knownActions = map[string]bool{
	"closed": true, "reopened": true, "opened": true, "synchronize": true, "edited": true,
	"created": true, "deleted": true, "suspend": true, "unsuspend": true,
	"new_permissions_accepted": true, "added": true, "removed": true,
	"renamed": true, "transferred": true,
}

func eventLabel(event string) string {
	if event == "" || knownEvents[event] {
		return event
	}
	return "other"
}

func actionLabel(action string) string {
	if action == "" || knownActions[action] {
		return action
	}
	return "other"
}
