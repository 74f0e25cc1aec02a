package githubapp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/metrics"
)

// ErrRefused is GitHub answering the App's JWT with 401: the App id and
// the key are not a pair GitHub knows. Nothing the process does fixes it,
// so the message says which variables to look at.
var ErrRefused = errors.New("GitHub refuses the App's credentials (401): " +
	"GITHUB_APP_ID and the key in GITHUB_APP_PRIVATE_KEY_FILE (or GITHUB_APP_PRIVATE_KEY) are not this App's id and one of its private keys")

// RefusedWord is what /readyz says of the App while GitHub refuses it.
const RefusedWord = "refused"

// RefusedError is ErrRefused with GitHub's answer.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string   { return ErrRefused.Error() + ": " + e.Err.Error() }
func (e *RefusedError) Unwrap() []error { return []error{ErrRefused, e.Err} }

// Word is the reason /readyz gives (metrics.Health reads it).
func (e *RefusedError) Word() string { return RefusedWord }

// refusedIf marks err, a call signed with the App's JWT, as refused when
// GitHub answered 401.
func refusedIf(err error) error {
	if status(err) == http.StatusUnauthorized {
		return &RefusedError{Err: err}
	}
	return err
}

// failApp is fail for a call made with the App's JWT.
func failApp(op string, err error) error { return fail(op, refusedIf(err)) }

// Identity is the App as GitHub knows it (GET /app).
type Identity struct {
	ID   int64
	Slug string
	Name string
}

// Identify reads the App with its JWT (GET /app): the one call that proves
// the id and the key are a pair GitHub accepts. A 401 is ErrRefused.
func (a *App) Identify(ctx context.Context) (Identity, error) {
	app, _, err := a.appClient.Apps.Get(ctx, "")
	if err != nil {
		return Identity{}, failApp("GET /app", err)
	}
	return Identity{ID: app.GetID(), Slug: app.GetSlug(), Name: app.GetName()}, nil
}

// CredentialsCheckEvery is how long a verdict on the App's key stands:
// /readyz is probed every few seconds by each replica, GET /app is asked
// at most once in this interval while GitHub answers.
const CredentialsCheckEvery = time.Minute

// UnreachableRetry is how soon GET /app is asked again while GitHub
// cannot be reached or gave no verdict (a rate limit), and the least time
// between two asks.
const UnreachableRetry = 10 * time.Second

// States of the App's credentials (queen_github_app_state).
const (
	AppUnknown     = "unknown"     // not asked yet
	AppAccepted    = "accepted"    // GitHub took the App's JWT
	AppRefused     = RefusedWord   // GitHub answered 401: not ready
	AppUnreachable = "unreachable" // GitHub cannot be reached: ready, degraded
)

// AppStates are the states of Credentials.State.
var AppStates = []string{AppAccepted, AppRefused, AppUnreachable, AppUnknown}

// UnreachableError is GitHub not answering GET /app (a network error, a
// timeout, a 5xx): nothing is known of the key, and the replica is not
// unfit for it (metrics.Health reports it as degraded, not failed).
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string {
	return "GitHub cannot be reached to check the App's credentials: " + e.Err.Error()
}
func (e *UnreachableError) Unwrap() error  { return e.Err }
func (e *UnreachableError) Word() string   { return AppUnreachable }
func (e *UnreachableError) Degraded() bool { return true }

// Credentials tells whether GitHub takes the App's id and key, from GET
// /app asked at most every CredentialsCheckEvery (UnreachableRetry while
// GitHub is away). A refusal stands until GitHub answers otherwise: an
// outage says nothing of the key. Safe for concurrent use.
type Credentials struct {
	app *App

	mu          sync.Mutex
	at          time.Time // of the last answer that gave a verdict on the key
	refused     error     // the standing refusal, nil when accepted or unknown
	accepted    bool
	unreachable error // the last ask's outage, nil once GitHub answered
	triedAt     time.Time
}

// NewCredentials watches a's credentials.
func NewCredentials(a *App) *Credentials { return &Credentials{app: a} }

// Check is a readiness check: a *RefusedError while GitHub refuses the
// App's JWT; an *UnreachableError (degraded, not failed) while GitHub
// cannot be reached and no refusal stands; nil otherwise. A rate limit or
// an unreadable answer is no verdict: the last one stands.
func (c *Credentials) Check(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	due := c.triedAt.IsZero() || now.Sub(c.triedAt) >= UnreachableRetry &&
		(c.unreachable != nil || now.Sub(c.at) >= CredentialsCheckEvery)
	if due {
		c.triedAt = now
		_, err := c.app.Identify(ctx)
		switch {
		case err == nil:
			c.at, c.refused, c.accepted, c.unreachable = now, nil, true, nil
		case errors.Is(err, ErrRefused):
			c.at, c.refused, c.accepted, c.unreachable = now, err, false, nil
		case Classify(err) == Retry && ctx.Err() == nil:
			c.unreachable = &UnreachableError{Err: err}
		}
	}
	if c.refused != nil {
		return c.refused
	}
	if c.unreachable != nil {
		return c.unreachable
	}
	return nil
}

// State is the credentials' state for queen_github_app_state, as the last
// Check found it.
func (c *Credentials) State() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.refused != nil:
		return AppRefused
	case c.unreachable != nil:
		return AppUnreachable
	case c.accepted:
		return AppAccepted
	}
	return AppUnknown
}

// WaitTaken checks every interval until GitHub does not refuse the App's
// key, and returns the last Check's error: nil (accepted, or no verdict)
// or an *UnreachableError. It logs the first refusal once at ERROR. A
// ctx that ends returns ctx's error.
func (c *Credentials) WaitTaken(ctx context.Context, interval time.Duration, log *slog.Logger) error {
	logged := false
	for {
		err := c.Check(ctx)
		if !errors.Is(err, ErrRefused) {
			return err
		}
		if !logged {
			log.Error("not ready: GitHub refuses the App's key; waiting", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// NewStateGauge is queen_github_app_state: 1 for c's State, 0 for the
// others.
func NewStateGauge(c *Credentials) prometheus.Collector {
	return metrics.NewStateGauge("queen_github_app_state",
		"1 for what GitHub says of the App's key (accepted; refused: not ready; unreachable: ready, degraded; unknown), 0 for the others.",
		AppStates, c.State)
}
