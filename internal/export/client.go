package export

import (
	"context"
	"encoding/base64"
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

	"github.com/queen-app/queen-app/internal/redact"
	"github.com/queen-app/queen-app/internal/redirect"
)

// Defaults of a Client. The listing is computed live by the export (three
// git processes per branch), so it gets a long timeout; docs/export.md.
const (
	DefaultListTimeout   = 5 * time.Minute
	DefaultBundleTimeout = 2 * time.Minute
	DefaultRetries       = 2
	DefaultBackoff       = time.Second
	DefaultMaxBackoff    = 15 * time.Second
	DefaultMaxBody       = 128 << 20
)

// Error text kept from an answer. The body read is long enough to hold a
// credential it echoes whole, so the credential is scrubbed before the text
// is cut (an export body cut at byte 200 first once leaked 32 characters of
// the token); what is kept is at most MaxErrorText bytes on one line.
const (
	errorBodyLimit = 8 << 10
	MaxErrorText   = 300
)

// Client reads the export API: GET {base} (the listing) and GET {base}/{issue}
// (one bundle). Change its fields before the first call.
type Client struct {
	ListTimeout   time.Duration // one attempt of List, body included
	BundleTimeout time.Duration // one attempt of Bundle, body included
	Retries       int           // further attempts after a retryable failure
	Backoff       time.Duration // first wait between attempts, doubled each time
	MaxBackoff    time.Duration // cap of that wait
	MaxBody       int64         // bytes read from a response at most

	base  *url.URL
	token string
	http  *http.Client
}

// NewClient returns a client of the export at baseURL (for example
// https://host/queen/export) sending token as a Bearer credential.
// httpClient nil means a client of its own; its Timeout is not used, the
// client's per-call timeouts are. Whatever its own policy, a redirect is
// followed only within the export's origin (redirect.Check): Go's client
// would send the token again to the same host on another port or over
// plain http.
func NewClient(baseURL, token string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("export URL %q: want an absolute http(s) URL", baseURL)
	}
	if u.User != nil {
		return nil, errors.New("export URL: credentials belong in the token, not the URL")
	}
	return &Client{
		ListTimeout:   DefaultListTimeout,
		BundleTimeout: DefaultBundleTimeout,
		Retries:       DefaultRetries,
		Backoff:       DefaultBackoff,
		MaxBackoff:    DefaultMaxBackoff,
		MaxBody:       DefaultMaxBody,
		base:          u,
		token:         token,
		http:          redirect.Client(httpClient),
	}, nil
}

// Listing is the export's GET {base} answer.
type Listing struct {
	Base     string         `json:"base"`
	Count    int            `json:"count"`
	Branches []ListedBranch `json:"branches"`
}

// ListedBranch is one queen-N branch of the listing; Files is a count here.
type ListedBranch struct {
	Issue   int64  `json:"issue"`
	Branch  string `json:"branch"`
	Commits int    `json:"commits"`
	Files   int    `json:"files"`
	Head    string `json:"head"`
}

// Commit is one commit of a bundle's description.
type Commit struct {
	SHA     string `json:"sha"`
	Author  string `json:"author"`
	Date    string `json:"date"`
	Subject string `json:"subject"`
}

// Bundle is the export's GET {base}/{issue} answer: either the live form
// (Commits and Files set) or the stored fallback (Runner and At set).
type Bundle struct {
	Issue   int64    `json:"issue"`
	Branch  string   `json:"branch"`
	Base    string   `json:"base"`
	Commits []Commit `json:"commits,omitempty"`
	Files   []string `json:"files,omitempty"`
	Runner  string   `json:"runner,omitempty"`
	At      string   `json:"at,omitempty"`
	// Data is the decoded bundleBase64.
	Data []byte `json:"-"`
}

// List reads the export's listing.
func (c *Client) List(ctx context.Context) (*Listing, error) {
	var l Listing
	if err := c.get(ctx, c.base.Path, c.ListTimeout, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Bundle reads the bundle of branch queen-<issue>. A 404 is ErrNoBundle and
// a 409 ErrNothingAhead (neither retryable); timeouts and 5xx are retried
// inside the call and, when they persist, returned retryable.
func (c *Client) Bundle(ctx context.Context, issue int64) (*Bundle, error) {
	if issue <= 0 {
		return nil, fmt.Errorf("export bundle: issue %d is not positive", issue)
	}
	path := c.base.Path + "/" + strconv.FormatInt(issue, 10)
	var raw struct {
		Bundle
		BundleBase64 *string `json:"bundleBase64"`
	}
	if err := c.get(ctx, path, c.BundleTimeout, &raw); err != nil {
		return nil, err
	}
	op := "GET " + path
	if raw.BundleBase64 == nil || *raw.BundleBase64 == "" {
		return nil, &Error{Op: op, Err: fmt.Errorf("bundleBase64 missing: %w", ErrNoBundle)}
	}
	data, err := base64.StdEncoding.DecodeString(*raw.BundleBase64)
	if err != nil {
		return nil, &Error{Op: op, Err: fmt.Errorf("bundleBase64: %v", err)}
	}
	if raw.Issue != issue {
		return nil, &Error{Op: op, Err: fmt.Errorf("issue: got %d, asked for %d", raw.Issue, issue)}
	}
	b := raw.Bundle
	b.Data = data
	return &b, nil
}

// get makes up to 1+Retries attempts, waiting with capped exponential
// backoff and jitter between retryable failures.
func (c *Client) get(ctx context.Context, path string, timeout time.Duration, into any) error {
	var err error
	for attempt := 0; ; attempt++ {
		err = c.once(ctx, path, timeout, into)
		if err == nil || !IsRetryable(err) || attempt >= c.Retries {
			return err
		}
		d := c.Backoff << attempt
		if d <= 0 || d > c.MaxBackoff {
			d = c.MaxBackoff
		}
		d = d/2 + rand.N(d/2+1) // jitter: spread retries of many tasks
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (c *Client) once(ctx context.Context, path string, timeout time.Duration, into any) error {
	op := "GET " + path
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	u := *c.base
	u.Path = path
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return &Error{Op: op, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, op, timeout, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, c.MaxBody+1)
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(body, errorBodyLimit))
		e := &Error{Op: op, Status: resp.StatusCode}
		switch {
		case resp.StatusCode == http.StatusNotFound:
			e.Err = ErrNoBundle
		case resp.StatusCode == http.StatusConflict:
			e.Err = ErrNothingAhead
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode == http.StatusRequestTimeout:
			e.Retryable = true
		}
		if e.Err == nil {
			if msg := redact.Line(string(snippet), MaxErrorText, c.token); msg != "" {
				e.Err = errors.New(msg)
			}
		}
		return e
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return c.transportError(ctx, op, timeout, err)
	}
	if int64(len(data)) > c.MaxBody {
		return &Error{Op: op, Err: fmt.Errorf("response larger than %d bytes", c.MaxBody)}
	}
	if err := json.Unmarshal(data, into); err != nil {
		return &Error{Op: op, Err: fmt.Errorf("decoding the answer: %v", err)}
	}
	return nil
}

// transportError turns a failed exchange into an Error without the URL
// (net/url's errors print it whole) and without the token.
func (c *Client) transportError(ctx context.Context, op string, timeout time.Duration, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ctx.Err() == context.DeadlineExceeded {
		return &Error{Op: op, Retryable: true, Err: fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded)}
	}
	if ctx.Err() == context.Canceled {
		return &Error{Op: op, Retryable: true, Err: context.Canceled}
	}
	return &Error{Op: op, Retryable: true, Err: errors.New(redact.String(err.Error(), c.token))}
}
