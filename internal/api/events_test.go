package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// watchEnv is the claims API with its watch stream over a private Redis.
type watchEnv struct {
	*env
	srv  *httptest.Server
	done chan struct{}
}

type watchOpts struct {
	maxWatchers int
	heartbeat   time.Duration
	buffer      int
	aof         bool // Redis keeps its data across a restart
	// server tunes the http.Server before it starts (timeouts, listener).
	server func(*httptest.Server)
}

func newWatchEnv(t *testing.T, o watchOpts) *watchEnv {
	t.Helper()
	srv := redistest.StartWith(t, redistest.Options{AppendOnly: o.aof})
	c := testkit.NewClock(t0)
	rdb := srv.Client()
	e := &env{redis: srv, ledger: ledger.New(rdb, ledger.Options{Now: c.Now}), clock: c, reg: prometheus.NewRegistry(),
		logs: &testkit.Buffer{}}
	w := &watchEnv{env: e, done: make(chan struct{})}
	h, err := api.New(api.Config{Ledger: e.ledger, Token: token, Now: c.Now, Registerer: e.reg,
		Logger:      slog.New(slog.NewJSONHandler(e.logs, nil)),
		MaxWatchers: o.maxWatchers, Heartbeat: o.heartbeat, WatchBuffer: o.buffer, Done: w.done})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewUnstartedServer(checked(t, h)) // each stream held to docs/openapi.yaml
	if o.server != nil {
		o.server(w.srv)
	}
	w.srv.Start()
	t.Cleanup(func() {
		w.shutdown()
		w.srv.Close()
	})
	e.url = w.srv.URL
	return w
}

var shutdownOnce sync.Map

func (w *watchEnv) shutdown() {
	if _, done := shutdownOnce.LoadOrStore(w, true); !done {
		close(w.done)
	}
}

// sseEvent is one block of the stream: its fields, or a comment.
type sseEvent struct {
	ID, Event, Data, Retry, Comment string
}

// watch is one open stream read by a goroutine of its own.
type watch struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// watch opens GET /v1/events+query (hdr pairs as in env.req) and checks
// the 200, its headers and the retry line it begins with.
func (e *env) watch(t *testing.T, query string, hdr ...string) *watch {
	t.Helper()
	resp, cancel := e.openEvents(t, query, hdr...)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("GET /v1/events%s: status %d: %s", query, resp.StatusCode, b)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != v {
			t.Fatalf("%s %q, want %q", k, got, v)
		}
	}
	w := &watch{resp: resp, events: make(chan sseEvent, 10000), cancel: cancel}
	go w.read(bufio.NewReader(resp.Body))
	t.Cleanup(w.close)
	if first := w.next(t); first != (sseEvent{Retry: "1000"}) {
		t.Fatalf("first block %+v, want retry: 1000", first)
	}
	return w
}

func (e *env) openEvents(t *testing.T, query string, hdr ...string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := http.DefaultClient.Do(newRequest(t, ctx, e.url, "GET", "/v1/events"+query, "", hdr...))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return resp, func() { cancel(); resp.Body.Close() }
}

func (w *watch) close() { w.cancel(); w.resp.Body.Close() }

func (w *watch) read(r *bufio.Reader) {
	defer close(w.events)
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if ev != (sseEvent{}) {
				w.events <- ev
			}
			ev = sseEvent{}
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "":
			ev.Comment = value
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			ev.Data = value
		case "retry":
			ev.Retry = value
		default:
			ev.Comment = "unknown field " + name
		}
	}
}

// next is the next block; the stream ending or 10 s of silence fail.
func (w *watch) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-w.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sseEvent{}
}

// nextChange skips heartbeats.
func (w *watch) nextChange(t *testing.T) sseEvent {
	t.Helper()
	for {
		if ev := w.next(t); ev.Comment != "ping" {
			return ev
		}
	}
}

