package apiclient_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
)

// A 429 (the API's answer to an address sending too many wrong tokens)
// is waited out like a 503, not taken for a refusal for good: once the
// throttle lifts the watch connects.
func TestWatchWaitsOutA429(t *testing.T) {
	l := ledger.New(redistest.Start(t).Client(), ledger.Options{Now: now})
	s := &apiServer{t: t, ledger: l}
	done := make(chan struct{})
	h, err := api.New(api.Config{Ledger: l, Token: token, Now: now, Done: done})
	if err != nil {
		t.Fatal(err)
	}
	var throttled atomic.Bool
	throttled.Store(true)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if throttled.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":"too many wrong bearer tokens from this address; retry in 1 s"}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(done); front.Close() })
	s.put(1)

	w := watchIn(t, client(t, strings.TrimPrefix(front.URL, "http://"), token), apiclient.WatchOptions{After: "0-0"})
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
	throttled.Store(false)
	if ev := w.next(t); ev.Type != apiwire.EventChange || ev.Change.Entry.Issue != 1 {
		t.Fatalf("event %+v, want the change of issue 1 after 0-0", ev)
	}
}
