package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/retry"
)

// The watch stream, GET /v1/events.
const (
	// EventsPath is the watch stream's route.
	EventsPath = "/v1/events"
	// DefaultMaxWatchers bounds the streams open at once
	// (QUEEN_API_MAX_WATCHERS); they do not count toward MaxInFlight.
	DefaultMaxWatchers = 256
	// DefaultHeartbeat is the silence after which a stream sends ": ping",
	// so proxies and clients see it alive.
	DefaultHeartbeat = 15 * time.Second
	// DefaultWatchBuffer is how many batches of changes a watcher may leave
	// unsent; past it the watcher is disconnected (it resumes with
	// Last-Event-ID) so that it never holds up the others.
	DefaultWatchBuffer = 64

	watchBatch = 100             // entries one read takes
	watchBlock = 5 * time.Second // one blocking read's wait
	// watchWriteTimeout bounds each write of a stream in place of the
	// server's WriteTimeout, which would end every stream after 60 s.
	watchWriteTimeout = 30 * time.Second
)

// eventsMetrics count what the streams do.
type eventsMetrics struct {
	watchers prometheus.Gauge
	sent     prometheus.Counter
	resets   prometheus.Counter
	slow     prometheus.Counter
}

func newEventsMetrics(reg prometheus.Registerer) (*eventsMetrics, error) {
	m := &eventsMetrics{
		watchers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "queen_api_watchers",
			Help: "Watch streams (GET /v1/events) connected."}),
		sent: prometheus.NewCounter(prometheus.CounterOpts{Name: "queen_api_events_sent_total",
			Help: "Change events sent to watchers."}),
		resets: prometheus.NewCounter(prometheus.CounterOpts{Name: "queen_api_event_resets_total",
			Help: "Reset events sent: a resume id older than the audit stream holds."}),
		slow: prometheus.NewCounter(prometheus.CounterOpts{Name: "queen_api_watchers_slow_disconnected_total",
			Help: "Watchers disconnected because they fell behind the stream."}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.watchers, err = register(reg, m.watchers); err != nil {
		return nil, err
	}
	for _, c := range []*prometheus.Counter{&m.sent, &m.resets, &m.slow} {
		if *c, err = register(reg, *c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// register registers c, or returns the collector already registered.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return c, fmt.Errorf("api: register metrics: %w", err)
		}
		return are.ExistingCollector.(T), nil
	}
	return c, nil
}

// change is one audit entry rendered as its event, shared by every watcher.
type change struct {
	id    ledger.AuditID
	repo  string
	frame []byte
}

// batch holds every entry of the stream after from, up to last.
type batch struct {
	from, last ledger.AuditID
	changes    []change
}

// watcher is one stream's place in the hub; the hub closes ch when it
// drops the watcher for falling behind.
type watcher struct {
	ch      chan *batch
	dropped atomic.Bool
}

// hub reads the audit stream once for the process while anyone watches,
// and hands each batch to every watcher without waiting for any. At most
// one reader runs: it ends itself once it finds nobody watching, after the
// read it is in. A cancel does not interrupt go-redis's XREAD BLOCK, so
// readers cancelled as the last watcher left and started as the next came
// each held a blocked connection for up to watchBlock: a watcher
// reconnecting in a loop held 9 of the pool's 20 connections at once.
type hub struct {
	s       *server
	buffer  int
	mu      sync.Mutex
	subs    map[*watcher]struct{}
	running bool // a reader runs
}

func (h *hub) subscribe() *watcher {
	w := &watcher{ch: make(chan *batch, h.buffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[w] = struct{}{}
	if !h.running {
		h.running = true
		go h.run()
	}
	return w
}

func (h *hub) unsubscribe(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, w)
}

// idle reports whether nobody watches, and if so marks the reader ended.
func (h *hub) idle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		h.running = false
	}
	return !h.running
}