// quiet fails on any event but a heartbeat within d.
func (w *watch) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-w.events:
			if ok && ev.Comment == "ping" {
				continue
			}
			t.Fatalf("unexpected %+v (open %t)", ev, ok)
		case <-deadline:
			return
		}
	}
}

// ended waits for the stream to end.
func (w *watch) ended(t *testing.T) []sseEvent {
	t.Helper()
	var got []sseEvent
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatal("the stream did not end within 10 s")
		}
	}
}

type changeData struct {
	Entry      map[string]any `json:"entry"`
	Claim      map[string]any `json:"claim"`
	ClaimError string         `json:"claim_error"`
}

func (ev sseEvent) change(t *testing.T) changeData {
	t.Helper()
	if ev.Event != "change" || ev.ID == "" {
		t.Fatalf("want a change event with an id, got %+v", ev)
	}
	var d changeData
	dec := json.NewDecoder(strings.NewReader(ev.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("change data: %v: %s", err, ev.Data)
	}
	if d.Entry["id"] != ev.ID {
		t.Fatalf("entry id %v, event id %s", d.Entry["id"], ev.ID)
	}
	return d
}

// auditEntries is GET /v1/audit's entries by id.
func (e *env) auditEntries(t *testing.T) (map[string]map[string]any, []string) {
	t.Helper()
	var list struct {
		Entries []map[string]any `json:"entries"`
	}
	e.req(t, "GET", "/v1/audit?limit=1000", "").decode(t, &list)
	out := map[string]map[string]any{}
	var ids []string
	for _, en := range list.Entries {
		id := en["id"].(string)
		out[id] = en
		ids = append(ids, id)
	}
	return out, ids
}

// Every kind of ledger write reaches a watcher as one change event: the
// audit entry as GET /v1/audit serves it and the claim view as GET
// .../claims/{issue} serves it (null once deleted), in order.
func TestEventsCarryEveryChangeWithItsAuditIDAndClaimView(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	ctx := t.Context()
	w := e.watch(t, "")
	type step struct {
		what  string
		issue int64
		do    func()
	}
	steps := []step{
		{"upsert", 9300, func() { e.put(t, "hive/t27", 9300, accepted) }},
		{"prs", 9300, func() {
			// A closed PR of this attempt: accept_claim's shadow free.
			read := dispatch.PRState{Read: true, Listed: []dispatch.PR{{Number: 24, State: "closed",
				HeadSHA: strings.Repeat("1", 40), CreatedAt: time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)}}}
			if _, err := e.ledger.RecordPRs(ctx, "hive/t27", 9300, read, audit.Webhook("d-24")); err != nil {
				t.Fatal(err)
			}
		}},
		{"free", 9300, func() {
			e.req(t, "POST", path("hive/t27", 9300, "claims")+"/free", `{"reason": "seen by hand"}`).mustCode(t, 200, "")
		}},
		{"upsert", 9301, func() { e.put(t, "hive/t27", 9301, atCeiling) }},
		{"keep", 9301, func() {
			e.req(t, "POST", path("hive/t27", 9301, "claims")+"/keep", `{"reason": "still needed"}`).mustCode(t, 200, "")
		}},
		{"export", 9300, func() {
			st := dispatch.ExportState{State: "refused", Refusal: "workflow: touches .github/workflows/ci.yml", Attempts: 1}
			rec := e.get(t, "hive/t27", 9300)
			if _, err := e.ledger.RecordExport(ctx, "hive/t27", 9300, st, rec.Version, audit.Export("t")); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete", 9301, func() { e.req(t, "DELETE", path("hive/t27", 9301, "dispatches"), "").mustCode(t, 200, "") }},
	}
	var decisions []string
	for _, s := range steps {
		s.do()
		ev := w.nextChange(t)
		d := ev.change(t)
		entries, ids := e.auditEntries(t)
		if last := ids[len(ids)-1]; ev.ID != last {
			t.Fatalf("%s: event id %s, want the newest audit id %s", s.what, ev.ID, last)
		}
		if !reflect.DeepEqual(d.Entry, entries[ev.ID]) {
			t.Fatalf("%s: entry\n%v\nwant GET /v1/audit's\n%v", s.what, d.Entry, entries[ev.ID])
		}
		if d.Entry["issue"] != float64(s.issue) {
			t.Fatalf("%s: entry of issue %v, want %d", s.what, d.Entry["issue"], s.issue)
		}
		if s.what == "delete" {
			if d.Claim != nil {
				t.Fatalf("delete: claim %v, want null", d.Claim)
			}
			e.req(t, "GET", path("hive/t27", 9301, "claims"), "").mustCode(t, 404, "")
		} else {
			want := e.req(t, "GET", path("hive/t27", int(s.issue), "claims"), "").mustCode(t, 200, "")
			if !reflect.DeepEqual(d.Claim, want) {
				t.Fatalf("%s: claim\n%v\nwant GET's\n%v", s.what, d.Claim, want)
			}
		}
		dec, _ := d.Entry["decision"].(string)
		decisions = append(decisions, s.what+":"+dec)
	}
	want := []string{"upsert:", "prs:would_free", "free:free", "upsert:", "keep:keep", "export:refused", "delete:"}
	if !reflect.DeepEqual(decisions, want) {
		t.Fatalf("decisions %v, want %v", decisions, want)
	}
	w.quiet(t, 200*time.Millisecond)
	if n := (metric(t, e.reg, "queen_api_events_sent_total")); n != float64(len(steps)) {
		t.Fatalf("queen_api_events_sent_total %v, want %d", n, len(steps))
	}
	if n := (metric(t, e.reg, "queen_api_watchers")); n != 1 {
		t.Fatalf("queen_api_watchers %v, want 1", n)
	}
}

// metric is the value of one registered gauge or counter.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// ?repo= watches one repository, compared case-insensitively; the
// changes of others are not sent.
func TestEventsWatchOneRepository(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	w := e.watch(t, "?repo=Hive/T27")
	all := e.watch(t, "")
	e.put(t, "acme/web", 1, working)
	e.put(t, "hive/t27", 2, working)
	e.put(t, "acme/web", 3, working)
	e.put(t, "HIVE/t27", 4, working)
	var got, gotAll []string
	for range 2 {
		d := w.nextChange(t).change(t)
		got = append(got, fmt.Sprintf("%v#%v", d.Entry["repo"], d.Entry["issue"]))
	}
	for range 4 {
		d := all.nextChange(t).change(t)
		gotAll = append(gotAll, fmt.Sprintf("%v#%v", d.Entry["repo"], d.Entry["issue"]))
	}
	if want := []string{"hive/t27#2", "HIVE/t27#4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("repo watcher got %v, want %v", got, want)
	}
	if want := []string{"acme/web#1", "hive/t27#2", "acme/web#3", "HIVE/t27#4"}; !reflect.DeepEqual(gotAll, want) {
		t.Fatalf("watcher of all got %v, want %v", gotAll, want)
	}
	w.quiet(t, 200*time.Millisecond)
}

// Resuming after any id the stream holds, by Last-Event-ID or ?after=,
// gives exactly the later entries once, in order, then the live ones.
func TestEventsResumeAfterAnyIDExactlyOnce(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	for i := 1; i <= 12; i++ {
		repo := "hive/t27"
		if i%3 == 0 {
			repo = "acme/web"
		}
		e.put(t, repo, 100+i, working)
	}
	_, ids := e.auditEntries(t)
	if len(ids) != 12 {
		t.Fatalf("%d audit entries, want 12", len(ids))
	}
	for _, from := range []int{0, 1, 5, 11, 12} {
		for _, how := range []string{"header", "query"} {
			t.Run(fmt.Sprintf("%s after %d", how, from), func(t *testing.T) {
				_, ids := e.auditEntries(t) // the earlier runs' live writes are later entries
				after := "0-0"
				if from > 0 {
					after = ids[from-1]
				}
				var w *watch
				if how == "header" {
					w = e.watch(t, "", "Last-Event-ID", after)
				} else {
					w = e.watch(t, "?after="+after)
				}
				for _, want := range ids[from:] {
					if ev := w.nextChange(t); ev.ID != want {
						t.Fatalf("got %s, want %s", ev.ID, want)
					}
				}
				w.quiet(t, 100*time.Millisecond)
				issue := 200 + len(ids)
				e.put(t, "hive/t27", issue, working) // then live, once
				d := w.nextChange(t).change(t)
				if d.Entry["issue"] != float64(issue) {
					t.Fatalf("live change of issue %v, want %d", d.Entry["issue"], issue)
				}
				w.quiet(t, 100*time.Millisecond)
			})
		}
	}
	// Last-Event-ID wins over ?after=; ?repo= filters the backlog too.
	_, ids = e.auditEntries(t)
	w := e.watch(t, "?repo=acme/web&after="+ids[0], "Last-Event-ID", ids[5])
	var got []string
	for {
		d := w.nextChange(t).change(t)
		if d.Entry["repo"] != "acme/web" {
			t.Fatalf("entry of %v on a watch of acme/web", d.Entry["repo"])
		}
		got = append(got, fmt.Sprint(d.Entry["issue"]))
		if len(got) == 2 {
			break
		}
	}
	if want := []string{"109", "112"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed acme/web after the 6th entry: issues %v, want %v", got, want)
	}
	w.quiet(t, 100*time.Millisecond)
}

// Changes written while watchers read their backlogs come once each, none
// skipped at the switch from the backlog to live: five watchers resume from
// five points of a 600-entry backlog while a writer goes on, beside one
// that was already watching (so the stream's reader runs and hands them
// batches that overlap their backlogs).
func TestEventsResumeWhileWritingHasNoGapOrDuplicate(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	ctx := t.Context()
	var body map[string]json.RawMessage
	_ = json.Unmarshal([]byte(working), &body)
	write := func(issue int64) error {
		_, err := e.ledger.Upsert(ctx, "hive/t27", issue, body, audit.API("test"))
		return err
	}
	for i := int64(1); i <= 600; i++ {
		if err := write(i); err != nil {
			t.Fatal(err)
		}
	}
	_, ids := e.auditEntries(t)
	early := e.watch(t, "")
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		for i := int64(1000); ; i++ {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			if err := write(i); err != nil {
				wrote <- err
				return
			}
		}
	}()
	froms := []int{10, 100, 300, 500, 590}
	ws := make([]*watch, len(froms))
	for i, from := range froms {
		ws[i] = e.watch(t, "", "Last-Event-ID", ids[from-1])
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	var all []string
	for last := (ledger.AuditID{}); ; {
		rd, err := e.ledger.AuditAfter(ctx, last, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range rd.Entries {
			all = append(all, en.ID)
		}
		if rd.Messages < 1000 {
			break
		}
		last = rd.Last
	}
	if all[599] != ids[599] {
		t.Fatal("the audit's first 600 entries moved")
	}
	check := func(name string, w *watch, want []string) {
		t.Helper()
		for i, id := range want {
			ev := w.nextChange(t)
			if ev.ID != id {
				t.Fatalf("%s: change %d is %s, want %s (a gap or a repeat)", name, i, ev.ID, id)
			}
		}
		w.quiet(t, 100*time.Millisecond)
	}
	for i, from := range froms {
		check(fmt.Sprintf("resumed after entry %d", from), ws[i], all[from:])
	}
	// The early watcher got every live change once, from its connection on.
	first := early.nextChange(t)
	at := slices.Index(all, first.ID)
	if at < 600 {
		t.Fatalf("the early watcher's first change %s is not a live one", first.ID)
	}
	check("the early watcher", early, all[at+1:])
	t.Logf("%d changes written while resuming", len(all)-600)
}

// A resume id older than the oldest entry the stream holds gets one reset
// event first, whose id is the newest entry, then the live changes; a
// reconnect with the reset's id before any change is not reset again.
func TestEventsResetWhenTheStreamWasTrimmed(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	for i := 1; i <= 5; i++ {
		e.put(t, "hive/t27", i, working)
	}
	_, ids := e.auditEntries(t)
	if err := e.redis.Client().XTrimMaxLen(t.Context(), "queen:audit", 2).Err(); err != nil {
		t.Fatal(err)
	}
	w := e.watch(t, "", "Last-Event-ID", ids[1])
	ev := w.next(t)
	if ev.Event != "reset" || ev.ID != ids[4] {
		t.Fatalf("first event %+v, want a reset with the newest id %s", ev, ids[4])
	}
	var r map[string]string
	if err := json.Unmarshal([]byte(ev.Data), &r); err != nil {
		t.Fatal(err)
	}
	again := e.watch(t, "", "Last-Event-ID", ev.ID)
	want := map[string]string{"after": ids[1], "oldest": ids[3],
		"reason": "the audit stream no longer holds entries after this id; re-read GET /v1/claims"}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("reset %v, want %v", r, want)
	}
	w.quiet(t, 100*time.Millisecond) // no backlog after a reset
	e.put(t, "hive/t27", 6, working)
	for _, w := range []*watch{w, again} {
		if d := w.nextChange(t).change(t); d.Entry["issue"] != 6.0 {
			t.Fatalf("after the reset: issue %v, want 6", d.Entry["issue"])
		}
	}
	// An id the stream still holds resumes without a reset.
	w2 := e.watch(t, "?after="+ids[3])
	if ev := w2.nextChange(t); ev.Event != "change" || ev.ID != ids[4] {
		t.Fatalf("after the oldest held: %+v, want change %s", ev, ids[4])
	}
	if n := (metric(t, e.reg, "queen_api_event_resets_total")); n != 1 {
		t.Fatalf("queen_api_event_resets_total %v, want 1", n)
	}
}

// A silence is broken by ": ping" comments.
func TestEventsHeartbeatInSilence(t *testing.T) {
	e := newWatchEnv(t, watchOpts{heartbeat: 50 * time.Millisecond})
	w := e.watch(t, "")
	for range 3 {
		if ev := w.next(t); ev != (sseEvent{Comment: "ping"}) {
			t.Fatalf("%+v, want a ping", ev)
		}
	}
}

// The token is checked before anything else; a bad resume id or parameter
// is a 400 naming it.
func TestEventsRefuseWithoutTokenAndBadParameters(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	resp, cancel := e.openEvents(t, "?after=bogus", "Authorization", "")
	b, _ := io.ReadAll(resp.Body)
	cancel()
	if resp.StatusCode != 401 || strings.Contains(string(b), "after") {
		t.Fatalf("without a token: %d %s, want 401 before the parameters are read", resp.StatusCode, b)
	}
	for _, c := range []struct {
		query string
		hdr   []string
		field string
	}{
		{"?after=bogus", nil, "after"},
		{"?after=", nil, "after"},
		{"?after=12-x", nil, "after"},
		{"?after=-1-0", nil, "after"},
		{"", []string{"Last-Event-ID", "yesterday"}, "Last-Event-ID"},
		{"?after=1-0", []string{"Last-Event-ID", "1"}, "Last-Event-ID"},
		{"?repo=nope", nil, "repo"},
		{"?since=1h", nil, "since"},
	} {
		r := e.req(t, "GET", "/v1/events"+c.query, "", c.hdr...)
		r.mustCode(t, 400, c.field)
	}
	if n := (metric(t, e.reg, "queen_api_watchers")); n != 0 {
		t.Fatalf("queen_api_watchers %v after refusals, want 0", n)
	}
}

// Watchers have a cap of their own: with 100 connected (more than the 64
// requests in flight) ordinary requests still answer, and the 101st
// watcher is refused with 503 and Retry-After.
func TestEventsWatcherCapApartFromRequestsInFlight(t *testing.T) {
	e := newWatchEnv(t, watchOpts{maxWatchers: 100})
	e.put(t, "hive/t27", 1, working)
	for range 100 {
		e.watch(t, "")
	}
	r := e.req(t, "GET", "/v1/events", "")
	r.mustCode(t, 503, "")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	var wg sync.WaitGroup
	codes := make(chan int, api.MaxInFlight)
	for range api.MaxInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", e.url+"/v1/claims", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Fatalf("an ordinary GET with 100 watchers connected: %d, want 200", c)
		}
	}
	if n := (metric(t, e.reg, "queen_api_watchers")); n != 100 {
		t.Fatalf("queen_api_watchers %v, want 100", n)
	}
}

