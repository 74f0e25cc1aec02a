package api

import (
	"strconv"
	"testing"
	"time"
)

// The guard remembers at most maxAuthClients addresses: a new one at the
// cap replaces the least recently refused, and a refusal makes an
// address the most recent again.
func TestAuthGuardStaysBounded(t *testing.T) {
	g := newAuthGuard()
	t0 := time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)
	addr := func(i int) string { return "10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256) }
	for i := 0; i < maxAuthClients; i++ {
		g.refuse(addr(i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	later := t0.Add(AuthQuiet / 2)
	g.refuse(addr(0), later) // the oldest, refused again: now the most recent
	waiting := "10.9.9.9"
	for i := 0; i < AuthFailures; i++ {
		g.refuse(waiting, later) // full: the least recent (addr(1)) goes
	}
	if len(g.clients) != maxAuthClients || g.clients[addr(1)] != nil || g.clients[addr(0)] == nil {
		t.Fatalf("%d clients; the least recent kept %v; the refreshed one kept %v", len(g.clients),
			g.clients[addr(1)] != nil, g.clients[addr(0)] != nil)
	}
	if ref := g.refuse(waiting, later); ref.throttled == 0 {
		t.Fatal("the new address's wait was lost")
	}
	if g.recent.Len() != len(g.clients) {
		t.Fatalf("%d in the recency list, %d in the map", g.recent.Len(), len(g.clients))
	}
}

// BenchmarkAuthGuardRefuse is a wrong token from a new address with the
// table empty and full: the full one must cost about the same (it once
// scanned all maxAuthClients entries under the lock).
func BenchmarkAuthGuardRefuse(b *testing.B) {
	t0 := time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)
	for _, full := range []bool{false, true} {
		b.Run("full="+strconv.FormatBool(full), func(b *testing.B) {
			g := newAuthGuard()
			if full {
				for i := 0; i < maxAuthClients; i++ {
					g.refuse("10.1."+strconv.Itoa(i), t0)
				}
			}
			addrs := make([]string, 4096)
			for i := range addrs {
				addrs[i] = "10.2." + strconv.Itoa(i)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				g.refuse(addrs[i%len(addrs)], t0)
				if !full && len(g.clients) == len(addrs) {
					b.StopTimer()
					g = newAuthGuard()
					b.StartTimer()
				}
			}
		})
	}
}
