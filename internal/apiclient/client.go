// Package apiclient is a Go client of the claims API (internal/api), used by
// queenctl. Errors carry the status and the server's error text, never the
// token.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/redirect"
)

// maxResponseBytes caps an answer read into memory; a page of MaxLimit
// views is far below it.
const maxResponseBytes = 64 << 20

// Client talks to one claims API.
type Client struct {
	base  string // scheme://host[/prefix] without the trailing slash
	token string
	hc    *http.Client

	// Source names the writer in the audit (the X-Queen-Source header);
	// "" leaves the server's default, "api".
	Source string
}

// New returns a client of the API at baseURL (http or https) that sends
// token as its bearer token, over hc (nil: a client of its own). Whatever
// hc's own policy, a redirect is followed only within the API's origin
// (redirect.Check): Go's client would send the token again to the same
// host on another port or over plain http.
func New(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("apiclient: base URL %q is not an http:// or https:// URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("apiclient: base URL %q must have no query, fragment or user", u.Redacted())
	}
	if token == "" {
		return nil, errors.New("apiclient: token is empty")
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), token: token, hc: redirect.Client(hc)}, nil
}

// Error is an answer other than 2xx.
type Error struct {
	Method  string
	Path    string // the request path, without the query
	Status  int
	Message string // the server's error text
	Field   string // the field, parameter or header the server named, if any
}

