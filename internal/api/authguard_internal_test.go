package api

import (
	"strconv"
	"testing"
	"time"
)

// The guard remembers at most maxAuthClients addresses: bursts that are
// over make room first, then the least recent.
func TestAuthGuardStaysBounded(t *testing.T) {
	g := newAuthGuard()
	t0 := time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)
	for i := 0; i < maxAuthClients; i++ {
		g.failed("10.0.0."+strconv.Itoa(i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	waiting := "10.9.9.9"
	later := t0.Add(AuthQuiet / 2)
	g.failed(waiting, later) // full: the least recent goes
	for i := 1; i < AuthFailures; i++ {
		g.failed(waiting, later)
	}
	if len(g.clients) != maxAuthClients || g.clients["10.0.0.0"] != nil || g.waiting(waiting, later) == 0 {
		t.Fatalf("%d clients; the least recent kept %v; the new one waiting %v", len(g.clients),
			g.clients["10.0.0.0"] != nil, g.waiting(waiting, later))
	}
	// Past AuthQuiet every earlier burst is over: a new address at the
	// cap clears them all.
	g.failed("10.8.8.8", later.Add(AuthQuiet+AuthWait+time.Second))
	if len(g.clients) != 1 || g.clients["10.8.8.8"] == nil {
		t.Fatalf("%d clients after the quiet, want the new one's alone", len(g.clients))
	}
}
