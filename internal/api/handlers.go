package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/rules"
)

// List limits.
const (
	DefaultLimit   = apiwire.DefaultLimit
	MaxLimit       = apiwire.MaxLimit
	defaultHistory = 20
	maxReasonBytes = 1000
	maxCandidates  = 1000
	// maxScan bounds the rows one list request reads to fill a filtered
	// page; a page may then come back short, with a cursor to go on.
	maxScan = 20 * MaxLimit
)

func (s *server) putDispatch(ctx context.Context, w *responseWriter, r *request) error {
	if _, err := query(r); err != nil {
		return err
	}
	obj, err := readObject(w, r)
	if err != nil {
		return err
	}
	if err := checkPathFields(obj, r); err != nil {
		return err
	}
	res, err := s.ledger.Upsert(ctx, r.repo, r.issue, obj, audit.API(r.source))
	if err != nil {
		return err
	}
	w.json(http.StatusOK, apiwire.Claim{View: res.Row.View(s.now()), Outcome: res.Outcome, Warnings: res.Row.Warnings()})
	return nil
}

func (s *server) deleteDispatch(ctx context.Context, w *responseWriter, r *request) error {
	q, err := query(r, "reason")
	if err != nil {
		return err
	}
	if len(q["reason"]) > maxReasonBytes {
		return badField("reason", fmt.Sprintf("longer than %d bytes", maxReasonBytes))
	}
	src := audit.API(r.source)
	src.Reason = q["reason"]
	res, err := s.ledger.Delete(ctx, r.repo, r.issue, src)
	if err != nil {
		return err
	}
	w.json(http.StatusOK, apiwire.Deleted{Repo: r.repo, Issue: r.issue, Outcome: res.Outcome, Version: res.Entry.Version})
	return nil
}

func (s *server) getClaim(ctx context.Context, w *responseWriter, r *request) error {
	q, err := query(r, "history")
	if err != nil {
		return err
	}
	n := int64(defaultHistory)
	if v, ok := q["history"]; ok {
		if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 1 || n > MaxLimit {
			return badField("history", fmt.Sprintf("must be a whole number from 1 to %d", MaxLimit))
		}
	}
	d, err := s.detail(ctx, r.repo, r.issue, n)
	if err != nil {
		return err
	}
	w.json(http.StatusOK, d)
	return nil
}

// detail is a row's claim view as GET .../claims/{issue} serves it, with
// its n most recent audit entries; the watch stream sends the same.
func (s *server) detail(ctx context.Context, repo string, issue, n int64) (*apiwire.Detail, error) {
	rec, err := s.ledger.Get(ctx, repo, issue)
	if err != nil {
		return nil, err
	}
	hist, err := s.ledger.History(ctx, repo, issue, n)
	if err != nil {
		return nil, err
	}
	now := s.now()
	return &apiwire.Detail{View: rec.View(now), Kept: rec.Pin, Explain: dispatch.Explain(&rec.Row, now), History: hist}, nil
}

