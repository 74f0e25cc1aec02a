package githubapp

import (
	"encoding/json"
	"errors"
	"fmt"
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
	// Retry: an outage (5xx, timeout, network); wait and try again
	// without counting it against the task.
	Retry
	// RateLimited: wait WaitFor(err), then try again.
	RateLimited
	// Permanent: GitHub refused (401, 403 that is not a rate limit, 404,
	// 422, other 4xx); retrying will not help.
	Permanent
	// BadAnswer: GitHub answered, but the answer cannot be used (it does
	// not decode, is larger than MaxResponseBytes, has more than 100 pages
	// or lacks what was asked). Retried with backoff, each try counting, and
	// archived with its reason: waiting would park it forever.
	BadAnswer
)

// ErrBadAnswer marks an answer that cannot be used; see BadAnswer.
var ErrBadAnswer = errors.New("unusable answer from GitHub")

// badAnswer wraps err as ErrBadAnswer.
func badAnswer(err error) error { return fmt.Errorf("%w: %w", ErrBadAnswer, err) }

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
	case BadAnswer:
		return "bad_answer"
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
func Classify(err error) Kind { return classify(err).kind }

// WaitFor is how long to wait before calling GitHub again when err is a rate
// limit; false when it is not one.
func WaitFor(err error) (time.Duration, bool) {
	v := classify(err)
	return v.wait, v.kind == RateLimited
}

// NamedWait reports whether GitHub named the wait of a rate limit
// (Retry-After, or a reset with nothing remaining). When it did not, its
// guidance for secondary limits is to wait at least a minute and longer at
// each repeat, which the caller does: a 429 without Retry-After once parked
// a task for the hour until X-RateLimit-Reset.
func NamedWait(err error) bool { return classify(err).named }

type verdict struct {
	kind  Kind
	wait  time.Duration
	named bool
}

func limited(wait time.Duration, named bool) verdict {
	return verdict{kind: RateLimited, wait: wait, named: named}
}

func classify(err error) verdict {
	if err == nil {
		return verdict{kind: None}
	}
	if errors.Is(err, ErrBadAnswer) {
		return verdict{kind: BadAnswer}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return verdict{kind: BadAnswer}
	}
	var rle *github.RateLimitError
	if errors.As(err, &rle) {
		return limited(until(rle.Rate.Reset.Time), !rle.Rate.Reset.Time.IsZero())
	}
	var are *github.AbuseRateLimitError
	if errors.As(err, &are) {
		if are.RetryAfter != nil && *are.RetryAfter > 0 {
			return limited(*are.RetryAfter, true)
		}
		return limited(defaultWait, false)
	}
	var ge *GraphQLError
	if errors.As(err, &ge) {
		switch ge.Type {
		case "RATE_LIMITED":
			return limited(until(ge.Reset), !ge.Reset.IsZero())
		case "NOT_FOUND", "FORBIDDEN":
			return verdict{kind: Permanent}
		}
		return verdict{kind: Retry}
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return classifyStatus(er.Response.StatusCode, er.Response.Header, er.Message)
	}
	return verdict{kind: Retry} // timeouts, network, context, a connection cut mid-answer
}

func classifyStatus(code int, h http.Header, message string) verdict {
	if code == http.StatusForbidden || code == http.StatusTooManyRequests {
		if v := h.Get("Retry-After"); v != "" {
			if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
				return limited(time.Duration(s)*time.Second, true)
			}
			return limited(defaultWait, false)
		}
		if h.Get("X-RateLimit-Remaining") == "0" {
			r := resetOf(h)
			return limited(until(r), !r.IsZero())
		}
		if code == http.StatusTooManyRequests || strings.Contains(strings.ToLower(message), "rate limit") {
			return limited(defaultWait, false) // a secondary limit: at least a minute
		}
		return verdict{kind: Permanent}
	}
	switch {
	case code >= 500, code == http.StatusRequestTimeout, code == 0:
		return verdict{kind: Retry}
	case code >= 400:
		return verdict{kind: Permanent}
	}
	return verdict{kind: Retry}
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
