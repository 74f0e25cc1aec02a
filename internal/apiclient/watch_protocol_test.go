package apiclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/apiclient"
)

// A watch without After starts after the newest entry at the call, so a
// change written while the API restarts, before any event reached the
// client, is given when it reconnects.
func TestWatchGivesChangesWrittenBeforeItsFirstEvent(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := startAPI(t, api.Config{Heartbeat: 100 * time.Millisecond, Registerer: reg})
	s.put(1)
	w := watchIn(t, client(t, s.addr, token), apiclient.WatchOptions{Repo: "hive/t27", IdleTimeout: time.Second})
	watchers := func() float64 {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "queen_api_watchers" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return 0
	}
	for deadline := time.Now().Add(10 * time.Second); watchers() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not connect within 10 s")
		}
	}
	s.stop()
	s.put(2) // while the API is down
	s.start()
	ev := w.next(t)
	if ids := s.auditIDs(); ev.ID != ids[1] || ev.Change == nil || ev.Change.Entry.Issue != 2 {
		t.Fatalf("first event %+v, want the change of issue 2 written during the restart (%s)", ev, ids[1])
	}
}

// A server that accepts the connection and never answers is silence like
// any other: the watch replaces the connection after IdleTimeout.
func TestWatchReplacesAConnectionThatNeverAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	w := watchIn(t, client(t, strings.TrimPrefix(srv.URL, "http://"), token),
		apiclient.WatchOptions{After: "0-0", IdleTimeout: 200 * time.Millisecond})
	select {
	case err := <-w.retries:
		if !strings.Contains(err.Error(), "no event or ping") {
			t.Fatalf("retry on %v, want the idle timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch still waits for the answer's headers after 10 s")
	}
}

const sseChange = "id: 1-0\nevent: change\ndata: {\"entry\":{\"id\":\"1-0\",\"repo\":\"hive/t27\",\"issue\":1,\"version\":1},\"claim\":null}\n\n"

// The time the callback takes is not the server's silence: a slow
// callback against a server that pings keeps its one connection.
func TestWatchDoesNotCountItsCallbackAsSilence(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "retry: 1000\n\n"+sseChange)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
				fmt.Fprint(w, ": ping\n\n")
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	c := client(t, strings.TrimPrefix(srv.URL, "http://"), token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var retries atomic.Int32
	given := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, apiclient.WatchOptions{After: "0-0", IdleTimeout: 200 * time.Millisecond,
			OnRetry: func(error, time.Duration) { retries.Add(1) }},
			func(apiclient.Event) error {
				time.Sleep(500 * time.Millisecond)
				given <- struct{}{}
				return nil
			})
	}()
	select {
	case <-given:
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	// Pings go on after the callback; a reconnection would replay the event.
	select {
	case <-given:
		t.Fatal("the event was given again: the watch reconnected")
	case <-time.After(400 * time.Millisecond):
	}
	cancel()
	<-done
	if n, r := conns.Load(), retries.Load(); n != 1 || r != 0 {
		t.Fatalf("%d connections and %d retries, want 1 and 0", n, r)
	}
}

// The cap on an event's size counts all its data lines, not each line.
func TestWatchRefusesAnEventPastItsCapInManyLines(t *testing.T) {
	mib := strings.Repeat("a", 1<<20)
	var ev strings.Builder
	ev.WriteString("id: 1-0\nevent: change\ndata: {\"entry\":{\"id\":\"1-0\",\"repo\":\"hive/t27\",\"issue\":1,\"version\":1},\"claim\":null\n")
	for i := range 9 {
		fmt.Fprintf(&ev, "data: ,\"pad%d\":\"%s\"\n", i, mib)
	}
	ev.WriteString("data: }\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ev.String())
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	w := watchIn(t, client(t, strings.TrimPrefix(srv.URL, "http://"), token), apiclient.WatchOptions{After: "0-0"})
	select {
	case e := <-w.events:
		t.Fatalf("an event of 9 MiB was given (%s)", e.ID)
	case err := <-w.retries:
		if !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", 8<<20)) {
			t.Fatalf("retry on %v, want the event's cap", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("neither an event nor a retry within 10 s")
	}
}