// smallBuffers makes the server's socket buffers small, so a client that
// does not read blocks the server's writes soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A watcher that stops reading is disconnected once its buffer is full;
// the others get every change meanwhile, and the slow one, resuming with
// its Last-Event-ID, gets the rest: nothing lost.
func TestEventsSlowWatcherIsDisconnectedWithoutHoldingUpOthers(t *testing.T) {
	e := newWatchEnv(t, watchOpts{buffer: 2, server: func(s *httptest.Server) { s.Listener = smallBuffers{s.Listener} }})
	// The slow watcher's socket takes a few KiB before the server blocks.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	slowClient := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	req, _ := http.NewRequest("GET", e.url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	slow, err := slowClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Body.Close()
	fast := e.watch(t, "")
	const n = 300
	detail := strings.Repeat("a long owned path/", 20)
	var ids []string
	for i := 1; i <= n; i++ {
		e.put(t, "hive/t27", i, `{"started": true, "owned_paths": ["`+detail+fmt.Sprint(i)+`"]}`)
		ev := fast.nextChange(t) // the fast watcher keeps up throughout
		ids = append(ids, ev.ID)
	}
	// The slow watcher reads what reached it, then the end of the stream.
	w := &watch{resp: slow, events: make(chan sseEvent, n+10), cancel: func() {}}
	go w.read(bufio.NewReader(slow.Body))
	got := w.ended(t)
	if m := metric(t, e.reg, "queen_api_watchers_slow_disconnected_total"); m != 1 {
		t.Fatalf("queen_api_watchers_slow_disconnected_total %v, want 1", m)
	}
	var last string
	var seen []string
	for _, ev := range got {
		if ev.Event == "change" {
			seen = append(seen, ev.ID)
			last = ev.ID
		}
	}
	if len(seen) == 0 || len(seen) >= n {
		t.Fatalf("the slow watcher got %d of %d before it was cut off", len(seen), n)
	}
	if !reflect.DeepEqual(seen, ids[:len(seen)]) {
		t.Fatal("the slow watcher's changes are not the stream's first ones in order")
	}
	again := e.watch(t, "", "Last-Event-ID", last)
	for _, want := range ids[len(seen):] {
		if ev := again.nextChange(t); ev.ID != want {
			t.Fatalf("resumed: %s, want %s", ev.ID, want)
		}
	}
	again.quiet(t, 100*time.Millisecond)
	fast.quiet(t, 10*time.Millisecond)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// Shutdown (Config.Done) ends every stream, so a graceful shutdown does
// not wait for watchers that never leave.
func TestEventsEndOnShutdown(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	ws := []*watch{e.watch(t, ""), e.watch(t, "?repo=hive/t27")}
	e.shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("graceful shutdown with watchers: %v", err)
	}
	for _, w := range ws {
		w.ended(t)
	}
}

