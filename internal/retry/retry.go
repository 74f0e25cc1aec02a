// Package retry is the worker's retry policy for asynq. A task's error says
// which of three things happened:
//
//   - a wait (rate limit, outage, paused installation): retried after the
//     wait it names, without spending the retry budget, so a long outage
//     drains by itself once it ends;
//   - a permanent refusal: archived at once with its reason, inspectable;
//   - anything else: retried with capped exponential backoff and jitter,
//     spending the budget, archived when it is spent.
package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hibiken/asynq"
)

// Backoff bounds: the first retry comes quickly (GitHub's eventual
// consistency settles in seconds), the cap keeps a flapping dependency
// probed every few minutes.
const (
	BaseDelay = 2 * time.Second
	MaxDelay  = 5 * time.Minute
)

// WaitError asks for a retry after After without spending the budget.
type WaitError struct {
	After  time.Duration
	Reason string
	Err    error
}

func (e *WaitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("wait %s: %s", e.After.Round(time.Millisecond), e.Reason)
	}
	return fmt.Sprintf("wait %s: %s: %v", e.After.Round(time.Millisecond), e.Reason, e.Err)
}

func (e *WaitError) Unwrap() error { return e.Err }

// Wait returns a WaitError.
func Wait(after time.Duration, reason string, err error) error {
	if after <= 0 {
		after = BaseDelay
	}
	return &WaitError{After: after, Reason: reason, Err: err}
}

// Permanent marks err as a refusal that retrying cannot change: asynq
// archives the task with err as its last error.
func Permanent(err error) error {
	return fmt.Errorf("%w (%w)", err, asynq.SkipRetry)
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool { return errors.Is(err, asynq.SkipRetry) }

// IsFailure is asynq's Config.IsFailure: waits are not failures.
func IsFailure(err error) bool {
	var w *WaitError
	return !errors.As(err, &w)
}

// Delay is asynq's Config.RetryDelayFunc: a wait's own delay (with a little
// jitter so waiting tasks do not wake together), else backoff on the count
// of failed attempts.
func Delay(n int, err error, _ *asynq.Task) time.Duration {
	var w *WaitError
	if errors.As(err, &w) {
		return w.After + jitter(w.After/10)
	}
	return Backoff(n)
}

// Backoff is capped exponential backoff with full jitter over the upper half:
// attempt n waits between d/2 and d, d = BaseDelay·2^n capped at MaxDelay.
func Backoff(n int) time.Duration { return backoff(n, BaseDelay, MaxDelay) }

func backoff(n int, base, cap time.Duration) time.Duration {
	d := cap
	if n < 20 {
		if e := base << n; e < cap {
			d = e
		}
	}
	return d/2 + jitter(d/2)
}

func jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max)))
}

// Outage tracks consecutive failures of one dependency across tasks, so
// that tasks waiting out an outage back off further the longer it lasts
// although none of them spends its retry budget.
type Outage struct {
	// Base and Max bound its waits; zero values take BaseDelay and MaxDelay.
	// A wait is never below Floor (a secondary rate limit's minute).
	Base, Max, Floor time.Duration

	mu       sync.Mutex
	failures int
	since    time.Time
}

// Fail records a failure and returns how long the failing task should wait.
func (o *Outage) Fail(now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failures == 0 {
		o.since = now
	}
	o.failures++
	base, cap := o.Base, o.Max
	if base <= 0 {
		base = BaseDelay
	}
	if cap <= 0 {
		cap = MaxDelay
	}
	return max(backoff(o.failures-1, base, cap), o.Floor)
}

// Succeed ends the outage.
func (o *Outage) Succeed() {
	o.mu.Lock()
	o.failures = 0
	o.mu.Unlock()
}

// State returns the consecutive failures and since when, for logs.
func (o *Outage) State() (int, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failures, o.since
}

// Until calls fn until it succeeds, waiting Backoff between attempts and
// logging each failure as what; it returns ctx's error if ctx ends first.
func Until(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn(what+" failed; retrying", "err", err, "attempt", attempt+1)
		if err := Sleep(ctx, Backoff(attempt)); err != nil {
			return err
		}
	}
}

// Sleep waits d, or less when ctx ends first, then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
