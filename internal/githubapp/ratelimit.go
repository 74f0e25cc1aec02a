package githubapp

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// LimitedError is a request of an installation not sent, or an answer not
// used, because GitHub's headers said the installation's resource (core,
// graphql, search) had no request remaining until Until. Classify makes it
// RateLimited with the wait Wait, named.
type LimitedError struct {
	Resource string
	Until    time.Time
	Wait     time.Duration
	Err      error // the answer's own error, when there was an answer
}

func (e *LimitedError) Error() string {
	s := fmt.Sprintf("github %s rate limit: none remaining until %s (%s)", e.Resource, e.Until.UTC().Format(time.RFC3339), e.Wait.Round(time.Second))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *LimitedError) Unwrap() error { return e.Err }

// limits remembers, per resource, until when an installation has no request
// left. GitHub's x-ratelimit-remaining and x-ratelimit-reset are the truth
// whatever the status or the body: an answer with 0 remaining holds every
// later request of that resource until the reset, REST and GraphQL alike.
type limits struct {
	now   func() time.Time
	mu    sync.Mutex
	until map[string]time.Time
}

// resourceOf is the rate-limit resource a request counts against, as GitHub
// names it in x-ratelimit-resource.
func resourceOf(r *http.Request) string {
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/graphql"):
		return "graphql"
	case strings.Contains(p, "/search/"):
		return "search"
	}
	return "core"
}

// exhausted is the limit an answer's headers declare: none remaining with
// a reset still ahead. ok is false for any other answer.
func (l *limits) exhausted(req *http.Request, h http.Header) (resource string, until time.Time, ok bool) {
	if h.Get("X-RateLimit-Remaining") != "0" {
		return "", time.Time{}, false
	}
	until = resetOf(h)
	if until.IsZero() || !until.After(l.now()) {
		return "", time.Time{}, false
	}
	resource = h.Get("X-RateLimit-Resource")
	if resource == "" {
		resource = resourceOf(req)
	}
	return resource, until, true
}

// refusal is the error of a request sent while its resource is held, nil
// when it may go.
func (l *limits) refusal(resource string, cause error) *LimitedError {
	l.mu.Lock()
	until := l.until[resource]
	l.mu.Unlock()
	now := l.now()
	if !until.After(now) {
		return nil
	}
	return &LimitedError{Resource: resource, Until: until, Wait: max(until.Sub(now), time.Second), Err: cause}
}

func (l *limits) hold(resource string, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until.After(l.until[resource]) {
		l.until[resource] = until
	}
}

// answered is the limit err meets when the answer resp (of req) declared
// none remaining; err otherwise. A GraphQL answer that failed in any shape
// (no type, another message, no data) is such a limit when its headers say
// so.
func (l *limits) answered(req *http.Request, resp *http.Response, err error) error {
	if err == nil || resp == nil {
		return err
	}
	if res, until, ok := l.exhausted(req, resp.Header); ok {
		l.hold(res, until)
		if e := l.refusal(res, err); e != nil {
			return e
		}
	}
	return err
}

// gate is an installation's transport: it sends no request whose resource
// is held, and holds a resource when an answer says none is remaining.
type gate struct {
	next   http.RoundTripper
	limits *limits
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	if e := g.limits.refusal(resourceOf(req), nil); e != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, e
	}
	resp, err := g.next.RoundTrip(req)
	if err == nil {
		if res, until, ok := g.limits.exhausted(req, resp.Header); ok {
			g.limits.hold(res, until)
		}
	}
	return resp, err
}