// The server's read and write timeouts do not end a stream.
func TestEventsOutliveTheServerTimeouts(t *testing.T) {
	e := newWatchEnv(t, watchOpts{heartbeat: time.Hour, server: func(s *httptest.Server) {
		s.Config.ReadTimeout, s.Config.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond
	}})
	w := e.watch(t, "")
	time.Sleep(700 * time.Millisecond)
	e.put(t, "hive/t27", 1, working)
	if d := w.nextChange(t).change(t); d.Entry["issue"] != 1.0 {
		t.Fatalf("issue %v, want 1", d.Entry["issue"])
	}
}

// While Redis answers nothing, or is down, the watchers get no event
// (only pings) and the reader retries; once Redis is back the changes flow
// on from where they stopped, none lost or repeated.
func TestEventsWaitOutARedisOutage(t *testing.T) {
	e := newWatchEnv(t, watchOpts{heartbeat: 100 * time.Millisecond, aof: true})
	w := e.watch(t, "")
	e.put(t, "hive/t27", 1, working)
	first := w.nextChange(t)
	e.redis.Pause()
	w.quiet(t, 1500*time.Millisecond)
	e.redis.Resume()
	e.put(t, "hive/t27", 2, working)
	second := w.nextChange(t)
	e.redis.Stop()
	w.quiet(t, 1500*time.Millisecond)
	if !strings.Contains(e.logs.String(), "reading the audit stream failed; retrying") {
		t.Fatalf("the outage is not in the log:\n%s", e.logs)
	}
	e.redis.Restart()
	e.put(t, "hive/t27", 3, working)
	e.put(t, "hive/t27", 4, working)
	_, ids := e.auditEntries(t)
	if len(ids) != 4 || ids[0] != first.ID || ids[1] != second.ID {
		t.Fatalf("audit %v, first %s second %s", ids, first.ID, second.ID)
	}
	for _, want := range ids[2:] {
		if ev := w.nextChange(t); ev.ID != want {
			t.Fatalf("after the outage: %s, want %s", ev.ID, want)
		}
	}
	w.quiet(t, 200*time.Millisecond)
}

