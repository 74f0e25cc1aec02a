package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/redistest"
)

func TestLeaseHoldsOneAtATimeAndEndsWhenLost(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	a := &Lease{RDB: rdb, Key: "k", Owner: "a", TTL: 300 * time.Millisecond}
	b := &Lease{RDB: rdb, Key: "k", Owner: "b", TTL: 300 * time.Millisecond}
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.Hold(ctx, func(ctx context.Context) error { close(started); <-finish; return ctx.Err() })
		done <- err
	}()
	<-started
	time.Sleep(a.TTL) // past one TTL: a's renewals keep it
	if held, err := b.Hold(ctx, func(context.Context) error { t.Error("b ran while a held the lease"); return nil }); held || err != nil {
		t.Fatalf("second holder: held %t err %v", held, err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatalf("a's run: %v", err)
	}
	if held, _ := b.Hold(ctx, func(context.Context) error { return nil }); !held {
		t.Fatal("released lease not taken")
	}
	// Someone else takes the key (a's lease ran out while it was stalled):
	// a's run is told by its context.
	_, err := a.Hold(ctx, func(ctx context.Context) error {
		rdb.Set(ctx, "k", "c", 0)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(10 * time.Second):
			return nil
		}
	})
	if err != errLeaseLost {
		t.Fatalf("lost lease: %v, want errLeaseLost", err)
	}
	if v, _ := rdb.Get(ctx, "k").Result(); v != "c" {
		t.Fatalf("a released a lease that was no longer its own (key now %q)", v)
	}
}
