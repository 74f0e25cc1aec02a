// Package tasks names the asynq tasks of queen-app and builds them with their
// ids and options, so the webhook, the scheduler and the worker agree on both.
//
// Every task goes to the asynq queue Queue. Retry and timeout budgets:
//
//	claim:reevaluate      MaxRetry 10, Timeout 2m: one branch's PR pages and
//	                      one ledger compare-and-set; ten failures span about
//	                      4 h of asynq's default backoff (outages should not
//	                      count: the worker's IsFailure keeps the budget).
//	claim:sweep           MaxRetry 3, Timeout 10m: the scheduler runs it again
//	                      every QUEEN_SWEEP_INTERVAL anyway.
//	export:sweep          MaxRetry 3, Timeout 10m: likewise.
//	export:push           MaxRetry 10, Timeout 15m: a bundle import and a git
//	                      push of a whole branch over the network.
//	deliveries:redeliver  MaxRetry 3, Timeout 5m.
package tasks

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/charclass"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
)

// Task type names.
const (
	TypeReevaluate  = "claim:reevaluate"
	TypeSweep       = "claim:sweep"
	TypeExportSweep = "export:sweep"
	TypeExportPush  = "export:push"
	TypeRedeliver   = "deliveries:redeliver"
)

// Queue is the asynq queue every task goes to.
const Queue = "default"

// DefaultReevaluateDelay is QUEEN_REEVALUATE_DELAY's default: right after a
// close GitHub's API can still show the PR open.
const DefaultReevaluateDelay = 5 * time.Second

// ReevaluateRetention keeps a finished claim:reevaluate (and so its id) for
// GitHub's 3-day redelivery window, making a redelivery a no-op.
const ReevaluateRetention = 72 * time.Hour

// Retry and timeout budgets; see the package comment.
const (
	ReevaluateMaxRetry  = 10
	ReevaluateTimeout   = 2 * time.Minute
	SweepMaxRetry       = 3
	SweepTimeout        = 10 * time.Minute
	ExportSweepMaxRetry = 3
	ExportSweepTimeout  = 10 * time.Minute
	ExportPushMaxRetry  = 10
	ExportPushTimeout   = 15 * time.Minute
	RedeliverMaxRetry   = 3
	RedeliverTimeout    = 5 * time.Minute
)

// ReevaluatePayload asks the worker to re-read the PRs of branch queen-<Issue>
// in Repo. The PR fields are a hint from the webhook, never a verdict.
type ReevaluatePayload struct {
	Repo           string `json:"repo"`
	Issue          int64  `json:"issue"`
	Delivery       string `json:"delivery"`
	Event          string `json:"event"`
	Action         string `json:"action"`
	InstallationID int64  `json:"installation_id"`
	PRNumber       int    `json:"pr_number"`
	Merged         bool   `json:"merged"`
	// ReceivedAt is when the webhook took the delivery (Unix ms), for the
	// worker's queen_webhook_to_free_seconds; 0 from a sender that did not say.
	ReceivedAt int64 `json:"received_at,omitempty"`
}

// ExportPushPayload asks the worker to publish the accepted Head of Issue.
// DryRun asks it to decide only, pushing, opening and writing nothing,
// whatever QUEEN_EXPORT_DRY_RUN says. Manual marks a person's request
// (queenctl export push): it is decided again even when the row's export
// state already settled it (a refusal at this version, the PR opened),
// where a sweep's task, decided on an older read of the row, stands down.
// Manual is not part of the task id: one head is never pushed twice at once.
type ExportPushPayload struct {
	Repo   string `json:"repo"`
	Issue  int64  `json:"issue"`
	Head   string `json:"head"`
	DryRun bool   `json:"dry_run,omitempty"`
	Manual bool   `json:"manual,omitempty"`
}

// deliveryChars bound X-GitHub-Delivery (a GUID), 1 to 128 of them, since it
// becomes part of a task id and a log line; checked on every delivery
// (charclass says why not regexp).
var deliveryChars = charclass.New("A-Za-z0-9._-")

// ValidDelivery reports whether s can serve as a delivery id in a task id.
func ValidDelivery(s string) bool { return deliveryChars.Match(s, 1, 128) }

func (p ReevaluatePayload) validate() error {
	switch {
	case !ghrepo.Valid(p.Repo):
		return fmt.Errorf("reevaluate payload: repo %q is not owner/name", p.Repo)
	case p.Issue <= 0:
		return fmt.Errorf("reevaluate payload: issue %d is not positive", p.Issue)
	case !ValidDelivery(p.Delivery):
		return fmt.Errorf("reevaluate payload: delivery %q is not a delivery id", p.Delivery)
	}
	return nil
}

