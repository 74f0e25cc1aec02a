// Package ghevents receives GitHub webhook deliveries: it verifies them,
// parses the few events queen-app acts on and routes them to asynq tasks and
// to the registry of installed repositories.
package ghevents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/charclass"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/tasks"
)

// MaxBodyBytes caps a delivery's body; GitHub caps payloads at 25 MiB.
const MaxBodyBytes = 25 << 20

// BodyTimeout is how long a delivery's body may take to arrive once its
// headers have. GitHub gives up on a delivery after 10 s: the body, then
// the Redis budget (redisavail.Budget, 5 s) must both fit in that with room
// for the headers and the answer's way back, so a body slower than this
// could not be answered in time anyway. A client that sends headers and
// then trickles holds its place this long at most.
const BodyTimeout = 3 * time.Second

// Limits bound the deliveries in flight (serve.Budget); past them a
// delivery is a 503 with Retry-After at once, which GitHub's redelivery
// brings back. A buffer grows with the bytes that arrived, never with the
// Content-Length claimed, so a place holds its goroutine and connection
// buffers (about 30 KiB) and what it charged to Bytes: a flood holding
// every place and byte peaks at 135-165 MiB of RSS under the chart's
// GOMEMLIMIT, within its 256 MiB (e2e BenchmarkWebhookHostile). One
// address gets twice the 256 deliveries a burst may bring at once, and as
// many places again are left to others.
//
// A signature failure does not penalise its address: behind the chart's
// Ingress every delivery, GitHub's too, has the proxy's address, so a
// penalty would let one forged request lock GitHub out. A forger is held
// by these limits and BodyTimeout instead.
var Limits = serve.Limits{
	Places: 1024, ClientPlaces: 512,
	Bytes: 64 << 20, ClientBytes: 32 << 20,
}

// Request headers GitHub sets on every delivery.
const (
	EventHeader    = "X-GitHub-Event"
	DeliveryHeader = "X-GitHub-Delivery"
)

// Enqueuer stores tasks durably; *tasks.Enqueuer is one. A task id that
// already exists is tasks.AlreadyEnqueued with a nil error.
type Enqueuer interface {
	Enqueue(ctx context.Context, t *asynq.Task) (tasks.Result, error)
}

// EnqueuerFunc adapts a function to Enqueuer.
type EnqueuerFunc func(ctx context.Context, t *asynq.Task) (tasks.Result, error)

// Enqueue calls f.
func (f EnqueuerFunc) Enqueue(ctx context.Context, t *asynq.Task) (tasks.Result, error) {
	return f(ctx, t)
}

// Installs is the registry of installed repositories; *installs.Registry is
// one.
type Installs interface {
	Lookup(ctx context.Context, repo string) (installationID int64, suspended, ok bool, err error)
	Synced(ctx context.Context) (bool, error)
	Set(ctx context.Context, inst installs.Installation) error
	Remove(ctx context.Context, id int64) error
	Suspend(ctx context.Context, id int64) error
	Unsuspend(ctx context.Context, id int64) error
	AddRepos(ctx context.Context, id int64, repos ...string) error
	RemoveRepos(ctx context.Context, id int64, repos ...string) error
	Moved(ctx context.Context, id int64, old, to string) (known bool, err error)
}

// Config configures the webhook handler.
type Config struct {
	// Secrets are the webhook secrets accepted: the current one and, while
	// rotating, the previous one. Empty entries are skipped; at least one
	// must be non-empty.
	Secrets  [][]byte
	Enqueuer Enqueuer // required
	Installs Installs // required
	// Deliveries remembers the deliveries done (NewDeliveryLog); required.
	Deliveries Deliveries
	// Budget bounds the deliveries in flight; nil: a Budget of Limits.
	Budget *serve.Budget
	// ReevaluateDelay delays claim:reevaluate (QUEEN_REEVALUATE_DELAY,
	// whose default config supplies); zero runs it at once.
	ReevaluateDelay time.Duration
	Logger          *slog.Logger // nil: discard
	Metrics         *Metrics     // nil: none
}

type handler struct {
	events     map[string]eventFunc
	secrets    [][]byte
	enqueuer   Enqueuer
	installs   Installs
	deliveries Deliveries
	budget     *serve.Budget
	delay      time.Duration
	log        *slog.Logger
	metrics    *Metrics
}

