package githubapp

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Kind is what the worker should do about a failed GitHub call.
type Kind int

const (
	// None is the kind of a nil error.
	None Kind = iota
	// Retry: an outage (5xx, timeout, network) or an unreadable answer; try
	// again with backoff.
	Retry
	// RateLimited: wait WaitFor(err), then try again.
	RateLimited
	// Permanent: GitHub refused (401, 403 that is not a rate limit, 404,
	// 422, other 4xx); retrying will not help.
	Permanent
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case Retry:
		return "retry"
	case RateLimited:
		return "rate_limited"
	case Permanent:
		return "permanent"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// defaultWait is the wait of a rate limit that names no time (GitHub's
// advice for a secondary limit without Retry-After: at least a minute).
const defaultWait = time.Minute

// GraphQLError is an error GitHub reported inside a GraphQL answer (HTTP 200).
type GraphQLError struct {
	Type    string // RATE_LIMITED, NOT_FOUND, ... ("" when GitHub gave none)
	Message string
	Path    []string
	Reset   time.Time // X-RateLimit-Reset of the answer, zero when absent
}

func (e *GraphQLError) Error() string {
	s := "graphql"
	if e.Type != "" {
		s += " " + e.Type
	}
	if len(e.Path) > 0 {
		s += " at " + strings.Join(e.Path, ".")
	}
	return s + ": " + e.Message
}

// Classify sorts err for the worker.
func Classify(err error) Kind {
	k, _ := classify(err)
	return k
}

// WaitFor is how long to wait before calling GitHub again when err is a rate
// limit; false when it is not one.
func WaitFor(err error) (time.Duration, bool) {
	k, d := classify(err)
	return d, k == RateLimited
}

func classify(err error) (Kind, time.Duration) {
	if err == nil {
		return None, 0
	}
	var rle *github.RateLimitError
	if errors.As(err, &rle) {
		return RateLimited, until(rle.Rate.Reset.Time)
	}
	var are *github.AbuseRateLimitError
	if errors.As(err, &are) {
		if are.RetryAfter != nil && *are.RetryAfter > 0 {
			return RateLimited, *are.RetryAfter
		}
		return RateLimited, defaultWait
	}
	var ge *GraphQLError
	if errors.As(err, &ge) {
		switch ge.Type {
		case "RATE_LIMITED":
			return RateLimited, until(ge.Reset)
		case "NOT_FOUND", "FORBIDDEN":
			return Permanent, 0
		}
		return Retry, 0
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return classifyStatus(er.Response.StatusCode, er.Response.Header, er.Message)
	}
	return Retry, 0 // timeouts, network, context, truncated or undecodable answers
}

func classifyStatus(code int, h http.Header, message string) (Kind, time.Duration) {
	if code == http.StatusForbidden || code == http.StatusTooManyRequests {
		if v := h.Get("Retry-After"); v != "" {
			if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
				return RateLimited, time.Duration(s) * time.Second
			}
			return RateLimited, defaultWait
		}
		if h.Get("X-RateLimit-Remaining") == "0" {
			return RateLimited, until(resetOf(h))
		}
		if code == http.StatusTooManyRequests || strings.Contains(strings.ToLower(message), "rate limit") {
			if r := resetOf(h); !r.IsZero() {
				return RateLimited, until(r)
			}
			return RateLimited, defaultWait
		}
		return Permanent, 0
	}
	switch {
	case code >= 500, code == http.StatusRequestTimeout, code == 0:
		return Retry, 0
	case code >= 400:
		return Permanent, 0
	}
	return Retry, 0
}

func resetOf(h http.Header) time.Time {
	if v, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil && v > 0 {
		return time.Unix(v, 0)
	}
	return time.Time{}
}

// until is the wait until reset, at least a second (clocks differ), and a
// minute when GitHub named no reset.
func until(reset time.Time) time.Duration {
	if reset.IsZero() {
		return defaultWait
	}
	return max(time.Until(reset), time.Second)
}
