package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/apiwire"
)

// WatchOptions choose what Watch follows.
type WatchOptions struct {
	Repo string // owner/name; "" watches every repository
	// After is an audit id to resume after; "" starts after the newest
	// entry at the call (read with GET /v1/audit, "0-0" on an empty
	// stream), so changes written before the first event, while the API
	// restarts, are given too.
	After string
	// IdleTimeout is how long a connection may stay silent (the server
	// pings every 15 s), answer headers included, before it is taken for
	// dead and replaced; 0 is 45 s. The time fn takes is not silence.
	IdleTimeout time.Duration
	// OnRetry, if set, hears why a connection ended or was refused and how
	// long Watch waits before the next one.
	OnRetry func(err error, wait time.Duration)
}

// Event is one event of the watch stream: a change or a reset.
type Event struct {
	Type   string          // apiwire.EventChange or apiwire.EventReset
	ID     string          // the audit id the stream resumes after; a reset has one when the stream holds entries
	Change *apiwire.Change // set for a change
	Reset  *apiwire.Reset  // set for a reset
}

// Watch backoff: the first retry soon, then doubling up to the cap.
const (
	watchRetryMin = 250 * time.Millisecond
	watchRetryMax = 15 * time.Second
	watchIdle     = 45 * time.Second
	// maxEventBytes caps one event's data, all its lines (a claim view with
	// its history).
	maxEventBytes = 8 << 20
)

// Watch follows GET /v1/events, calling fn with each event in order, until
// ctx ends (it then returns ctx.Err()), fn returns an error (returned), or
// the API refuses the request for good (a 4xx other than 429: the token,
// a bad id or repo). A dropped connection, a 5xx or a 429 is retried with
// backoff, resuming with Last-Event-ID after the last change fn was given,
// so no change is lost or given twice.
func (c *Client) Watch(ctx context.Context, o WatchOptions, fn func(Event) error) error {
	q := url.Values{}
	if o.Repo != "" {
		if _, err := repoPath(o.Repo); err != nil {
			return err
		}
		q.Set("repo", o.Repo)
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = watchIdle
	}
	// A stream outlives any whole-request timeout of the client's own.
	hc := *c.hc
	hc.Timeout = 0
	last := o.After
	for failures := 0; ; {
		given := false
		var err error
		if last == "" {
			last, err = c.tail(ctx)
		}
		if err == nil {
			err = c.watchOnce(ctx, &hc, q, last, o.IdleTimeout, func(ev Event) error {
				given = true
				if ev.ID != "" {
					last = ev.ID
				}
				return fn(ev)
			})
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fnErr callbackError
		if errors.As(err, &fnErr) {
			return fnErr.err
		}
		var ae *Error
		if errors.As(err, &ae) && ae.Status/100 == 4 && ae.Status != http.StatusTooManyRequests {
			return err
		}
		// Only a stream that gave an event starts the backoff over: one that
		// the server accepts and ends at once (a row it cannot read, a
		// proxy) would otherwise be asked again every quarter second.
		if given {
			failures = 0
		}
		wait := min(watchRetryMin<<min(failures, 10), watchRetryMax)
		wait = wait/2 + rand.N(wait/2+1)
		var ra retryAfter
		if errors.As(err, &ra) && ra.after > wait {
			wait = ra.after
		}
		failures++
		if o.OnRetry != nil {
			o.OnRetry(err, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// tail is the newest audit id, "0-0" when the stream is empty: every
// entry it will hold comes after it.
func (c *Client) tail(ctx context.Context) (string, error) {
	list, err := c.Audit(ctx, AuditOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	if n := len(list.Entries); n > 0 {
		return list.Entries[n-1].ID, nil
	}
	return "0-0", nil
}

// retryAfter is a refusal with the server's Retry-After.
type retryAfter struct {
	refusal *Error
	after   time.Duration
}

func (e retryAfter) Error() string { return e.refusal.Error() }
func (e retryAfter) Unwrap() error { return e.refusal }

// parseRetryAfter reads Retry-After as RFC 9110 has it: whole seconds or an
// HTTP-date (the wait until then); false when absent, malformed or no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 31); err == nil {
		return time.Duration(n) * time.Second, n > 0
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := at.Sub(now)
	return d, d > 0
}

// callbackError carries fn's error out of watchOnce.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// watchOnce runs one connection and says why it ended.
func (c *Client) watchOnce(ctx context.Context, hc *http.Client, q url.Values, last string, idle time.Duration,
	fn func(Event) error) error {
	const path = "/v1/events"
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	target := c.base + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("claims API GET %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	if last != "" {
		req.Header.Set(apiwire.LastEventIDHeader, last)
	}
	// Silence past idle, before the answer's headers too, means a dead
	// connection: replace it.
	watchdog := time.AfterFunc(idle, func() { cancel(fmt.Errorf("no event or ping for %s", idle)) })
	defer watchdog.Stop()
	resp, err := hc.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		return fmt.Errorf("claims API GET %s: %w", path, unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e := &Error{Method: http.MethodGet, Path: path, Status: resp.StatusCode}
		var body apiwire.Error
		if json.Unmarshal(data, &body) == nil && body.Error != "" {
			e.Message, e.Field = body.Error, body.Field
		} else {
			e.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
		}
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return retryAfter{e, min(d, time.Minute)}
		}
		return e
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return fmt.Errorf("claims API GET %s: answer is %q, not text/event-stream", path, ct)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var typ, id, data strings.Builder
	for {
		line, err := readLine(r)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				err = cause
			}
			return fmt.Errorf("claims API GET %s: stream ended: %w", path, err)
		}
		watchdog.Reset(idle)
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				typ.Reset()
				typ.WriteString(value)
			case "id":
				id.Reset()
				id.WriteString(value)
			case "data":
				if data.Len()+1+len(value) > maxEventBytes {
					return fmt.Errorf("claims API GET %s: an event of more than %d bytes", path, maxEventBytes)
				}
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
			continue
		}
		if data.Len() == 0 { // a retry line or a ping
			typ.Reset()
			id.Reset()
			continue
		}
		ev, err := decodeEvent(typ.String(), id.String(), data.String())
		typ.Reset()
		id.Reset()
		data.Reset()
		if err != nil {
			return fmt.Errorf("claims API GET %s: %w", path, err)
		}
		if ev.Type == "" {
			continue // an event type this client does not know
		}
		watchdog.Stop() // fn's time is not the server's silence
		if err := fn(ev); err != nil {
			return callbackError{err}
		}
		watchdog.Reset(idle)
	}
}

func decodeEvent(typ, id, data string) (Event, error) {
	switch typ {
	case apiwire.EventChange:
		ch := new(apiwire.Change)
		if err := json.Unmarshal([]byte(data), ch); err != nil || id == "" {
			return Event{}, fmt.Errorf("change event %q is not the expected JSON with an id: %v", id, err)
		}
		return Event{Type: typ, ID: id, Change: ch}, nil
	case apiwire.EventReset:
		rs := new(apiwire.Reset)
		if err := json.Unmarshal([]byte(data), rs); err != nil {
			return Event{}, fmt.Errorf("reset event is not the expected JSON: %v", err)
		}
		return Event{Type: typ, ID: id, Reset: rs}, nil
	}
	return Event{}, nil
}

// readLine reads one line of at most maxEventBytes without its end.
func readLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		chunk, err := r.ReadSlice('\n')
		b.Write(chunk)
		if b.Len() > maxEventBytes {
			return "", fmt.Errorf("a line longer than %d bytes", maxEventBytes)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), "\r"), nil
	}
}