// NewHandler returns the webhook handler, to be mounted at POST /webhook.
func NewHandler(cfg Config) (http.Handler, error) {
	h := &handler{
		enqueuer: cfg.Enqueuer, installs: cfg.Installs, deliveries: cfg.Deliveries,
		budget: cfg.Budget, delay: cfg.ReevaluateDelay, log: cfg.Logger, metrics: cfg.Metrics,
	}
	h.events = h.on()
	for _, s := range cfg.Secrets {
		if len(s) > 0 {
			h.secrets = append(h.secrets, bytes.Clone(s))
		}
	}
	switch {
	case len(h.secrets) == 0:
		return nil, errors.New("ghevents: Config.Secrets: no non-empty webhook secret")
	case h.enqueuer == nil:
		return nil, errors.New("ghevents: Config.Enqueuer is nil")
	case h.installs == nil:
		return nil, errors.New("ghevents: Config.Installs is nil")
	case h.deliveries == nil:
		return nil, errors.New("ghevents: Config.Deliveries is nil")
	case h.delay < 0:
		return nil, fmt.Errorf("ghevents: Config.ReevaluateDelay %v is negative", h.delay)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.budget == nil {
		h.budget = serve.NewBudget(Limits)
	}
	if h.metrics != nil {
		h.metrics.budget.Store(h.budget)
	}
	return h, nil
}

// outcome is the answer to one delivery and what the log line says about it.
type outcome struct {
	code       int
	status     string // accepted, duplicate, ignored, pong, or the error text
	reason     string
	taskID     string
	err        error // logged, never sent
	retryAfter bool  // a 503 past the Budget: Retry-After: 1
}

// delivery is what is known about the request so far, for logs and metrics.
type delivery struct {
	id, event, action string
	verified          bool
	attrs             []slog.Attr
}

// eventChars are X-GitHub-Event's, 1 to 64 of them (charclass says why not
// regexp); GitHub's own have digits (projects_v2_item).
var eventChars = charclass.New("a-z0-9_")

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := &delivery{}
	lease, ok := h.budget.Admit(r)
	if !ok {
		h.finish(w, d, busy(serve.BusyError))
		return
	}
	defer lease.Release()
	h.finish(w, d, h.serve(w, r, d, lease))
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, d *delivery, lease *serve.Lease) outcome {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return fail(http.StatusMethodNotAllowed, "method not allowed: POST only")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fail(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
	}
	d.event = r.Header.Get(EventHeader)
	d.id = r.Header.Get(DeliveryHeader)
	switch {
	case d.event == "":
		return fail(http.StatusBadRequest, "missing "+EventHeader)
	case !eventChars.Match(d.event, 1, 64):
		d.event = ""
		return fail(http.StatusBadRequest, "malformed "+EventHeader)
	case d.id == "":
		return fail(http.StatusBadRequest, "missing "+DeliveryHeader)
	case !tasks.ValidDelivery(d.id):
		d.id = ""
		return fail(http.StatusBadRequest, "malformed "+DeliveryHeader)
	}
	sig := r.Header.Get(SignatureHeader)
	if sig == "" {
		return h.signatureFailure("missing", "missing "+SignatureHeader)
	}
	body, err := serve.ReadBody(w, r, lease, MaxBodyBytes, BodyTimeout)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fail(http.StatusRequestEntityTooLarge, "body larger than 25 MiB")
	case errors.Is(err, serve.ErrBudget):
		return busy("too many body bytes in flight, retry later")
	case errors.Is(err, serve.ErrSlowBody):
		return fail(http.StatusRequestTimeout, "body not received within "+BodyTimeout.String())
	case err != nil:
		return fail(http.StatusBadRequest, "cannot read body")
	}
	if !VerifySignature(h.secrets, sig, body) {
		return h.signatureFailure("mismatch", "bad "+SignatureHeader)
	}
	d.verified = true
	if len(bytes.TrimSpace(body)) == 0 {
		return fail(http.StatusBadRequest, "empty body")
	}
	// One Redis budget for the whole delivery, so a slow Redis answers 503
	// before GitHub's 10 s delivery timeout gives up.
	ctx, cancel := context.WithTimeout(r.Context(), redisavail.Budget)
	defer cancel()
	if on, ok := h.events[d.event]; ok {
		return on(ctx, d, body)
	}
	if !validJSON(body) {
		return fail(http.StatusBadRequest, "body is not valid JSON")
	}
	return ignored("event not acted on")
}

// eventFunc handles one event's verified delivery.
type eventFunc func(ctx context.Context, d *delivery, body []byte) outcome