func (e *Error) Error() string {
	return fmt.Sprintf("claims API %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

func repoPath(repo string) (string, error) {
	if !ghrepo.Valid(repo) {
		return "", fmt.Errorf("apiclient: repo %q is not owner/name", repo)
	}
	owner, name := ghrepo.Split(repo)
	return "/v1/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name), nil
}

func rowPath(repo string, issue int64, what string) (string, error) {
	p, err := repoPath(repo)
	if err != nil {
		return "", err
	}
	if issue < 1 {
		return "", fmt.Errorf("apiclient: issue %d is not a positive number", issue)
	}
	return p + "/" + what + "/" + strconv.FormatInt(issue, 10), nil
}

// do sends one request and decodes a 2xx answer into out.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("claims API %s %s: encode body: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	target := c.base + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return fmt.Errorf("claims API %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Source != "" {
		req.Header.Set(apiwire.SourceHeader, c.Source)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("claims API %s %s: %w", method, path, unwrapURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("claims API %s %s: read answer: %w", method, path, err)
	}
	if len(data) > maxResponseBytes {
		return fmt.Errorf("claims API %s %s: answer larger than %d bytes", method, path, maxResponseBytes)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Method: method, Path: path, Status: resp.StatusCode}
		var body apiwire.Error
		if json.Unmarshal(data, &body) == nil && body.Error != "" {
			e.Message, e.Field = body.Error, body.Field
		} else {
			e.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
		}
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("claims API %s %s: answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

// call is do decoding into a new T; nil on error.
func call[T any](ctx context.Context, c *Client, method, path string, q url.Values, body any) (*T, error) {
	out := new(T)
	if err := c.do(ctx, method, path, q, body, out); err != nil {
		return nil, err
	}
	return out, nil
}

// unwrapURL drops url.Error's repetition of the method and URL, which the
// caller's message already names.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Put upserts the Queen-owned fields in patch on repo#issue: an absent field
// keeps its value, null clears it, an unknown field is refused.
func (c *Client) Put(ctx context.Context, repo string, issue int64, patch map[string]json.RawMessage) (*apiwire.Claim, error) {
	p, err := rowPath(repo, issue, "dispatches")
	if err != nil {
		return nil, err
	}
	if patch == nil {
		patch = map[string]json.RawMessage{}
	}
	return call[apiwire.Claim](ctx, c, http.MethodPut, p, nil, patch)
}

// Get returns the claim view of repo#issue with its rule path and history.
func (c *Client) Get(ctx context.Context, repo string, issue int64) (*apiwire.Detail, error) {
	p, err := rowPath(repo, issue, "claims")
	if err != nil {
		return nil, err
	}
	return call[apiwire.Detail](ctx, c, http.MethodGet, p, nil, nil)
}

// ListOptions filter and page a list. Zero values filter nothing.
type ListOptions struct {
	Repo        string // owner/name; "" lists every repository
	ClaimsIssue *bool
	Claim       string // a claim word
	Cursor      string // from the previous page
	Limit       int    // 0: the server's default
}

// List returns one page of claim views.
func (c *Client) List(ctx context.Context, o ListOptions) (*apiwire.ClaimList, error) {
	q := url.Values{}
	if o.Repo != "" {
		q.Set("repo", o.Repo)
	}
	if o.ClaimsIssue != nil {
		q.Set("claims_issue", strconv.FormatBool(*o.ClaimsIssue))
	}
	if o.Claim != "" {
		q.Set("claim", o.Claim)
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return call[apiwire.ClaimList](ctx, c, http.MethodGet, "/v1/claims", q, nil)
}

// ListAll follows every page from o.Cursor on.
func (c *Client) ListAll(ctx context.Context, o ListOptions) ([]dispatch.View, error) {
	var all []dispatch.View
	seen := map[string]bool{}
	for {
		page, err := c.List(ctx, o)
		if err != nil {
			return all, err
		}
		all = append(all, page.Claims...)
		if page.NextCursor == "" {
			return all, nil
		}
		if seen[page.NextCursor] {
			return all, fmt.Errorf("claims API GET /v1/claims: cursor %q came back twice", page.NextCursor)
		}
		seen[page.NextCursor] = true
		o.Cursor = page.NextCursor
	}
}

// HeldPaths returns the paths repo's rows hold, by path.
func (c *Client) HeldPaths(ctx context.Context, repo string) ([]apiwire.HeldPath, error) {
	p, err := repoPath(repo)
	if err != nil {
		return nil, err
	}
	var out apiwire.HeldPaths
	if err := c.do(ctx, http.MethodGet, p+"/held-paths", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Held, nil
}

// Admission asks which candidates the review-first card admits.
func (c *Client) Admission(ctx context.Context, repo string, candidates []apiwire.Candidate) (*apiwire.Admission, error) {
	p, err := repoPath(repo)
	if err != nil {
		return nil, err
	}
	if candidates == nil {
		candidates = []apiwire.Candidate{}
	}
	body := struct {
		Candidates []apiwire.Candidate `json:"candidates"`
	}{candidates}
	return call[apiwire.Admission](ctx, c, http.MethodPost, p+"/admission", nil, body)
}

// Free is a person's free of repo#issue, with the reason for the audit.
//
// version is the row version the free was decided on (0: whichever is
// current); a row that moved on since answers 409 and is not freed.
func (c *Client) Free(ctx context.Context, repo string, issue int64, reason string, version int64) (*apiwire.Claim, error) {
	return c.override(ctx, repo, issue, "free", reason, version)
}

// Keep is a person's keep of repo#issue: the rules free nothing until a new
// dispatch.
func (c *Client) Keep(ctx context.Context, repo string, issue int64, reason string, version int64) (*apiwire.Claim, error) {
	return c.override(ctx, repo, issue, "keep", reason, version)
}

func (c *Client) override(ctx context.Context, repo string, issue int64, what, reason string, version int64) (*apiwire.Claim, error) {
	p, err := rowPath(repo, issue, "claims")
	if err != nil {
		return nil, err
	}
	body := struct {
		Reason  string `json:"reason"`
		Version int64  `json:"version,omitempty"`
	}{reason, version}
	return call[apiwire.Claim](ctx, c, http.MethodPost, p+"/"+what, nil, body)
}

// Delete removes repo#issue; reason ("" for none) goes to the audit.
func (c *Client) Delete(ctx context.Context, repo string, issue int64, reason string) (*apiwire.Deleted, error) {
	p, err := rowPath(repo, issue, "dispatches")
	if err != nil {
		return nil, err
	}
	var q url.Values
	if reason != "" {
		q = url.Values{"reason": {reason}}
	}
	return call[apiwire.Deleted](ctx, c, http.MethodDelete, p, q, nil)
}

// ExportPush asks for an export:push of repo#issue's judged head now;
// dryRun asks the worker to decide only (an audit entry). The row must be
// accepted with a 40-hex judged_head (409 otherwise).
func (c *Client) ExportPush(ctx context.Context, repo string, issue int64, dryRun bool) (*apiwire.ExportPush, error) {
	p, err := rowPath(repo, issue, "exports")
	if err != nil {
		return nil, err
	}
	body := struct {
		DryRun bool `json:"dry_run"`
	}{dryRun}
	return call[apiwire.ExportPush](ctx, c, http.MethodPost, p+"/push", nil, body)
}
