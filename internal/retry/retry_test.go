package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

func TestWaitsDoNotSpendTheBudget(t *testing.T) {
	w := Wait(90*time.Second, "secondary rate limit", errors.New("403"))
	if IsFailure(w) || IsFailure(fmt.Errorf("reevaluate: %w", w)) {
		t.Fatal("a wait counted as a failure: it would spend the retry budget")
	}
	if !IsFailure(errors.New("502 from GitHub")) {
		t.Fatal("a plain error must spend the budget")
	}
	if d := Delay(0, fmt.Errorf("x: %w", w), nil); d < 90*time.Second || d > 99*time.Second {
		t.Fatalf("wait of 90s delayed %s", d)
	}
}

func TestPermanentIsArchivedByAsynq(t *testing.T) {
	err := Permanent(errors.New("refused: writes .github/workflows/ci.yml"))
	if !errors.Is(err, asynq.SkipRetry) || !IsPermanent(err) {
		t.Fatal("a permanent refusal must wrap asynq.SkipRetry")
	}
	if got := err.Error(); got[:8] != "refused:" {
		t.Fatalf("the reason must lead the archived error: %q", got)
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	for n := 0; n < 40; n++ {
		want := MaxDelay
		if n < 20 && BaseDelay<<n < MaxDelay {
			want = BaseDelay << n
		}
		for range 50 {
			d := Backoff(n)
			if d < want/2 || d > want {
				t.Fatalf("Backoff(%d) = %s, want within [%s, %s]", n, d, want/2, want)
			}
		}
	}
}

var outageT0 = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

// retryIn is how long a task that failed in o at now waits, as asynq's
// RetryDelayFunc (Delay) makes it.
func retryIn(o *Outage, now time.Time) time.Duration {
	return Delay(0, Wait(o.Fail(now), "github unavailable", errors.New("502")), nil)
}

// A burst's tasks failing together on one 502 are one failure: each comes
// back within seconds, not as if GitHub had failed fifty times in a row.
func TestOutageBurstOnOneBlipRetriesWithinSeconds(t *testing.T) {
	var o Outage
	for i := 0; i < 50; i++ {
		now := outageT0.Add(time.Duration(i) * 2 * time.Millisecond) // in flight together
		if d := retryIn(&o, now); d > 10*time.Second {
			t.Fatalf("task %d of a burst failing on one 502 waits %s, want within 10s", i+1, d)
		}
	}
}

// task is one task of a simulated outage: when it comes back.
type task struct{ due time.Time }

// failFor runs n tasks that fail every time they run, from start for
// length, each coming back when Delay says; fn sees every failure's age in
// the outage and wait.
func failFor(o *Outage, n int, start time.Time, length time.Duration, fn func(age, wait time.Duration)) time.Time {
	ts := make([]task, n)
	for i := range ts {
		ts[i].due = start.Add(time.Duration(i) * time.Millisecond)
	}
	var now time.Time
	for {
		next := 0
		for i := range ts {
			if ts[i].due.Before(ts[next].due) {
				next = i
			}
		}
		now = ts[next].due
		if now.Sub(start) > length {
			return now
		}
		d := retryIn(o, now)
		fn(now.Sub(start), d)
		ts[next].due = now.Add(d)
	}
}

// An outage's waits grow with how long it has lasted: never more than
// twice its age plus the first step, and at the cap once it has lasted
// five minutes. A success ends it, and so does a quiet spell.
func TestOutageBacksOffWithItsDurationToTheCap(t *testing.T) {
	for run := 0; run < 20; run++ {
		var o Outage
		var capped, failures int
		// Past 5 minutes every task fails again within its longest wait.
		end := failFor(&o, 50, outageT0, 5*time.Minute+MaxDelay*11/10, func(age, d time.Duration) {
			failures++
			if limit := (2*age + BaseDelay) * 11 / 10; d > limit {
				t.Fatalf("run %d: a failure %s into the outage waits %s, want at most %s", run, age, d, limit)
			}
			if age >= 5*time.Minute {
				capped++
				if d < MaxDelay/2 || d > MaxDelay*11/10 {
					t.Fatalf("run %d: %s into the outage a task waits %s, want at the cap (%s to %s)", run, age, d, MaxDelay/2, MaxDelay*11/10)
				}
			}
		})
		if capped < 50 || failures > 50*14 {
			t.Fatalf("run %d: %d failures, %d past 5 minutes: the tasks did not keep trying, or tried too often", run, failures, capped)
		}
		// GitHub answers: the next blip is a new outage.
		o.Succeed()
		if d := retryIn(&o, end); d > BaseDelay*11/10 {
			t.Fatalf("run %d: the first failure after a success waits %s, want at most %s", run, d, BaseDelay*11/10)
		}
		// No failure for twice the current wait: every task came back fine.
		failFor(&o, 50, end, 5*time.Minute, func(time.Duration, time.Duration) {})
		if d := retryIn(&o, end.Add(16*time.Minute)); d > BaseDelay*11/10 {
			t.Fatalf("run %d: a failure after a quiet spell waits %s, want at most %s", run, d, BaseDelay*11/10)
		}
	}
}

// A secondary limit that names no wait: at least a minute, whatever the
// number of tasks it stopped, then doubling per failed retry.
func TestOutageWithAFloorWaitsAMinuteThenDoubles(t *testing.T) {
	o := Outage{Base: time.Minute, Max: 30 * time.Minute, Floor: time.Minute}
	for i := 0; i < 50; i++ {
		if d := o.Fail(outageT0.Add(time.Duration(i) * time.Millisecond)); d != time.Minute {
			t.Fatalf("task %d stopped by one unnamed limit waits %s, want a minute", i+1, d)
		}
	}
	now := outageT0.Add(time.Minute) // the first retries
	for _, want := range []time.Duration{2, 4, 8, 16, 30, 30} {
		hi := want * time.Minute
		lo := max(hi/2, time.Minute)
		if d := o.Fail(now); d < lo || d > hi {
			t.Fatalf("a retry failing %s into the limit waits %s, want %s to %s", now.Sub(outageT0), d, lo, hi)
		}
		now = now.Add(lo) // the earliest retry of those it stopped
	}
}

// Each key is an outage of its own: one installation's limit neither
// lengthens another's waits nor ends with its success.
func TestOutagesPerKey(t *testing.T) {
	s := Outages[int64]{Base: time.Minute, Max: 30 * time.Minute, Floor: time.Minute}
	now := outageT0
	for range 5 {
		s.Fail(1, now)
		now = now.Add(s.Fail(1, now))
	}
	if d := s.Fail(2, now); d != time.Minute {
		t.Fatalf("installation 2's first limit waits %s after installation 1's fifth, want a minute", d)
	}
	s.Succeed(2)
	if d := s.Fail(1, now); d < 8*time.Minute {
		t.Fatalf("installation 1's wait %s after installation 2's success, want its own backoff kept", d)
	}
	s.Succeed(1)
	if d := s.Fail(1, now); d != time.Minute {
		t.Fatalf("after its success installation 1 waits %s, want a minute", d)
	}
}

func TestUntilRetriesUntilSuccessOrCancel(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	n := 0
	err := Until(t.Context(), log, "x", func(context.Context) error {
		if n++; n < 2 {
			return errors.New("down")
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("Until: %v after %d calls; want success on the second", err, n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Until(ctx, log, "x", func(context.Context) error { return errors.New("down") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Until after cancel: %v", err)
	}
}