// broadcast hands b to every watcher; a watcher whose buffer is full is
// dropped (its channel closed) rather than waited for.
func (h *hub) broadcast(b *batch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		select {
		case w.ch <- b:
		default:
			delete(h.subs, w)
			w.dropped.Store(true)
			close(w.ch)
		}
	}
}

// run reads the stream from its newest entry on while anyone watches and
// the server runs. A failed read sends nothing and is retried: an outage
// is never an event.
func (h *hub) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.s.done: // nil, never, without a Config.Done
			cancel()
		case <-ctx.Done():
		}
	}()
	defer func() {
		if ctx.Err() != nil { // the server stopped: a later watcher starts a reader
			h.mu.Lock()
			h.running = false
			h.mu.Unlock()
		}
	}()
	var from ledger.AuditID
	started, failures := false, 0
	for ctx.Err() == nil && !h.idle() {
		var b *batch
		var err error
		if !started {
			if _, from, _, err = h.s.ledger.AuditEnds(ctx); err == nil {
				// Watchers that read their place before this reader's
				// start catch up now, not at the next change.
				started, b = true, &batch{from: from, last: from}
			}
		} else {
			var rd ledger.AuditRead
			if rd, err = h.s.ledger.WaitAudit(ctx, from, watchBatch, watchBlock); err == nil && rd.Messages > 0 {
				h.s.logUnreadable(rd)
				b, err = h.s.render(ctx, from, rd, "")
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if failures++; failures == 1 {
				h.s.log.Warn("watch stream: reading the audit stream failed; retrying", "err", err.Error())
			}
			select {
			case <-ctx.Done():
			case <-time.After(retry.Backoff(failures - 1)):
			}
			continue
		}
		if failures > 0 {
			h.s.log.Info("watch stream: reading the audit stream again", "failures", failures)
			failures = 0
		}
		if b != nil {
			h.broadcast(b)
			from = b.last
		}
	}
}

// logUnreadable logs each message of rd that is no audit entry: the stream
// goes on past it, and an operator should know why it is missing.
func (s *server) logUnreadable(rd ledger.AuditRead) {
	for _, err := range rd.Unreadable {
		s.log.Error("watch stream: an audit stream message is no entry; left out", "err", err.Error())
	}
}

// claimUnreadable is a change's claim_error: the words GET answers with
// its 500, the reason being in the log.
const claimUnreadable = "internal error: the claim view could not be read"

// render reads the claim view of each entry of rd of repo ("" for all)
// once per row and renders its change event; b covers every message after
// from up to rd.Last. An outage is an error (the stream waits); a row that
// cannot be decoded is sent with claim_error, since retrying would hold
// every watcher on it forever.
func (s *server) render(ctx context.Context, from ledger.AuditID, rd ledger.AuditRead, repo string) (*batch, error) {
	b := &batch{from: from, last: from}
	type view struct {
		claim *apiwire.Detail
		err   string
	}
	claims := map[string]view{}
	for _, e := range rd.Entries {
		id, err := ledger.ParseAuditID(e.ID)
		if err != nil {
			return nil, fmt.Errorf("audit entry: %w", err)
		}
		b.last = id
		if repo != "" && !strings.EqualFold(e.Repo, repo) {
			continue
		}
		row := strings.ToLower(e.Repo) + "#" + strconv.FormatInt(e.Issue, 10)
		v, seen := claims[row]
		if !seen {
			claim, err := s.detail(ctx, e.Repo, e.Issue, defaultHistory)
			switch {
			case err == nil, errors.Is(err, ledger.ErrNotFound):
				v.claim = claim
			case redisavail.Unavailable(err) || ctx.Err() != nil:
				return nil, err
			default:
				s.log.Error("watch stream: a row's claim view cannot be read; sent with claim_error",
					"repo", e.Repo, "issue", e.Issue, "err", err.Error())
				v.err = claimUnreadable
			}
			claims[row] = v
		}
		var buf bytes.Buffer
		buf.WriteString("id: " + e.ID + "\nevent: " + apiwire.EventChange + "\ndata: ")
		if err := encodeLine(&buf, apiwire.Change{Entry: e, Claim: v.claim, ClaimError: v.err}); err != nil {
			return nil, err
		}
		buf.WriteString("\n")
		b.changes = append(b.changes, change{id: id, repo: e.Repo, frame: buf.Bytes()})
	}
	if b.last.Before(rd.Last) {
		b.last = rd.Last // messages that are no entry, past the last entry
	}
	return b, nil
}

