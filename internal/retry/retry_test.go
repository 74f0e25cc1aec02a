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

func TestOutageBacksOffAcrossTasksAndResets(t *testing.T) {
	var o Outage
	now := time.Now()
	var last time.Duration
	for i := 0; i < 12; i++ {
		d := o.Fail(now)
		lo := BaseDelay << i / 2
		if lo > MaxDelay/2 {
			lo = MaxDelay / 2
		}
		if d < lo {
			t.Fatalf("failure %d waited %s, want at least %s", i+1, d, lo)
		}
		last = d
	}
	if last < MaxDelay/2 {
		t.Fatalf("a long outage should reach the cap, got %s", last)
	}
	o.Succeed()
	if d := o.Fail(now); d > BaseDelay {
		t.Fatalf("after recovery the first failure waited %s, want at most %s", d, BaseDelay)
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
