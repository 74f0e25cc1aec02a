package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/api/openapicheck"
	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
)

// apiServer is the API on a fixed address that can be stopped and started
// again, as a webhook restart does.
type apiServer struct {
	t      *testing.T
	addr   string
	ledger *ledger.Ledger
	rdb    *redis.Client
	cfg    api.Config
	srv    *http.Server
	done   chan struct{}
}

func startAPI(t *testing.T, cfg api.Config) *apiServer {
	t.Helper()
	rdb := redistest.Start(t).Client()
	l := ledger.New(rdb, ledger.Options{Now: now})
	cfg.Ledger, cfg.Token, cfg.Now = l, token, now
	s := &apiServer{t: t, ledger: l, rdb: rdb, cfg: cfg}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *apiServer) start() {
	s.t.Helper()
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.done = make(chan struct{})
	cfg := s.cfg
	cfg.Done = s.done
	h, err := api.New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	// Every exchange held to docs/openapi.yaml, the 503 of the cap and the
	// reset frames included.
	s.srv = &http.Server{Handler: openapicheck.Handler(h, func(err error) { s.t.Errorf("openapi: %v", err) })}
	go func() { _ = s.srv.Serve(ln) }()
}

func (s *apiServer) stop() {
	if s.srv == nil {
		return
	}
	close(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.t.Errorf("shutdown: %v", err)
	}
	s.srv = nil
}

func (s *apiServer) put(issue int64) {
	s.t.Helper()
	if _, err := s.ledger.Upsert(context.Background(), "hive/t27", issue, patch(s.t, `{"started": true}`), audit.API("test")); err != nil {
		s.t.Fatal(err)
	}
}