// encodeLine writes v as one line of JSON (encoding/json escapes every
// newline inside strings), ended by "\n", as the answers are written.
func encodeLine(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// events streams the audit's changes: ?repo=owner/name&after=ID, or the
// Last-Event-ID header (which wins), resumes after an id without a gap.
func (s *server) events(ctx context.Context, w *responseWriter, r *request) error {
	q, err := query(r, "repo", "after")
	if err != nil {
		return err
	}
	repo := ""
	if v, ok := q["repo"]; ok {
		if repo, err = parseRepo(v); err != nil {
			return err
		}
	}
	var after *ledger.AuditID
	if v, ok := q["after"]; ok {
		id, err := ledger.ParseAuditID(v)
		if err != nil {
			return badField("after", err.Error())
		}
		after = &id
	}
	if v := strings.TrimSpace(r.Header.Get(apiwire.LastEventIDHeader)); v != "" {
		id, err := ledger.ParseAuditID(v)
		if err != nil {
			return badField(apiwire.LastEventIDHeader, err.Error())
		}
		after = &id // the header wins: a browser's EventSource resends it
	}

	st := &stream{s: s, w: w, client: clientAddr(r.Request), repo: repo, sub: s.hub.subscribe()}
	defer func() { s.hub.unsubscribe(st.sub) }()
	// Where to start, read after subscribing: whatever the hub reads from
	// here on reaches this watcher, and a batch starting past it is read
	// from the stream first.
	bctx, cancel := context.WithTimeout(ctx, redisavail.Budget)
	oldest, newest, held, err := s.ledger.AuditEnds(bctx)
	cancel()
	if err != nil {
		return err
	}
	last, resume := newest, after != nil
	var reset *apiwire.Reset
	if after != nil {
		if (held && after.Before(oldest)) || (!held && *after != (ledger.AuditID{})) {
			reset = &apiwire.Reset{After: after.String(), Reason: apiwire.ResetReason}
			if held {
				reset.Oldest = oldest.String()
			}
			resume = false
		} else {
			last = *after
		}
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	s.metrics.watchers.Inc()
	defer s.metrics.watchers.Dec()
	st.rc, st.last = http.NewResponseController(w), last
	// The stream outlives the server's read and write timeouts; each write
	// has its own deadline instead.
	_ = st.rc.SetReadDeadline(time.Time{})
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-s.done: // nil, never, without a Config.Done
			st.shut()
		case <-ended:
		}
	}()
	st.write([]byte("retry: 1000\n\n"))
	if reset != nil {
		var buf bytes.Buffer
		// The id is where the live changes start: a client that reconnects
		// before the next change resumes there instead of being reset
		// again (an SSE event without an id keeps the old one).
		if held {
			buf.WriteString("id: " + newest.String() + "\n")
		}
		buf.WriteString("event: " + apiwire.EventReset + "\ndata: ")
		if err := encodeLine(&buf, reset); err != nil {
			return err
		}
		buf.WriteString("\n")
		st.write(buf.Bytes())
		s.metrics.resets.Inc()
	}
	st.flush()
	if st.err != nil {
		return nil
	}
	return st.follow(r.Context(), resume)
}

// stream is one watcher's connection.
type stream struct {
	s      *server
	w      *responseWriter
	rc     *http.ResponseController
	client string
	repo   string
	sub    *watcher
	last   ledger.AuditID // every entry up to it was sent or is not watched
	writes int
	err    error // the first failed write: the client is gone

	mu      sync.Mutex // orders a write's deadline and shut's
	closing bool       // the server shuts down
}

// errShutDown ends a stream when the server shuts down.
var errShutDown = errors.New("the server is shutting down")