// on is the handler of each event queen-app acts on, one file each.
func (h *handler) on() map[string]eventFunc {
	return map[string]eventFunc{
		"ping":                      h.ping,
		"pull_request":              h.pullRequest,
		"installation":              h.installation,
		"installation_repositories": h.installationRepositories,
		"repository":                h.repository,
	}
}

// Events are the events the receiver acts on (the App's manifest subscribes
// to those GitHub does not send every App anyway).
func Events() []string {
	h := &handler{}
	out := make([]string, 0, 5)
	for e := range h.on() {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

type repoRef struct {
	ID       int64  `json:"id"`
	FullName string `json:"full_name"`
}

func fail(code int, msg string) outcome { return outcome{code: code, status: msg} }

func ignored(reason string) outcome {
	return outcome{code: http.StatusAccepted, status: "ignored", reason: reason}
}

// busy answers a delivery past the Budget: GitHub's redelivery brings it
// back.
func busy(msg string) outcome {
	return outcome{code: http.StatusServiceUnavailable, status: msg, retryAfter: true}
}

// unavailable answers a failed Redis call: 503 when Redis is unavailable,
// so GitHub marks the delivery failed for the redelivery job; any other
// error is a bug, a 500.
func unavailable(err error) outcome {
	if !redisavail.Unavailable(err) {
		return outcome{code: http.StatusInternalServerError, status: "internal error", err: err}
	}
	return outcome{code: http.StatusServiceUnavailable, status: "store unavailable, retry later", err: err}
}

// signatureFailure counts a 401 by reason (missing, mismatch) and refuses it
// with msg; the log line (never the response) names the variable to fix.
func (h *handler) signatureFailure(reason, msg string) outcome {
	if h.metrics != nil {
		h.metrics.SignatureFailures.WithLabelValues(reason).Inc()
	}
	o := fail(http.StatusUnauthorized, msg)
	o.reason = signatureHints[reason]
	return o
}

var signatureHints = map[string]string{
	"missing": "unsigned: the App has no webhook secret, or the sender is not GitHub; " +
		"set the App's webhook secret to GITHUB_WEBHOOK_SECRET",
	"mismatch": "GITHUB_WEBHOOK_SECRET (or GITHUB_WEBHOOK_SECRET_PREVIOUS) differs from " +
		"the App's webhook secret, or the sender is not GitHub",
}

func (h *handler) enqueued(typ, result string) {
	if h.metrics != nil {
		h.metrics.Enqueues.WithLabelValues(typ, result).Inc()
	}
}

// finish writes o, counts it and logs one line; never the body or a secret.
func (h *handler) finish(w http.ResponseWriter, d *delivery, o outcome) {
	var resp struct {
		Status string `json:"status,omitempty"`
		Error  string `json:"error,omitempty"`
		Reason string `json:"reason,omitempty"`
		TaskID string `json:"task_id,omitempty"`
	}
	if o.code < 300 {
		resp.Status, resp.Reason, resp.TaskID = o.status, o.reason, o.taskID
	} else {
		resp.Error = o.status
	}
	data, _ := json.Marshal(resp)
	data = append(data, '\n')
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Length", strconv.Itoa(len(data)))
	if o.retryAfter {
		hdr.Set("Retry-After", "1")
	}
	w.WriteHeader(o.code)
	_, _ = w.Write(data)
	// GitHub has its answer before the log line and the metrics are made.
	_ = http.NewResponseController(w).Flush()

	event, action := "", ""
	if d.verified {
		event, action = eventLabel(d.event), actionLabel(d.action)
	}
	if h.metrics != nil {
		h.metrics.Requests.WithLabelValues(event, action, strconv.Itoa(o.code)).Inc()
	}
	level := slog.LevelInfo
	switch {
	case o.code >= 500:
		level = slog.LevelError
	case o.code >= 400:
		level = slog.LevelWarn
	}
	attrs := append([]slog.Attr{
		slog.String("delivery_id", d.id), slog.String("event", d.event),
		slog.String("action", d.action), slog.Int("code", o.code),
	}, d.attrs...)
	if o.reason != "" {
		attrs = append(attrs, slog.String("reason", o.reason))
	}
	if o.err != nil {
		attrs = append(attrs, slog.String("error", o.err.Error()))
	}
	msg := "webhook " + o.status
	if o.code >= 400 {
		msg = "webhook refused: " + o.status
	}
	h.log.LogAttrs(context.Background(), level, msg, attrs...)
}
