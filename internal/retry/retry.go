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

// Outage is one dependency failing across tasks (GitHub's API, the export).
// Its waits grow with how long it has lasted, not with how many tasks
// failed in it: the tasks of a burst failing together on one 502 are one
// failure, not fifty in a row. It starts at its first failure with waits
// from Base and doubles them each time it outlasts the shortest wait of its
// step, when the first task it sent back is back and failing again, up to
// Max. A success ends it, and so does a quiet spell: no call failed for
// quietWaits of its longest waits, so every task it parked came back and
// none failed. Each worker keeps its own, in memory.
type Outage struct {
	// Base and Max bound its waits; zero values take BaseDelay and MaxDelay.
	// A wait is never below Floor (a secondary rate limit's minute).
	Base, Max, Floor time.Duration

	mu    sync.Mutex
	on    bool      // failing: a failure since the last success or quiet spell
	since time.Time // its first failure
	last  time.Time // its latest failure
	step  int
}

// quietWaits is the quiet spell that ends an outage, in its longest waits: a
// task it parked is back within one, with jitter and a late scheduler.
const quietWaits = 2

// Fail records a failure at now and returns how long the failing task
// should wait.
func (o *Outage) Fail(now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.on || now.Sub(o.last) > quietWaits*o.longest(o.step) {
		o.on, o.since, o.last, o.step = true, now, now, 0
	}
	o.step = max(o.step, o.stepAt(now.Sub(o.since)))
	if now.After(o.last) {
		o.last = now
	}
	d := o.longest(o.step)
	return max(d/2+jitter(d/2), o.Floor)
}

// Succeed ends the outage.
func (o *Outage) Succeed() {
	o.mu.Lock()
	o.on = false
	o.mu.Unlock()
}

// stepAt is the step of an outage that has lasted age: each step lasts its
// shortest wait, until the waits reach Max.
func (o *Outage) stepAt(age time.Duration) int {
	step, end := 0, o.shortest(0)
	for age >= end && o.longest(step) < o.capped() {
		step++
		end += o.shortest(step)
	}
	return step
}

// longest is the longest wait of step (its waits are drawn from its upper
// half): Base doubled per step, at most Max, at least Floor.
func (o *Outage) longest(step int) time.Duration {
	base := o.Base
	if base <= 0 {
		base = BaseDelay
	}
	d := o.capped()
	if step < 20 {
		d = min(base<<step, d)
	}
	return max(d, o.Floor)
}

// shortest is the shortest wait of step.
func (o *Outage) shortest(step int) time.Duration {
	return max(o.longest(step)/2, o.Floor)
}

// capped is the longest wait of any step.
func (o *Outage) capped() time.Duration {
	if o.Max <= 0 {
		return max(MaxDelay, o.Floor)
	}
	return max(o.Max, o.Floor)
}

// Outages are an Outage per key, for a dependency whose parts fail apart:
// GitHub's secondary rate limits are an installation's own.
type Outages[K comparable] struct {
	// Base, Max and Floor are each key's; see Outage.
	Base, Max, Floor time.Duration

	mu sync.Mutex
	m  map[K]*Outage
}

// Fail records a failure of key at now and returns how long the failing
// task should wait.
func (s *Outages[K]) Fail(key K, now time.Time) time.Duration {
	s.mu.Lock()
	o := s.m[key]
	if o == nil {
		if s.m == nil {
			s.m = map[K]*Outage{}
		}
		o = &Outage{Base: s.Base, Max: s.Max, Floor: s.Floor}
		s.m[key] = o
	}
	s.mu.Unlock()
	return o.Fail(now)
}

// Succeed ends key's outage.
func (s *Outages[K]) Succeed(key K) {
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
}

// Until calls fn until it succeeds, waiting Backoff between attempts (a
// Wait's own delay for a Wait) and logging each failure as what; it
// returns a Permanent error at once, and ctx's error if ctx ends first.
func Until(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case IsPermanent(err):
			return err
		}
		delay := Backoff(attempt)
		if w := (*WaitError)(nil); errors.As(err, &w) {
			delay = w.After
		}
		log.Warn(what+" failed; retrying", "err", err, "attempt", attempt+1)
		if err := Sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// Every calls fn every d until ctx ends; the first call is d from now.
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
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