func (s *server) listClaims(ctx context.Context, w *responseWriter, r *request) error {
	q, err := query(r, "repo", "claims_issue", "claim", "cursor", "limit")
	if err != nil {
		return err
	}
	repo := q["repo"]
	if _, ok := q["repo"]; ok {
		if repo, err = parseRepo(repo); err != nil {
			return err
		}
	}
	var claimsIssue *bool
	if v, ok := q["claims_issue"]; ok {
		b, err := parseBool(v)
		if err != nil {
			return badField("claims_issue", err.Error())
		}
		claimsIssue = &b
	}
	claim, filterClaim := q["claim"]
	if filterClaim {
		if _, ok := rules.ParseClaim(claim); !ok {
			return badField("claim", fmt.Sprintf("%q is not one of running, accepted, rejected, awaitingReview, failed, cancelled", claim))
		}
	}
	limit := DefaultLimit
	if v, ok := q["limit"]; ok {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxLimit {
			return badField("limit", fmt.Sprintf("must be a whole number from 1 to %d", MaxLimit))
		}
	}
	cursor := q["cursor"]
	if err := checkCursor(cursor, repo); err != nil {
		return err
	}
	now := s.now()
	out := apiwire.ClaimList{Claims: []dispatch.View{}}
	for scanned := 0; ; {
		rows, next, err := s.ledger.List(ctx, repo, cursor, limit-len(out.Claims))
		if err != nil {
			return err
		}
		scanned += len(rows)
		for _, rec := range rows {
			v := rec.View(now)
			if (filterClaim && v.Claim != claim) || (claimsIssue != nil && v.ClaimsIssue != *claimsIssue) {
				continue
			}
			out.Claims = append(out.Claims, v)
		}
		cursor = next
		if next == "" || len(out.Claims) == limit || scanned >= maxScan {
			break
		}
	}
	out.NextCursor = cursor
	w.json(http.StatusOK, out)
	return nil
}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// checkCursor holds a cursor to the shape the ledger gives ("owner/name#N"),
// so a bad one is the caller's 400 and not the server's 500.
func checkCursor(cursor, repo string) error {
	if cursor == "" {
		return nil
	}
	cr, n, ok := strings.Cut(cursor, "#")
	issue, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || issue < 1 || !ghrepo.Valid(cr) || (repo != "" && !ghrepo.Same(cr, repo)) {
		return badField("cursor", "not a cursor this list gave")
	}
	return nil
}