// shut ends the stream's writes at once, the one in progress included: a
// write to a client that reads nothing would otherwise hold a graceful
// shutdown for its whole deadline, longer than the shutdown may take.
func (st *stream) shut() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closing = true
	_ = st.rc.SetWriteDeadline(time.Now())
}

func (st *stream) write(p []byte) {
	if st.err != nil {
		return
	}
	st.mu.Lock()
	if st.closing {
		st.mu.Unlock()
		st.err = errShutDown
		return
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(watchWriteTimeout))
	st.mu.Unlock()
	_, st.err = st.w.Write(p)
	st.writes++
}

func (st *stream) flush() {
	if st.err == nil {
		st.err = st.rc.Flush()
	}
}

// send writes b's changes after st.last that the watcher watches.
func (st *stream) send(b *batch) {
	for _, c := range b.changes {
		if !st.last.Before(c.id) || (st.repo != "" && !strings.EqualFold(c.repo, st.repo)) {
			continue
		}
		st.write(c.frame)
		if st.err != nil {
			return
		}
		st.last = c.id
		st.s.metrics.sent.Inc()
	}
	if st.last.Before(b.last) {
		st.last = b.last
	}
}

// catchUp sends what the stream holds after st.last, up to its end. A
// watcher the hub dropped meanwhile (batches came faster than the
// backlog's claim reads) subscribes again and catches up again: reading
// its backlog is not falling behind.
func (st *stream) catchUp(ctx context.Context) error {
	for {
		if err := st.readBacklog(ctx); err != nil || st.err != nil || !st.sub.dropped.Load() {
			return err
		}
		st.s.hub.unsubscribe(st.sub)
		st.sub = st.s.hub.subscribe()
	}
}

func (st *stream) readBacklog(ctx context.Context) error {
	for st.err == nil {
		select {
		case <-st.s.done:
			return nil
		default:
		}
		rctx, cancel := context.WithTimeout(ctx, redisavail.Budget)
		rd, err := st.s.ledger.AuditAfter(rctx, st.last, watchBatch)
		var b *batch
		if err == nil && rd.Messages > 0 {
			st.s.logUnreadable(rd)
			b, err = st.s.render(rctx, st.last, rd, st.repo)
		}
		cancel()
		if err != nil {
			return err
		}
		if b != nil {
			st.send(b)
		}
		if rd.Messages < watchBatch {
			break
		}
	}
	st.flush()
	return nil
}

// follow sends the backlog when resuming, then the hub's batches, with a
// heartbeat in silences, until the client leaves, the server shuts down,
// or the watcher falls behind.
func (st *stream) follow(ctx context.Context, resume bool) error {
	s := st.s
	end := func(err error) error {
		if err != nil && ctx.Err() == nil {
			// The stream already answered 200: the client reconnects
			// with Last-Event-ID; the log says why it ended.
			st.w.err = err
			s.log.Warn("watch stream ended: reading the audit stream failed", "err", err.Error())
		}
		return nil
	}
	if resume {
		if err := st.catchUp(ctx); err != nil {
			return end(err)
		}
	}
	beat := time.NewTimer(s.heartbeat)
	defer beat.Stop()
	for st.err == nil {
		writes := st.writes
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-beat.C:
			st.write([]byte(": ping\n\n"))
			st.flush()
		case b, open := <-st.sub.ch:
			if !open {
				s.metrics.slow.Inc()
				s.log.LogAttrs(ctx, slog.LevelWarn, "watch stream: watcher fell behind, disconnected",
					slog.String("client", st.client), slog.String("last", st.last.String()))
				return nil
			}
			if st.last.Before(b.from) {
				// The hub began reading after this watcher's place.
				if err := st.catchUp(ctx); err != nil {
					return end(err)
				}
			}
			st.send(b)
			st.flush()
		}
		if st.writes != writes {
			beat.Reset(s.heartbeat) // a ping marks a silence, not a period
		}
	}
	return nil
}