// A row whose stored view does not decode (GET answers 500) is sent with
// claim_error, live and in a resumed backlog, and the stream goes on: one
// bad row never holds every watcher. Checked: with render retrying such a
// row as it retries an outage, the live watcher got no event for row 2.
func TestEventsSendAnUnreadableRowWithClaimErrorAndGoOn(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	ctx := t.Context()
	rdb := e.redis.Client()
	e.put(t, "hive/t27", 100, working)
	e.put(t, "hive/t27", 1, working)
	_, ids := e.auditEntries(t)
	anchor := ids[0]
	w := e.watch(t, "")

	// Break row 1, then append a copy of its last entry as a new change.
	if err := rdb.HSet(ctx, "queen:{hive/t27}:row:1", "row", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	e.req(t, "GET", path("hive/t27", 1, "claims"), "").mustCode(t, 500, "")
	last, err := rdb.XRevRangeN(ctx, "queen:audit", "+", "-", 1).Result()
	if err != nil || len(last) != 1 {
		t.Fatalf("reading the audit stream: %v %v", last, err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "queen:audit", Values: map[string]any{"entry": last[0].Values["entry"]}}).Err(); err != nil {
		t.Fatal(err)
	}
	e.put(t, "hive/t27", 2, working)

	check := func(w *watch, issues ...float64) {
		t.Helper()
		for _, issue := range issues {
			d := w.nextChange(t).change(t)
			if d.Entry["issue"] != issue {
				t.Fatalf("change of #%v, want #%v", d.Entry["issue"], issue)
			}
			switch {
			case issue == 1 && (d.Claim != nil || d.ClaimError != "internal error: the claim view could not be read"):
				t.Fatalf("row 1 unreadable: claim %v, claim_error %q", d.Claim, d.ClaimError)
			case issue != 1 && (d.Claim == nil || d.ClaimError != ""):
				t.Fatalf("row %v: claim %v, claim_error %q", issue, d.Claim, d.ClaimError)
			}
		}
	}
	check(w, 1, 2)
	check(e.watch(t, "", "Last-Event-ID", anchor), 1, 1, 2)
	if !strings.Contains(e.logs.String(), "a row's claim view cannot be read") {
		t.Errorf("the unreadable row is not logged:\n%s", e.logs.String())
	}
}

// A message of the audit stream that is no entry (a hand edit) is left out
// and logged; live watchers and one resuming from before it go on past it.
// Checked: with a read failing on it, as before, the live watcher got
// nothing more and the resumed one's stream ended at once, again and again.
func TestEventsGoOnPastAnAuditMessageThatIsNoEntry(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	e.put(t, "hive/t27", 1, working)
	_, ids := e.auditEntries(t)
	w := e.watch(t, "")
	if err := e.redis.Client().XAdd(t.Context(), &redis.XAddArgs{Stream: "queen:audit", Values: map[string]any{"entry": "{not json"}}).Err(); err != nil {
		t.Fatal(err)
	}
	e.put(t, "hive/t27", 2, working)
	if d := w.nextChange(t).change(t); d.Entry["issue"] != 2.0 {
		t.Fatalf("live: issue %v, want 2", d.Entry["issue"])
	}
	resumed := e.watch(t, "", "Last-Event-ID", ids[0])
	if d := resumed.nextChange(t).change(t); d.Entry["issue"] != 2.0 {
		t.Fatalf("resumed: issue %v, want 2", d.Entry["issue"])
	}
	e.put(t, "hive/t27", 3, working)
	for _, w := range []*watch{w, resumed} {
		if d := w.nextChange(t).change(t); d.Entry["issue"] != 3.0 {
			t.Fatalf("then: issue %v, want 3", d.Entry["issue"])
		}
	}
	if !strings.Contains(e.logs.String(), "an audit stream message is no entry") {
		t.Errorf("the message is not logged:\n%s", e.logs.String())
	}
}

// Watchers that come and go one after another share one reader of the
// audit stream: a reader blocked in XREAD holds a connection until its
// block ends, and a new one per watcher took the pool's connections.
// Checked: with a reader cancelled as the last watcher left, 20 watchers
// in turn left 20 connections blocked.
func TestEventsWatchersInTurnShareOneReader(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	for range 20 {
		w := e.watch(t, "")
		w.close()
		eventually(t, "the watcher is gone", func() bool { return metric(t, e.reg, "queen_api_watchers") == 0 })
	}
	list, err := e.redis.Client().ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	blocked := 0
	for _, line := range strings.Split(list, "\n") {
		for _, f := range strings.Fields(line) {
			if flags, ok := strings.CutPrefix(f, "flags="); ok && strings.Contains(flags, "b") {
				blocked++
			}
		}
	}
	if blocked > 1 {
		t.Fatalf("%d connections blocked reading the audit stream, want at most the one reader:\n%s", blocked, list)
	}
}

// A graceful shutdown ends a stream whose write is stuck on a client that
// reads nothing, at once rather than at the write's 30 s deadline.
// Checked: before, Shutdown ran out of its 5 s.
func TestEventsShutdownEndsAStreamStuckWriting(t *testing.T) {
	e := newWatchEnv(t, watchOpts{server: func(s *httptest.Server) { s.Listener = smallBuffers{s.Listener} }})
	detail := strings.Repeat("a long owned path/", 20)
	for i := 1; i <= 300; i++ {
		e.put(t, "hive/t27", i, `{"started": true, "owned_paths": ["`+detail+fmt.Sprint(i)+`"]}`)
	}
	_, ids := e.auditEntries(t)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Resume from the first: a backlog of 299 changes, never read.
	fmt.Fprintf(conn, "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nLast-Event-ID: %s\r\n\r\n", token, ids[0])
	eventually(t, "the stream is open", func() bool { return metric(t, e.reg, "queen_api_watchers") == 1 })
	time.Sleep(300 * time.Millisecond) // its writes fill the sockets
	e.shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("graceful shutdown with a stream stuck writing: %v", err)
	}
}
