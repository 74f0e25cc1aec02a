package githubapp

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics receives one call per HTTP exchange with GitHub, token mints
// included.
type Metrics interface {
	// Request records a response status; code 0 means no response arrived.
	Request(code int)
	// RateRemaining records X-RateLimit-Remaining for its resource
	// (X-RateLimit-Resource: core, graphql, ...).
	RateRemaining(resource string, remaining int)
}

// PromMetrics is Metrics as Prometheus collectors.
type PromMetrics struct {
	requests  *prometheus.CounterVec
	remaining *prometheus.GaugeVec
}

// NewPromMetrics registers queen_github_requests_total{code} and
// queen_github_rate_limit_remaining{resource} with reg.
func NewPromMetrics(reg prometheus.Registerer) (*PromMetrics, error) {
	m := &PromMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_github_requests_total",
			Help: "HTTP requests to GitHub by response status (error: no response).",
		}, []string{"code"}),
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "queen_github_rate_limit_remaining",
			Help: "Last X-RateLimit-Remaining GitHub reported, by resource.",
		}, []string{"resource"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.remaining} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Request implements Metrics.
func (m *PromMetrics) Request(code int) {
	label := "error"
	if code > 0 {
		label = strconv.Itoa(code)
	}
	m.requests.WithLabelValues(label).Inc()
}

// RateRemaining implements Metrics.
func (m *PromMetrics) RateRemaining(resource string, remaining int) {
	m.remaining.WithLabelValues(resource).Set(float64(remaining))
}

// wire is the bottom transport: it sets the User-Agent (token mints have
// none) and reports each exchange to Metrics.
type wire struct {
	next      http.RoundTripper
	userAgent string
	metrics   Metrics
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", w.userAgent)
	}
	resp, err := w.next.RoundTrip(req)
	if err == nil {
		resp.Body = &capped{r: resp.Body, left: MaxResponseBytes}
		forgetUnnamedReset(resp)
	}
	if w.metrics == nil {
		return resp, err
	}
	if err != nil {
		w.metrics.Request(0)
		return resp, err
	}
	w.metrics.Request(resp.StatusCode)
	if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
		if n, perr := strconv.Atoi(v); perr == nil {
			res := resp.Header.Get("X-RateLimit-Resource")
			if res == "" {
				res = "core"
			}
			w.metrics.RateRemaining(res, n)
		}
	}
	return resp, err
}

// forgetUnnamedReset drops X-RateLimit-Reset from a 403 that has requests
// remaining and no Retry-After: a secondary limit that names no wait.
// go-github takes that reset, the primary window's, up to an hour out, as
// the secondary limit's end, and refused every later request of the
// installation locally until then, whatever wait the app decided. Nothing
// else reads the reset of an answer with requests remaining.
func forgetUnnamedReset(resp *http.Response) {
	h := resp.Header
	if resp.StatusCode == http.StatusForbidden && h.Get("Retry-After") == "" &&
		h.Get("X-RateLimit-Remaining") != "0" {
		h.Del("X-RateLimit-Reset")
	}
}

// MaxResponseBytes bounds what is read of one GitHub response: a page of 100
// pull requests is well under 1 MiB, a GraphQL batch a few.
const MaxResponseBytes = 32 << 20

// errTooLarge ends a response read past MaxResponseBytes.
var errTooLarge = badAnswer(fmt.Errorf("github response larger than %d bytes", MaxResponseBytes))

// capped fails a read that goes past its limit instead of reading on.
type capped struct {
	r    io.ReadCloser
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.r.Close() }
