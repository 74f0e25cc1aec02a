package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// While Redis is down go-redis and asynq each say so several times a
// second (a failed dial, "Failed to forward scheduled tasks", ...), and
// the scheduler's lease once a second: some 20 lines a second that bury
// everything else. Their warnings and errors
// are logged as bursts instead, per component: the first line of a burst as
// it is, then one summary a minute while it lasts and one when it ends.
const (
	// BurstQuiet is how long without such a line ends a burst.
	BurstQuiet = 5 * time.Second
	// BurstEvery is how often a burst that lasts is summarised.
	BurstEvery = time.Minute
)

// limited are the components whose warnings and errors come in bursts:
// the Redis clients, and the scheduler, which tries its lease every second.
var limited = map[string]bool{"go-redis": true, "asynq": true, "scheduler": true}

// bursts are one logger's bursts, one per limited component, shared by
// every handler derived from it.
type bursts struct {
	mu         sync.Mutex
	quiet      time.Duration
	every      time.Duration
	components map[string]*burst
}

func (bs *bursts) of(component string) *burst {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.components[component]
	if b == nil {
		b = &burst{quiet: bs.quiet, every: bs.every, component: component}
		bs.components[component] = b
	}
	return b
}

// burst is the state of one component's bursts.
type burst struct {
	component  string
	mu         sync.Mutex
	quiet      time.Duration
	every      time.Duration
	next       slog.Handler // of the first line, for the summaries
	start      time.Time    // zero: no burst
	summarised time.Time
	counted    int // lines held back since the last summary
	total      int // lines held back in this burst
	timer      *time.Timer
}

type burstHandler struct {
	next slog.Handler
	bs   *bursts
	b    *burst // nil: not a limited component
}

// limitBursts wraps h so that the lines of the limited components come in
// bursts (BurstQuiet, BurstEvery).
func limitBursts(h slog.Handler, quiet, every time.Duration) slog.Handler {
	return burstHandler{next: h, bs: &bursts{quiet: quiet, every: every, components: map[string]*burst{}}}
}

func (h burstHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h burstHandler) WithAttrs(as []slog.Attr) slog.Handler {
	b := h.b
	for _, a := range as {
		if a.Key == "component" && limited[a.Value.String()] {
			b = h.bs.of(a.Value.String())
		}
	}
	return burstHandler{next: h.next.WithAttrs(as), bs: h.bs, b: b}
}

func (h burstHandler) WithGroup(name string) slog.Handler {
	return burstHandler{next: h.next.WithGroup(name), bs: h.bs, b: h.b}
}

func (h burstHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.b == nil || r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	b := h.b
	b.mu.Lock()
	if b.start.IsZero() {
		b.start, b.summarised, b.next = r.Time, r.Time, h.next
		b.counted, b.total = 0, 0
		if b.timer == nil {
			b.timer = time.AfterFunc(b.quiet, b.end)
		} else {
			b.timer.Reset(b.quiet)
		}
		b.mu.Unlock()
		r = r.Clone()
		r.AddAttrs(slog.String("burst", "first line; the like are counted until "+b.quiet.String()+" pass without one"))
		return h.next.Handle(ctx, r)
	}
	b.counted++
	b.total++
	b.timer.Reset(b.quiet)
	if r.Time.Sub(b.summarised) < b.every {
		b.mu.Unlock()
		return nil
	}
	n := b.counted
	b.counted, b.summarised = 0, r.Time
	since := r.Time.Sub(b.start)
	b.mu.Unlock()
	s := slog.NewRecord(r.Time, slog.LevelWarn, b.component+" still failing", 0)
	s.AddAttrs(slog.Int("held_back", n), slog.String("for", since.Round(time.Second).String()), slog.String("last", r.Message))
	return h.next.Handle(ctx, s)
}

// end closes a burst BurstQuiet after its last line.
func (b *burst) end() {
	b.mu.Lock()
	if b.start.IsZero() {
		b.mu.Unlock()
		return
	}
	now := time.Now()
	lasted, n, next := now.Sub(b.start)-b.quiet, b.total, b.next
	b.start = time.Time{}
	b.mu.Unlock()
	s := slog.NewRecord(now, slog.LevelInfo, b.component+" errors stopped", 0)
	s.AddAttrs(slog.Int("held_back", n), slog.String("lasted", max(lasted, 0).Round(time.Second).String()))
	_ = next.Handle(context.Background(), s)
}
