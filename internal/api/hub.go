package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// The hub: one reader of the audit stream for the process, rendering each
// change once and handing it to every watcher.

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

// batch holds every entry of the stream after from, up to last, unless
// gap: then some after from may be missing, and each watcher reads them
// itself (or is reset).
type batch struct {
	from, last ledger.AuditID
	changes    []change
	gap        bool
}

// watcher is one stream's place in the hub; the hub closes ch when it
// drops the watcher for falling behind.
type watcher struct {
	ch      chan *batch
	dropped atomic.Bool
}

// hub reads the audit stream once for the process while anyone watches,
// and hands each batch to every watcher without waiting for any. At most
// one reader runs, and it ends itself after its current read once nobody
// watches (a cancel does not interrupt a blocking XREAD, so a reader per
// watcher would hold a connection each).
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
	emptyAtZero := false // from is the zero id of a stream that held nothing
	for ctx.Err() == nil && !h.idle() {
		var b *batch
		var err error
		if !started {
			var held bool
			if _, from, held, err = h.s.ledger.AuditEnds(ctx); err == nil {
				emptyAtZero = !held
				// Watchers that read their place before this reader's
				// start catch up now, not at the next change.
				started, b = true, &batch{from: from, last: from}
			}
		} else {
			var rd ledger.AuditRead
			if rd, err = h.s.ledger.WaitAudit(ctx, from, watchBatch, watchBlock); err == nil && rd.Messages > 0 {
				h.s.logUnreadable(rd)
				if b, err = h.s.render(ctx, from, rd, ""); err == nil {
					b.gap = rd.Gap && !emptyAtZero
					emptyAtZero = false
				}
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
