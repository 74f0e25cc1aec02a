package githubapp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
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

// CredentialsCheckEvery is how long a verdict of CredentialsCheck stands:
// /readyz is probed every few seconds by each replica, GET /app is asked
// at most once in this interval.
const CredentialsCheckEvery = time.Minute

// CredentialsCheck is a readiness check: it fails while GitHub refuses the
// App's JWT. An outage or a rate limit is not a refusal: GitHub being
// away does not make the replica unfit to take deliveries.
func CredentialsCheck(a *App) func(context.Context) error {
	var (
		mu   sync.Mutex
		at   time.Time
		last error
	)
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < CredentialsCheckEvery {
			return last
		}
		_, err := a.Identify(ctx)
		if err != nil && !errors.Is(err, ErrRefused) {
			return last // no verdict: the last one stands, asked again at the next probe
		}
		at, last = time.Now(), err
		return last
	}
}
