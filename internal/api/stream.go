package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redisavail"
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
	// from the stream first. A resume starts with the backlog, whose first
	// read resets when the stream no longer holds the id.
	bctx, cancel := context.WithTimeout(ctx, redisavail.Budget)
	_, newest, held, err := s.ledger.AuditEnds(bctx)
	cancel()
	if err != nil {
		return err
	}
	st.last, st.emptyAtZero = newest, !held
	if after != nil {
		st.last, st.emptyAtZero = *after, false
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
	st.rc = http.NewResponseController(w)
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
	st.flush()
	if st.err != nil {
		return nil
	}
	return st.follow(r.Context(), after != nil)
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
	// emptyAtZero: last is the zero id, taken from a stream that held
	// nothing, so the messages it dropped before are not this watcher's.
	emptyAtZero bool
	beat        *time.Timer // the heartbeat: every write restarts it
	err         error       // the first failed write: the client is gone

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
	if st.beat != nil {
		st.beat.Reset(st.s.heartbeat) // a ping marks a silence, not a period
	}
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
	if st.last != (ledger.AuditID{}) {
		st.emptyAtZero = false
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

// readBacklog sends what the stream holds after st.last, or a reset when
// it may have dropped some of it.
func (st *stream) readBacklog(ctx context.Context) error {
	for st.err == nil {
		select {
		case <-st.s.done:
			return nil
		default:
		}
		rctx, cancel := context.WithTimeout(ctx, redisavail.Budget)
		rd, err := st.s.ledger.AuditAfter(rctx, st.last, watchBatch)
		if err == nil && rd.Gap && !st.emptyAtZero {
			err = st.reset(rctx)
			cancel()
			if err != nil {
				return err
			}
			break
		}
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

// reset tells the watcher that changes after st.last may be missing, and
// moves it to the newest entry held: the live changes follow it. The
// event's id is that entry, so a client that reconnects before the next
// change resumes there instead of being reset again (an event without an
// id, when the stream holds none, keeps the client's old one).
func (st *stream) reset(ctx context.Context) error {
	oldest, newest, held, err := st.s.ledger.AuditEnds(ctx)
	if err != nil {
		return err
	}
	rs := apiwire.Reset{After: st.last.String(), Reason: apiwire.ResetReason}
	var buf bytes.Buffer
	if held {
		rs.Oldest = oldest.String()
		buf.WriteString("id: " + newest.String() + "\n")
	}
	buf.WriteString("event: " + apiwire.EventReset + "\ndata: ")
	if err := encodeLine(&buf, rs); err != nil {
		return err
	}
	buf.WriteString("\n")
	st.write(buf.Bytes())
	st.last, st.emptyAtZero = newest, !held
	st.s.metrics.resets.Inc()
	return nil
}

// follow sends the backlog when resuming, then the hub's batches, with a
// heartbeat in silences, until the client leaves, the server shuts down,
// or the watcher falls behind.
func (st *stream) follow(ctx context.Context, resume bool) error {
	s := st.s
	if resume {
		if err := st.catchUp(ctx); err != nil {
			return readFailed(ctx, s, err)
		}
	}
	st.beat = time.NewTimer(s.heartbeat)
	defer st.beat.Stop()
	for st.err == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-st.beat.C:
			st.write([]byte(": ping\n\n"))
			st.flush()
		case b, open := <-st.sub.ch:
			if !open {
				s.metrics.slow.Inc()
				s.log.LogAttrs(ctx, slog.LevelWarn, "watch stream: watcher fell behind, disconnected",
					slog.String("client", st.client), slog.String("last", st.last.String()))
				return nil
			}
			if st.last.Before(b.from) || b.gap {
				// The hub began reading after this watcher's place, or
				// its read may have missed some: read them here.
				if err := st.catchUp(ctx); err != nil {
					return readFailed(ctx, s, err)
				}
			}
			st.send(b)
			st.flush()
		}
	}
	return nil
}

// readFailed ends a stream whose read failed: the client reconnects with
// Last-Event-ID; the returned error goes to the access log.
func readFailed(ctx context.Context, s *server, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	s.log.Warn("watch stream ended: reading the audit stream failed", "err", err.Error())
	return err
}
