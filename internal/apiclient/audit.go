package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/queen-app/queen-app/internal/apiwire"
)

// AuditOptions filter the audit stream. Zero values filter nothing.
type AuditOptions struct {
	Repo  string // owner/name
	Issue int64
	Since string // an RFC 3339 time or a duration back from the server's now, e.g. "1h"
	Limit int    // 0: the server's default
}

// Audit reads the newest matching audit entries, newest last.
func (c *Client) Audit(ctx context.Context, o AuditOptions) (*apiwire.AuditList, error) {
	q := url.Values{}
	if o.Repo != "" {
		q.Set("repo", o.Repo)
	}
	if o.Issue > 0 {
		q.Set("issue", strconv.FormatInt(o.Issue, 10))
	}
	if o.Since != "" {
		q.Set("since", o.Since)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return call[apiwire.AuditList](ctx, c, http.MethodGet, "/v1/audit", q, nil)
}
