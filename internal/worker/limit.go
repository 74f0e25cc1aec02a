package worker

import (
	"context"
	"sync"
	"time"
)

// pacer spaces calls at least every apart: GitHub's secondary rate limits
// punish bursts of content-creating requests from one installation.
type pacer struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	next time.Time
}

// wait blocks until the caller's turn, which it books first, so concurrent
// callers queue up one interval apart.
func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	now := p.now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	p.mu.Unlock()
	d := at.Sub(now)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pacerOf is the pacer of one installation.
func (w *Worker) pacerOf(installationID int64) *pacer {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pace[installationID]
	if p == nil {
		p = &pacer{every: w.d.WriteSpacing, now: w.now}
		w.pace[installationID] = p
	}
	return p
}

// acquire takes one of the installation's push slots; release gives it back.
func (w *Worker) acquire(ctx context.Context, installationID int64) (release func(), err error) {
	w.mu.Lock()
	s := w.slots[installationID]
	if s == nil {
		s = make(chan struct{}, w.d.PushesPerInstallation)
		w.slots[installationID] = s
	}
	w.mu.Unlock()
	release = func() { <-s }
	select {
	case s <- struct{}{}:
		return release, nil
	default:
	}
	select {
	case s <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
