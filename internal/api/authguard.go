package api

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Failed authentication is throttled per client address: after
// AuthFailures wrong tokens a client's requests are answered 429 with
// Retry-After, before any token comparison, for AuthWait, twice as long
// each further time in the same burst, up to AuthWaitMax. A burst ends
// after AuthQuiet without a refusal. 2,000 wrong tokens once took 0.4 s
// and left no trace; now they cost 10 comparisons and two log lines.
// Other addresses are not slowed; the Queen's calls carry the token.
const (
	AuthFailures = 10
	AuthWait     = time.Second
	AuthWaitMax  = 5 * time.Minute
	AuthQuiet    = time.Minute
	// maxAuthClients bounds the addresses remembered; past it the idle
	// ones go first, then the least recent.
	maxAuthClients = 10_000
)

// authGuard remembers the recent refusals of each client address.
type authGuard struct {
	mu      sync.Mutex
	clients map[string]*authClient
}

// authClient is one address's current burst of refusals.
type authClient struct {
	failures int           // wrong tokens since the burst began or its last wait
	refused  int           // every refusal of the burst, waits included
	last     time.Time     // the burst's latest refusal
	until    time.Time     // refused unread until then
	wait     time.Duration // the burst's latest wait
}

func newAuthGuard() *authGuard { return &authGuard{clients: map[string]*authClient{}} }

// clientAddr is the address the request came from, without its port.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// waiting reports how long addr must still wait, counting this refusal;
// 0 lets the request on to the token check.
func (g *authGuard) waiting(addr string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.clients[addr]
	if c == nil || !now.Before(c.until) {
		return 0
	}
	c.refused++
	c.last = now
	return c.until.Sub(now)
}

// authRefusal is what failed reports of a wrong token.
type authRefusal struct {
	log     bool          // a Warn line is due: the burst began, or a wait did
	refused int           // the burst's refusals so far
	wait    time.Duration // > 0: the wait that began
}

// failed counts a wrong token from addr.
func (g *authGuard) failed(addr string, now time.Time) authRefusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.clients[addr]
	if c != nil && now.Sub(c.last) > AuthQuiet && !now.Before(c.until) {
		c = nil // that burst is over
	}
	if c == nil {
		g.makeRoom(now)
		c = &authClient{}
		g.clients[addr] = c
	}
	c.failures++
	c.refused++
	c.last = now
	out := authRefusal{log: c.refused == 1, refused: c.refused}
	if c.failures >= AuthFailures {
		c.wait = min(max(2*c.wait, AuthWait), AuthWaitMax)
		c.until = now.Add(c.wait)
		c.failures = 0
		out.log, out.wait = true, c.wait
	}
	return out
}

// succeeded ends addr's burst: a client that has the token is not slowed
// by its earlier mistakes.
func (g *authGuard) succeeded(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.clients, addr)
}

// makeRoom keeps the map under maxAuthClients: bursts that are over go
// first, then the least recent one.
func (g *authGuard) makeRoom(now time.Time) {
	if len(g.clients) < maxAuthClients {
		return
	}
	var oldest string
	for addr, c := range g.clients {
		if now.Sub(c.last) > AuthQuiet && !now.Before(c.until) {
			delete(g.clients, addr)
		} else if oldest == "" || c.last.Before(g.clients[oldest].last) {
			oldest = addr
		}
	}
	if len(g.clients) >= maxAuthClients {
		delete(g.clients, oldest)
	}
}