func (s *server) heldPaths(ctx context.Context, w *responseWriter, r *request) error {
	if _, err := query(r); err != nil {
		return err
	}
	now := s.now()
	out := apiwire.HeldPaths{Held: []apiwire.HeldPath{}}
	err := s.ledger.Holding(ctx, r.repo, now, func(rows []*ledger.Record) error {
		for _, rec := range rows {
			v := rec.View(now) // held_paths is empty unless holds_files
			for _, p := range v.HeldPaths {
				out.Held = append(out.Held, apiwire.HeldPath{Path: p, Issue: v.Issue, Stage: v.Stage, Until: v.HeldUntil})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(out.Held, func(i, j int) bool {
		a, b := out.Held[i], out.Held[j]
		return a.Path < b.Path || (a.Path == b.Path && a.Issue < b.Issue)
	})
	w.json(http.StatusOK, out)
	return nil
}

func (s *server) admission(ctx context.Context, w *responseWriter, r *request) error {
	if _, err := query(r); err != nil {
		return err
	}
	obj, err := readObject(w, r)
	if err != nil {
		return err
	}
	cands, err := parseCandidates(obj)
	if err != nil {
		return err
	}
	n, err := s.ledger.ReviewQueueLen(ctx, r.repo)
	if err != nil {
		return err
	}
	queue := uint32(min(n, math.MaxUint32))
	// Only the candidates' own rows say which are send-backs.
	issues := make([]int64, len(cands))
	for i, c := range cands {
		issues[i] = c.Issue
	}
	rows, err := s.ledger.GetMany(ctx, r.repo, issues)
	if err != nil {
		return err
	}
	sentBack := map[int64]bool{}
	for _, rec := range rows {
		sentBack[rec.Issue] = rec.ReviewWord() == "sendBack"
	}
	out := apiwire.Admission{Queue: queue, Admitted: []int64{}, Held: []int64{}}
	for _, c := range cands {
		if !s.reviewFirst || rules.Admits(rules.KindOf(c.OwnerAssigned, sentBack[c.Issue]), queue) {
			out.Admitted = append(out.Admitted, c.Issue)
		} else {
			out.Held = append(out.Held, c.Issue)
		}
	}
	if s.reviewFirst && rules.RoundRefused(uint32(len(cands)), uint32(len(out.Admitted))) {
		text := rules.RefusalText(queue)
		out.Refusal = &text
	}
	w.json(http.StatusOK, out)
	return nil
}

// parseCandidates reads {"candidates": [{"issue": N, "owner_assigned": b}]},
// naming the first bad field by its place.
func parseCandidates(obj map[string]json.RawMessage) ([]apiwire.Candidate, error) {
	if err := onlyFields(obj, "", "candidates"); err != nil {
		return nil, err
	}
	raw, ok := obj["candidates"]
	if !ok {
		return nil, badField("candidates", "is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, badField("candidates", "must be an array")
	}
	if len(items) > maxCandidates {
		return nil, badField("candidates", fmt.Sprintf("more than %d", maxCandidates))
	}
	out := make([]apiwire.Candidate, 0, len(items))
	seen := map[int64]int{}
	for i, it := range items {
		at := fmt.Sprintf("candidates[%d]", i)
		var c map[string]json.RawMessage
		if err := json.Unmarshal(it, &c); err != nil || c == nil {
			return nil, badField(at, "must be an object")
		}
		if err := onlyFields(c, at+".", "issue", "owner_assigned"); err != nil {
			return nil, err
		}
		rawIssue, ok := c["issue"]
		if !ok {
			return nil, badField(at+".issue", "is required")
		}
		issue, err := dispatch.Issue(rawIssue)
		if err != nil {
			return nil, badField(at+".issue", err.Error())
		}
		if j, dup := seen[issue]; dup {
			return nil, badField(at+".issue", fmt.Sprintf("%d is also candidates[%d]", issue, j))
		}
		seen[issue] = i
		cand := apiwire.Candidate{Issue: issue}
		if rawOwner, ok := c["owner_assigned"]; ok {
			if err := json.Unmarshal(rawOwner, &cand.OwnerAssigned); err != nil || string(rawOwner) == "null" {
				return nil, badField(at+".owner_assigned", "must be true or false")
			}
		}
		out = append(out, cand)
	}
	return out, nil
}

func (s *server) free(ctx context.Context, w *responseWriter, r *request) error {
	return s.override(ctx, w, r, s.ledger.Free)
}

func (s *server) keep(ctx context.Context, w *responseWriter, r *request) error {
	return s.override(ctx, w, r, s.ledger.Keep)
}

type overrideFunc func(ctx context.Context, repo string, issue int64, src audit.Source, version int64) (ledger.Result, error)

// override is a person's free or keep: the reason goes to the audit.
func (s *server) override(ctx context.Context, w *responseWriter, r *request, do overrideFunc) error {
	if _, err := query(r); err != nil {
		return err
	}
	obj, err := readObject(w, r)
	if err != nil {
		return err
	}
	if err := onlyFields(obj, "", "reason", "version"); err != nil {
		return err
	}
	// The version the person looked at: a row that moved on since (a new
	// dispatch) is not overridden blind.
	var version int64
	if raw, ok := obj["version"]; ok {
		if json.Unmarshal(raw, &version) != nil || version < 1 {
			return badField("version", "must be the row version the override was decided on (a positive whole number)")
		}
	}
	raw, ok := obj["reason"]
	var reason string
	if !ok || json.Unmarshal(raw, &reason) != nil || strings.TrimSpace(reason) == "" {
		return badField("reason", "is required: a non-empty string saying why")
	}
	if len(reason) > maxReasonBytes || !utf8.ValidString(reason) {
		return badField("reason", fmt.Sprintf("must be valid text of at most %d bytes", maxReasonBytes))
	}
	res, err := do(ctx, r.repo, r.issue, audit.Manual(r.source, strings.TrimSpace(reason)), version)
	if version > 0 && errors.Is(err, ledger.ErrConflict) {
		return &apiError{code: http.StatusConflict, field: "version",
			msg: fmt.Sprintf("version: the row moved on since version %d (a new dispatch or decision); read it again", version)}
	}
	if err != nil {
		return err
	}
	w.json(http.StatusOK, apiwire.Claim{View: res.Row.View(s.now()), Outcome: res.Outcome})
	return nil
}
