package api

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"time"
)

// Wrong tokens are throttled per client address: after AuthFailures wrong
// tokens, further wrong tokens from that address are answered 429 with
// Retry-After for AuthWait, twice as long each further time in the same
// burst, up to AuthWaitMax. A burst ends after AuthQuiet without a
// refusal. The token is compared first: a right token is always served,
// whatever wrong ones came from its address (behind an Ingress or a mesh
// sidecar every client shares one).
const (
	AuthFailures = 10
	AuthWait     = time.Second
	AuthWaitMax  = 5 * time.Minute
	AuthQuiet    = time.Minute
	// maxAuthClients bounds the addresses remembered; past it the least
	// recently refused goes, in constant time.
	maxAuthClients = 10_000
)

// authGuard remembers the recent refusals of each client address, the
// most recently refused first.
type authGuard struct {
	mu      sync.Mutex
	clients map[string]*list.Element // of *authClient
	recent  *list.List               // front: the latest refusal
}

// authClient is one address's current burst of refusals.
type authClient struct {
	addr     string
	failures int           // wrong tokens since the burst began or its last wait
	refused  int           // every refusal of the burst, waits included
	last     time.Time     // the burst's latest refusal
	until    time.Time     // wrong tokens answered 429 until then
	wait     time.Duration // the burst's latest wait
}

func newAuthGuard() *authGuard {
	return &authGuard{clients: map[string]*list.Element{}, recent: list.New()}
}

// clientAddr is the address the request came from, without its port.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// authRefusal is what refuse reports of a wrong token.
type authRefusal struct {
	throttled time.Duration // > 0: answer 429, retry after this
	log       bool          // a Warn line is due: the burst began, or a wait did
	refused   int           // the burst's refusals so far
	wait      time.Duration // > 0: the wait that began
}

// refuse counts a wrong token from addr: during a wait it is throttled,
// otherwise a failure that may begin the next wait.
func (g *authGuard) refuse(addr string, now time.Time) authRefusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	var c *authClient
	if el := g.clients[addr]; el != nil {
		c = el.Value.(*authClient)
		if now.Sub(c.last) > AuthQuiet && !now.Before(c.until) {
			*c = authClient{addr: addr} // that burst is over
		}
		g.recent.MoveToFront(el)
	} else {
		if len(g.clients) >= maxAuthClients {
			oldest := g.recent.Back()
			g.recent.Remove(oldest)
			delete(g.clients, oldest.Value.(*authClient).addr)
		}
		c = &authClient{addr: addr}
		g.clients[addr] = g.recent.PushFront(c)
	}
	c.refused++
	c.last = now
	if now.Before(c.until) {
		return authRefusal{throttled: c.until.Sub(now), refused: c.refused}
	}
	c.failures++
	out := authRefusal{log: c.refused == 1, refused: c.refused}
	if c.failures >= AuthFailures {
		c.wait = min(max(2*c.wait, AuthWait), AuthWaitMax)
		c.until = now.Add(c.wait)
		c.failures = 0
		out.log, out.wait = true, c.wait
	}
	return out
}
