package apiclient_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
)

// A 429 (this address sent too many wrong tokens) is waited out like a
// 503, not taken for a refusal for good: once the API's wait is over the
// watch connects.
func TestWatchWaitsOutA429(t *testing.T) {
	var skew atomic.Int64
	l := ledger.New(redistest.Start(t).Client(), ledger.Options{Now: now})
	clock := func() time.Time { return now().Add(time.Duration(skew.Load())) }
	s := &apiServer{t: t, ledger: l, cfg: api.Config{Ledger: l, Token: token, Now: clock}}
	s.start()
	t.Cleanup(s.stop)
	s.put(1)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fn := func(apiclient.Event) error { return nil }
	for range api.AuthFailures {
		var ae *apiclient.Error
		if err := client(t, s.addr, "wrong-token-1234567").Watch(ctx, apiclient.WatchOptions{}, fn); !errors.As(err, &ae) || ae.Status != 401 {
			t.Fatalf("wrong token: %v, want a 401", err)
		}
	}

	w := watchIn(t, client(t, s.addr, token), apiclient.WatchOptions{After: "0-0"})
	select {
	case err := <-w.retries:
		var ae *apiclient.Error
		if !errors.As(err, &ae) || ae.Status != 429 {
			t.Fatalf("retry on %v, want the 429 of the throttle", err)
		}
	case err := <-w.done:
		w.done <- err // for the cleanup
		t.Fatalf("Watch returned %v, want the 429 waited out", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the throttled watcher was not refused")
	}
	skew.Store(int64(api.AuthWait + time.Second)) // the throttle's wait is over
	if ev := w.next(t); ev.Type != apiwire.EventReset {
		t.Fatalf("event %+v, want the reset of a resume from 0-0", ev)
	}
}
