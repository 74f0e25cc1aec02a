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
	// Remaining is the answer's X-RateLimit-Remaining, -1 when absent;
	// RetryAfter its Retry-After, 0 when absent.
	Remaining  int
	RetryAfter time.Duration
}

// secondaryLimitWords are in every secondary rate limit GitHub words, REST
// or GraphQL, whatever its status ("You have exceeded a secondary rate
// limit").
const secondaryLimitWords = "secondary rate limit"

// limit is the rate limit e reports, if it is one. GitHub answers GraphQL
// limits with HTTP 200: a primary one as RATE_LIMITED or "API rate limit
// exceeded" with nothing remaining, waited until its reset; a secondary one
// in its words, or a limit with requests remaining, waited its Retry-After
// or, naming none, the caller's minute and backoff. Only RATE_LIMITED was
// known, so the rest were retried after a second or two.
func (e *GraphQLError) limit() (verdict, bool) {
	msg := strings.ToLower(e.Message)
	rate := e.Type == "RATE_LIMITED" || strings.Contains(msg, "rate limit")
	switch {
	case strings.Contains(msg, secondaryLimitWords) || rate && e.Remaining > 0:
		if e.RetryAfter > 0 {
			return limited(e.RetryAfter, true), true
		}
		return limited(defaultWait, false), true
	case rate:
		return limited(until(e.Reset), !e.Reset.IsZero()), true
	}
	return verdict{}, false
}

// resourceLimited reports whether err is GitHub's resource limit on a
// GraphQL query as a whole: an error with no path, its partial data
// unusable, that a smaller query does not meet.
func resourceLimited(err error) bool {
	var ge *GraphQLError
	var le *LimitedError
	if !errors.As(err, &ge) || len(ge.Path) > 0 || errors.As(err, &le) {
		return false
	}
	return strings.Contains(ge.Type, "RESOURCE_LIMIT") || strings.Contains(strings.ToLower(ge.Message), "resource limit")
}

// graphQLError is GitHub's error e of an answer with header h.
func graphQLError(typ, message string, h http.Header) *GraphQLError {
	e := &GraphQLError{Type: typ, Message: message, Reset: resetOf(h), Remaining: -1}
	if n, err := strconv.Atoi(h.Get("X-RateLimit-Remaining")); err == nil {
		e.Remaining = n
	}
	if s, err := strconv.ParseInt(h.Get("Retry-After"), 10, 64); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
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
	var le *LimitedError
	if errors.As(err, &le) {
		return limited(le.Wait, true)
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
		if are.RetryAfter != nil && *are.RetryAfter > 0 && retryAfterNamed(are.Response) {
			return limited(*are.RetryAfter, true)
		}
		return limited(defaultWait, false)
	}
	var ge *GraphQLError
	if errors.As(err, &ge) {
		if v, ok := ge.limit(); ok {
			return v
		}
		switch ge.Type {
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

// retryAfterNamed reports whether GitHub named the wait of a secondary
// limit answered as resp: its Retry-After. go-github falls back to
// X-RateLimit-Reset, the primary window's end (49m59s once, with 4,990
// requests remaining), which is no wait GitHub named. Its own local refusal
// (a made-up answer with no header) repeats a Retry-After it was given.
func retryAfterNamed(resp *http.Response) bool {
	return resp == nil || len(resp.Header) == 0 || resp.Header.Get("Retry-After") != ""
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
