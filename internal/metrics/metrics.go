// Package metrics holds the worker's Prometheus collectors, an asynq queue
// collector, and the /healthz, /readyz and /metrics handlers every binary
// serves.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Worker are the worker's own collectors.
type Worker struct {
	TaskRuns     *prometheus.CounterVec   // type, result (ok, retry, wait, refused, error)
	TaskDuration *prometheus.HistogramVec // type
	Claims       *prometheus.CounterVec   // rule, outcome (freed, would_free, unfreed, kept)
	SweepRuns    *prometheus.CounterVec   // sweep (claim, export), result
	Redeliveries *prometheus.CounterVec   // result
	Export       *prometheus.CounterVec   // state of each export:push outcome
	Leader       prometheus.Gauge         // 1 while this replica runs the scheduler
	// PeriodicSkipped counts periodic runs skipped because the run of an
	// earlier slot still went on (type).
	PeriodicSkipped *prometheus.CounterVec
	// WebhookToFree is the time from the webhook taking a pull_request
	// delivery to the worker recording the free (or, flags off, the
	// would_free) it led to (outcome): the reevaluate delay, the queue, the
	// retries and GitHub's reads, as the operator waits it.
	WebhookToFree *prometheus.HistogramVec
}

// NewWorker registers the worker's collectors on reg.
func NewWorker(reg prometheus.Registerer) *Worker {
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	w := &Worker{
		TaskRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_task_runs_total", Help: "Task runs by type and result."}, []string{"type", "result"}),
		TaskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queen_task_duration_seconds", Help: "Task run time by type.",
			Buckets: prometheus.ExponentialBuckets(0.005, 3, 10)}, []string{"type"}),
		Claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_claims_decisions_total", Help: "Claim decisions by rule and outcome (freed, would_free, unfreed, kept)."},
			[]string{"rule", "outcome"}),
		SweepRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_sweep_runs_total", Help: "Sweep runs by sweep and result."}, []string{"sweep", "result"}),
		Redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_redeliveries_total", Help: "Webhook redelivery requests by result."}, []string{"result"}),
		Export: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_export_outcomes_total", Help: "export:push outcomes by state."}, []string{"state"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queen_scheduler_leader", Help: "1 while this replica runs the periodic scheduler."}),
		PeriodicSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_periodic_skipped_total", Help: "Periodic task runs skipped while an earlier run of the same type still ran."},
			[]string{"type"}),
		WebhookToFree: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queen_webhook_to_free_seconds",
			Help: "Time from the webhook taking a pull_request delivery to the free or would_free it led to, by outcome.",
			// 1 s to 4.5 h: from a prompt free past the 5 s delay to one that waited out retries.
			Buckets: prometheus.ExponentialBuckets(1, 2, 15)}, []string{"outcome"}),
	}
	f(w.TaskRuns)
	f(w.TaskDuration)
	f(w.Claims)
	f(w.SweepRuns)
	f(w.Redeliveries)
	f(w.Export)
	f(w.Leader)
	f(w.PeriodicSkipped)
	f(w.WebhookToFree)
	return w
}

// NewRegistry is a registry with the Go and process collectors and
// queen_build_info.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	return reg
}

// queueCollector reports asynq queue sizes at scrape time.
type queueCollector struct {
	insp   *asynq.Inspector
	queues []string
	size   *prometheus.Desc
}

// NewQueueCollector reports each queue's tasks by state (pending, active,
// scheduled, retry, archived, completed) from asynq's inspector.
func NewQueueCollector(insp *asynq.Inspector, queues ...string) prometheus.Collector {
	return &queueCollector{insp: insp, queues: queues, size: prometheus.NewDesc(
		"queen_asynq_tasks", "Tasks in each asynq queue by state.", []string{"queue", "state"}, nil)}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.size }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.queues {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			continue // a queue that was never used has no info yet
		}
		for state, n := range map[string]int{"pending": info.Pending, "active": info.Active,
			"scheduled": info.Scheduled, "retry": info.Retry, "archived": info.Archived, "completed": info.Completed} {
			ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(n), q, state)
		}
	}
}

// NewStateGauge reports which of states current names: 1 for it, 0 for
// the others, read at scrape time.
func NewStateGauge(name, help string, states []string, current func() string) prometheus.Collector {
	return &stateGauge{desc: prometheus.NewDesc(name, help, []string{"state"}, nil), states: states, current: current}
}

type stateGauge struct {
	desc    *prometheus.Desc
	states  []string
	current func() string
}

func (g *stateGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *stateGauge) Collect(ch chan<- prometheus.Metric) {
	now := g.current()
	for _, s := range g.states {
		v := 0.0
		if s == now {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, s)
	}
}

// Paths every binary serves on its QUEEN_API_LISTEN.
const (
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
	MetricsPath = "/metrics"
)

// Check is one readiness condition; nil error means ready.
type Check func(ctx context.Context) error

// Unavailable is what /readyz says of a failing check. /readyz answers
// anyone who reaches the port, so the check's error (Redis's own text,
// an address) goes to the log only.
const Unavailable = "unavailable"

// wordOf is what /readyz says of a check's error: the Word of an error
// in its chain that has one (a reason safe to show, such as "refused"),
// else Unavailable.
func wordOf(err error) string {
	var w interface{ Word() string }
	if errors.As(err, &w) && w.Word() != "" {
		return w.Word()
	}
	return Unavailable
}

// isDegraded reports an error that leaves the binary ready but short of
// something (GitHub unreachable): an error in its chain with Degraded() true.
func isDegraded(err error) bool {
	var d interface{ Degraded() bool }
	return errors.As(err, &d) && d.Degraded()
}

// Health serves /healthz (the process answers), /readyz (every check
// passes; 503 naming the failing one, its error logged to log; 200
// "degraded" naming a check whose error is degraded) and /metrics.
func Health(reg *prometheus.Registry, log *slog.Logger, checks map[string]Check) *http.ServeMux {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthzPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET "+ReadyzPath, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		failed, degraded := map[string]string{}, map[string]string{}
		for name, check := range checks {
			err := check(ctx)
			switch {
			case err == nil:
			case isDegraded(err):
				degraded[name] = wordOf(err) // its own metric says it; no line per probe
			default:
				failed[name] = wordOf(err)
				log.Warn("not ready", "check", name, "error", err.Error())
			}
		}
		switch {
		case len(failed) > 0:
			body := map[string]any{"status": "not ready", "failed": failed}
			if len(degraded) > 0 {
				body["degraded"] = degraded
			}
			writeJSON(w, http.StatusServiceUnavailable, body)
		case len(degraded) > 0:
			writeJSON(w, http.StatusOK, map[string]any{"status": "degraded", "degraded": degraded})
		default:
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		}
	})
	mux.Handle("GET "+MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
