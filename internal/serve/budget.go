package serve

import (
	"net/http"
	"net/netip"
	"sync"
)

// Limits bound what a listener's requests in flight hold at once: places
// (requests being served) and body bytes buffered, in all and per client
// address.
type Limits struct {
	Places, Bytes             int64 // in all
	ClientPlaces, ClientBytes int64 // per client address (ClientOf)
}

// Budget holds a listener's requests in flight to its Limits. Past a limit
// a request is refused at once rather than queued, so memory stays bounded
// under a flood and the client retries; the per-client limits keep one
// address from taking every place and byte.
type Budget struct {
	limits Limits

	mu            sync.Mutex
	places, bytes int64
	clients       map[string]*use
}

type use struct{ places, bytes int64 }

// NewBudget returns a Budget of l.
func NewBudget(l Limits) *Budget {
	return &Budget{limits: l, clients: map[string]*use{}}
}

// Limits are b's limits.
func (b *Budget) Limits() Limits { return b.limits }

// InUse reports the places and bytes held now, in all.
func (b *Budget) InUse() (places, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.places, b.bytes
}

// Lease is one request's place and the body bytes charged to it.
type Lease struct {
	b      *Budget
	client string
	bytes  int64
	done   bool
}

// Admit takes a place for r if one is free in all and for its client; a
// lease must be Released.
func (b *Budget) Admit(r *http.Request) (*Lease, bool) {
	client := ClientOf(r)
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.clients[client]
	if b.places >= b.limits.Places || (u != nil && u.places >= b.limits.ClientPlaces) {
		return nil, false
	}
	if u == nil {
		u = &use{}
		b.clients[client] = u
	}
	b.places++
	u.places++
	return &Lease{b: b, client: client}, true
}

// Grow charges n more bytes to l; false (nothing charged) when that would
// pass the bytes in all or its client's.
func (l *Lease) Grow(n int64) bool {
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.clients[l.client]
	if l.done || b.bytes+n > b.limits.Bytes || u.bytes+n > b.limits.ClientBytes {
		return false
	}
	b.bytes += n
	u.bytes += n
	l.bytes += n
	return true
}

// Release frees l's place and bytes; later calls do nothing.
func (l *Lease) Release() {
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if l.done {
		return
	}
	l.done = true
	u := b.clients[l.client]
	b.places--
	b.bytes -= l.bytes
	u.places--
	u.bytes -= l.bytes
	if u.places == 0 {
		delete(b.clients, l.client)
	}
}

// ClientOf is the client address r is counted under: its RemoteAddr's IP,
// an IPv6 address by its /64, the least a host is given, so one host
// cannot take many shares by changing addresses. Behind a proxy (the
// chart's Ingress) it is the proxy's: every delivery shares one address.
func ClientOf(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