func (s *apiServer) auditIDs() []string {
	s.t.Helper()
	r, err := s.ledger.AuditSince(context.Background(), ledger.AuditFilter{Limit: 1000})
	if err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for _, e := range r.Entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// watching runs Watch in the background, handing its events to a channel.
type watching struct {
	events  chan apiclient.Event
	retries chan error
	done    chan error
	cancel  context.CancelFunc
}

func watchIn(t *testing.T, c *apiclient.Client, o apiclient.WatchOptions) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{events: make(chan apiclient.Event, 1000), retries: make(chan error, 100), done: make(chan error, 1), cancel: cancel}
	o.OnRetry = func(err error, _ time.Duration) {
		select {
		case w.retries <- err:
		default:
		}
	}
	go func() {
		w.done <- c.Watch(ctx, o, func(ev apiclient.Event) error { w.events <- ev; return nil })
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

func (w *watching) next(t *testing.T) apiclient.Event {
	t.Helper()
	select {
	case ev := <-w.events:
		return ev
	case err := <-w.done:
		t.Fatalf("Watch returned %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15 s")
	}
	return apiclient.Event{}
}

func client(t *testing.T, addr, tok string) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New("http://"+addr, tok, &http.Client{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Watch gives every change once, in order, across a restart of the API:
// it reconnects with the last change's id and the restarted server sends
// what was written while it was down. The client's own 2 s timeout does
// not cut the stream.
func TestWatchResumesAcrossARestartWithNothingLostOrTwice(t *testing.T) {
	s := startAPI(t, api.Config{Heartbeat: 200 * time.Millisecond})
	w := watchIn(t, client(t, s.addr, token), apiclient.WatchOptions{Repo: "hive/t27"})
	time.Sleep(100 * time.Millisecond) // connected (no replay: the stream starts now)
	for i := int64(1); i <= 5; i++ {
		s.put(i)
	}
	var got []string
	for range 5 {
		ev := w.next(t)
		if ev.Type != apiwire.EventChange || ev.Change.Entry.ID != ev.ID || ev.Change.Claim == nil {
			t.Fatalf("event %+v, want a change with its claim", ev)
		}
		got = append(got, ev.ID)
	}
	time.Sleep(2500 * time.Millisecond) // past the client's own timeout
	s.stop()
	for i := int64(6); i <= 10; i++ {
		s.put(i) // while the API is down
	}
	select {
	case err := <-w.retries:
		if err == nil {
			t.Fatal("OnRetry without a reason")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not notice the server going")
	}
	s.start()
	for i := int64(11); i <= 12; i++ {
		s.put(i)
	}
	for range 7 {
		got = append(got, w.next(t).ID)
	}
	if want := s.auditIDs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("watched %v\nwant the audit's %v", got, want)
	}
	select {
	case ev := <-w.events:
		t.Fatalf("an extra event %+v", ev)
	case <-time.After(300 * time.Millisecond):
	}
}

// A refusal that cannot pass by waiting ends Watch with the API's error:
// a wrong token (never in the message), a bad resume id naming its field.
func TestWatchReturnsPermanentRefusals(t *testing.T) {
	s := startAPI(t, api.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fn := func(apiclient.Event) error { return nil }
	err := client(t, s.addr, "wrong-token-1234567").Watch(ctx, apiclient.WatchOptions{}, fn)
	var ae *apiclient.Error
	if !errors.As(err, &ae) || ae.Status != 401 || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("wrong token: %v, want the 401 without the token", err)
	}
	err = client(t, s.addr, token).Watch(ctx, apiclient.WatchOptions{After: "yesterday"}, fn)
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Field != apiwire.LastEventIDHeader {
		t.Fatalf("bad after: %v, want a 400 naming Last-Event-ID", err)
	}
	if err := client(t, s.addr, token).Watch(ctx, apiclient.WatchOptions{Repo: "nope"}, fn); err == nil {
		t.Fatal("a bad repo was sent")
	}
}

// Past the watcher cap the 503 is retried until a place frees; a resume
// id the stream no longer holds is a reset event; fn's error ends Watch.
func TestWatchWaitsOutTheCapAndPassesResets(t *testing.T) {
	s := startAPI(t, api.Config{MaxWatchers: 1})
	s.put(1)
	s.put(2)
	first := watchIn(t, client(t, s.addr, token), apiclient.WatchOptions{})
	time.Sleep(100 * time.Millisecond)
	second := watchIn(t, client(t, s.addr, token), apiclient.WatchOptions{After: "1-0"})
	select {
	case err := <-second.retries:
		var ae *apiclient.Error
		if !errors.As(err, &ae) || ae.Status != 503 {
			t.Fatalf("retry on %v, want the 503 of the cap", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second watcher was not refused")
	}
	first.cancel()
	ev := second.next(t)
	// The reset's id, the newest entry, is where a reconnect resumes.
	if ids := s.auditIDs(); ev.Type != apiwire.EventReset || ev.Reset.After != "1-0" || ev.Reset.Oldest != ids[0] || ev.ID != ids[len(ids)-1] {
		t.Fatalf("event %+v, want a reset after 1-0 with the newest id %s", ev, ids[len(ids)-1])
	}

	stop := errors.New("enough")
	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	second.cancel()
	<-second.done
	second.done <- nil // for the cleanup
	err := client(t, s.addr, token).Watch(ctx, apiclient.WatchOptions{After: s.auditIDs()[0]}, func(apiclient.Event) error {
		var err error
		once.Do(func() { err = stop })
		return err
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Watch returned %v, want fn's error", err)
	}
}

// A reset's id is where the stream's live changes start: a reconnect before
// the next change resumes there, and is not reset again.
func TestWatchResumesAfterAResetsID(t *testing.T) {
	s := startAPI(t, api.Config{})
	for i := int64(1); i <= 3; i++ {
		s.put(i)
	}
	if err := s.rdb.XTrimMaxLen(context.Background(), "queen:audit", 1).Err(); err != nil {
		t.Fatal(err)
	}
	// No heartbeat comes within 300 ms: the silent stream is dropped and
	// opened again.
	w := watchIn(t, client(t, s.addr, token), apiclient.WatchOptions{After: "1-0", IdleTimeout: 300 * time.Millisecond})
	ev := w.next(t)
	ids := s.auditIDs()
	if ev.Type != apiwire.EventReset || ev.ID != ids[len(ids)-1] {
		t.Fatalf("event %+v, want a reset with the newest id %s", ev, ids[len(ids)-1])
	}
	for range 2 {
		select {
		case <-w.retries:
		case <-time.After(10 * time.Second):
			t.Fatal("the silent stream was not opened again")
		}
	}
	s.put(4)
	if ev := w.next(t); ev.Type != apiwire.EventChange || ev.Change.Entry.Issue != 4 {
		t.Fatalf("after reconnecting: %+v, want the change of #4 and no second reset", ev)
	}
}

// A stream the server accepts and ends at once, giving no event, is asked
// again with a growing wait, not every quarter second.
func TestWatchBacksOffAStreamThatEndsAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("retry: 1000\n\n"))
	}))
	defer srv.Close()
	c, err := apiclient.New(srv.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waits []time.Duration
	err = c.Watch(ctx, apiclient.WatchOptions{OnRetry: func(_ error, wait time.Duration) {
		if waits = append(waits, wait); len(waits) == 5 {
			cancel()
		}
	}}, func(apiclient.Event) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch: %v", err)
	}
	// 250 ms doubling, each at least half of its step: the fifth is 4 s's.
	if waits[4] < 2*time.Second {
		t.Fatalf("waits %v: the backoff did not grow", waits)
	}
}
