package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/testkit"
)

func TestPacerSpacesWrites(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC))
	p := &pacer{every: time.Hour, now: clk.Now}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	if err := p.wait(context.Background()); err != nil {
		t.Fatalf("first write must not wait: %v", err)
	}
	// The second write within the interval has to wait: a cancelled
	// context shows it would block.
	if err := p.wait(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("second write in the same interval: %v, want it to wait", err)
	}
	// Both turns were booked; once the clock passes them a write goes at
	// once. (guard only bounds a broken pacer's wait.)
	guard, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	clk.Add(2 * time.Hour)
	if err := p.wait(guard); err != nil {
		t.Fatalf("write after the booked turns: %v", err)
	}
	if err := p.wait(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("the next write in that interval: %v, want it to wait", err)
	}

	free := &pacer{every: 0, now: clk.Now}
	for i := 0; i < 3; i++ {
		if err := free.wait(guard); err != nil {
			t.Fatalf("no spacing configured, write %d: %v", i, err)
		}
	}
}

func TestPushSlotsPerInstallation(t *testing.T) {
	w := New(Deps{PushesPerInstallation: 2})
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	r1, err := w.acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := w.acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.acquire(cancelled, 1); err == nil {
		t.Fatal("a third concurrent push of one installation was let through")
	}
	other, err := w.acquire(cancelled, 2)
	if err != nil {
		t.Fatalf("another installation's push was blocked: %v", err)
	}
	other()
	r1()
	r3, err := w.acquire(cancelled, 1)
	if err != nil {
		t.Fatalf("a released slot was not reusable: %v", err)
	}
	r2()
	r3()
}
