package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/ledger"
)

// audit reads the audit stream: ?repo=owner/name&issue=N&since=T&limit=N,
// since an RFC 3339 time or a duration back from now (1h).
func (s *server) audit(ctx context.Context, w *responseWriter, r *request) error {
	q, err := query(r, "repo", "issue", "since", "limit")
	if err != nil {
		return err
	}
	f := ledger.AuditFilter{Limit: DefaultLimit}
	if v, ok := q["repo"]; ok {
		if f.Repo, err = parseRepo(v); err != nil {
			return err
		}
	}
	if v, ok := q["issue"]; ok {
		if f.Issue, err = parseIssue(v); err != nil {
			return err
		}
	}
	if v, ok := q["since"]; ok {
		if f.Since, err = parseSince(v, s.now()); err != nil {
			return err
		}
	}
	if v, ok := q["limit"]; ok {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 || f.Limit > MaxLimit {
			return badField("limit", fmt.Sprintf("must be a whole number from 1 to %d", MaxLimit))
		}
	}
	res, err := s.ledger.AuditSince(ctx, f)
	if err != nil {
		return err
	}
	for _, err := range res.Unreadable {
		s.log.Error("audit: an audit stream message is no entry; left out", "err", err.Error())
	}
	out := apiwire.AuditList{Entries: res.Entries, More: res.More}
	if out.Entries == nil {
		out.Entries = []ledger.Entry{}
	}
	w.json(http.StatusOK, out)
	return nil
}

func parseSince(v string, now time.Time) (time.Time, error) {
	// Go also reads "-0" and a comma before the fraction; docs/openapi.yaml's
	// pattern does not, and the description is the rule.
	if !strings.HasPrefix(v, "-") && !strings.Contains(v, ",") {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, nil
		}
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return now.Add(-d), nil
		}
	}
	return time.Time{}, badField("since", fmt.Sprintf("%q is neither an RFC 3339 time nor a duration such as 1h", v))
}