func (p ExportPushPayload) validate() error {
	switch {
	case !ghrepo.Valid(p.Repo):
		return fmt.Errorf("export push payload: repo %q is not owner/name", p.Repo)
	case p.Issue <= 0:
		return fmt.Errorf("export push payload: issue %d is not positive", p.Issue)
	case !dispatch.ValidHead(p.Head):
		return fmt.Errorf("export push payload: head %q is not 40 lowercase hex", p.Head)
	}
	return nil
}

// ReevaluateID is the task id of p: reevaluate:{repo}:{issue}:{delivery},
// with the repository's canonical key: one repository, one id.
func ReevaluateID(p ReevaluatePayload) string {
	return "reevaluate:" + ghrepo.Key(p.Repo) + ":" + strconv.FormatInt(p.Issue, 10) + ":" + p.Delivery
}

// ExportPushID is the task id of p: export:push:{repo}:{issue}:{head}, with
// ":dry-run" after it for a dry run, so that a dry run never blocks a real
// push of the same head (nor a real push a dry run).
func ExportPushID(p ExportPushPayload) string {
	id := "export:push:" + ghrepo.Key(p.Repo) + ":" + strconv.FormatInt(p.Issue, 10) + ":" + p.Head
	if p.DryRun {
		id += ":dry-run"
	}
	return id
}

// NewReevaluate builds a claim:reevaluate task that runs after delay (zero or
// negative: at once) and is kept ReevaluateRetention after it ran.
func NewReevaluate(p ReevaluatePayload, delay time.Duration) (*asynq.Task, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("reevaluate payload: %w", err)
	}
	return asynq.NewTask(TypeReevaluate, data,
		asynq.Queue(Queue),
		asynq.TaskID(ReevaluateID(p)),
		asynq.Retention(ReevaluateRetention),
		asynq.ProcessIn(delay),
		asynq.MaxRetry(ReevaluateMaxRetry),
		asynq.Timeout(ReevaluateTimeout),
	), nil
}

// NewExportPush builds an export:push task. It has no retention: once done its
// id is free, so a later sweep that still finds the head unpublished can retry.
func NewExportPush(p ExportPushPayload) (*asynq.Task, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("export push payload: %w", err)
	}
	return asynq.NewTask(TypeExportPush, data,
		asynq.Queue(Queue),
		asynq.TaskID(ExportPushID(p)),
		asynq.MaxRetry(ExportPushMaxRetry),
		asynq.Timeout(ExportPushTimeout),
	), nil
}

// NewSweep builds a claim:sweep task (no payload).
func NewSweep() *asynq.Task {
	return asynq.NewTask(TypeSweep, nil, asynq.Queue(Queue),
		asynq.MaxRetry(SweepMaxRetry), asynq.Timeout(SweepTimeout))
}

// NewExportSweep builds an export:sweep task (no payload).
func NewExportSweep() *asynq.Task {
	return asynq.NewTask(TypeExportSweep, nil, asynq.Queue(Queue),
		asynq.MaxRetry(ExportSweepMaxRetry), asynq.Timeout(ExportSweepTimeout))
}

// NewRedeliver builds a deliveries:redeliver task (no payload).
func NewRedeliver() *asynq.Task {
	return asynq.NewTask(TypeRedeliver, nil, asynq.Queue(Queue),
		asynq.MaxRetry(RedeliverMaxRetry), asynq.Timeout(RedeliverTimeout))
}

// ParseReevaluate decodes and validates a claim:reevaluate payload.
func ParseReevaluate(t *asynq.Task) (ReevaluatePayload, error) {
	var p ReevaluatePayload
	if t.Type() != TypeReevaluate {
		return p, fmt.Errorf("task type %q is not %s", t.Type(), TypeReevaluate)
	}
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, fmt.Errorf("reevaluate payload: %w", err)
	}
	return p, p.validate()
}

// ParseExportPush decodes and validates an export:push payload.
func ParseExportPush(t *asynq.Task) (ExportPushPayload, error) {
	var p ExportPushPayload
	if t.Type() != TypeExportPush {
		return p, fmt.Errorf("task type %q is not %s", t.Type(), TypeExportPush)
	}
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, fmt.Errorf("export push payload: %w", err)
	}
	return p, p.validate()
}

// TaskID is the id the constructors give t, recomputed from its payload; ok is
// false for tasks without an id (the periodic ones) or with a bad payload.
func TaskID(t *asynq.Task) (id string, ok bool) {
	switch t.Type() {
	case TypeReevaluate:
		p, err := ParseReevaluate(t)
		if err != nil {
			return "", false
		}
		return ReevaluateID(p), true
	case TypeExportPush:
		p, err := ParseExportPush(t)
		if err != nil {
			return "", false
		}
		return ExportPushID(p), true
	}
	return "", false
}
