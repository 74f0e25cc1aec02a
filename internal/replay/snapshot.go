// Package replay applies the claim rules to a snapshot of dispatch rows
// offline, as if both freeing flags were on, and reports what each row would
// still claim: the engine of `queenctl replay`. No Redis, no network.
package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
)

// Snapshot is a parsed, validated replay snapshot: the clock and the rows in
// input order.
type Snapshot struct {
	TakenAt time.Time
	About   string // what the snapshot is, when it says ("about")
	Rows    []*dispatch.Row
}

// Error names what in a snapshot could not be taken. Row is the index in
// "rows" (-1 for the top level) and Key the row's repo#issue as far as known.
type Error struct {
	Row     int
	Key     string
	Field   string
	Problem string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Row >= 0 {
		b.WriteString("row ")
		b.WriteString(strconv.Itoa(e.Row))
		if e.Key != "" {
			b.WriteString(" (" + e.Key + ")")
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Top-level and row fields besides the Queen-owned ones (dispatch.QueenFields).
var (
	topFields  = map[string]bool{"taken_at": true, "about": true, "rows": true}
	prsFields  = map[string]bool{"read": true, "open": true, "merged": true, "closed_unmerged": true, "read_at": true, "numbers": true, "earlier": true, "pulls": true}
	pullFields = map[string]bool{"number": true, "state": true, "merged": true, "head_sha": true, "created_at": true}
)

// Parse reads a snapshot: {"taken_at": RFC3339, "about": TEXT, "rows": [ROW,
// ...]} ("about" optional: what the snapshot is). It is
// strict: an unknown field, a bad value or a repeated repo and issue is an
// *Error naming the row and the field, so a typo never passes silently.
func Parse(data []byte) (*Snapshot, error) {
	top, err := dispatch.DecodeObject(data)
	if err != nil {
		return nil, &Error{Row: -1, Problem: err.Error()}
	}
	if name := firstUnknown(top, func(n string) bool { return topFields[n] }); name != "" {
		return nil, &Error{Row: -1, Field: shown(name), Problem: "unknown field"}
	}
	s := &Snapshot{}
	raw, ok := top["taken_at"]
	if !ok {
		return nil, &Error{Row: -1, Field: "taken_at", Problem: "required"}
	}
	if s.TakenAt, err = date(raw); err != nil {
		return nil, &Error{Row: -1, Field: "taken_at", Problem: err.Error()}
	}
	if raw, ok := top["about"]; ok && json.Unmarshal(raw, &s.About) != nil {
		return nil, &Error{Row: -1, Field: "about", Problem: "must be a string"}
	}
	raw, ok = top["rows"]
	if !ok {
		return nil, &Error{Row: -1, Field: "rows", Problem: "required"}
	}
	var items []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &items) != nil {
		return nil, &Error{Row: -1, Field: "rows", Problem: "must be an array of rows"}
	}
	seen := make(map[string]int, len(items))
	s.Rows = make([]*dispatch.Row, 0, len(items))
	for i, item := range items {
		r, err := parseRow(i, item)
		if err != nil {
			return nil, err
		}
		k := ghrepo.Key(r.Repo) + "#" + strconv.FormatInt(r.Issue, 10)
		if j, dup := seen[k]; dup {
			return nil, &Error{Row: i, Key: r.Key(), Field: "issue", Problem: fmt.Sprintf("repeats row %d (same repo and issue)", j)}
		}
		seen[k] = i
		s.Rows = append(s.Rows, r)
	}
	return s, nil
}

func parseRow(i int, item json.RawMessage) (*dispatch.Row, error) {
	obj, err := dispatch.DecodeObject(item)
	if err != nil {
		return nil, &Error{Row: i, Problem: "must be a JSON object"}
	}
	e := &Error{Row: i}
	raw, ok := obj["repo"]
	if !ok {
		e.Field, e.Problem = "repo", "required"
		return nil, e
	}
	var repo string
	if json.Unmarshal(raw, &repo) != nil || !ghrepo.Valid(repo) {
		e.Field, e.Problem = "repo", fmt.Sprintf("must be \"owner/name\" (got %s)", clip(raw))
		return nil, e
	}
	e.Key = repo
	raw, ok = obj["issue"]
	if !ok {
		e.Field, e.Problem = "issue", "required"
		return nil, e
	}
	issue, err := dispatch.Issue(raw)
	if err != nil {
		e.Field, e.Problem = "issue", fmt.Sprintf("%v (got %s)", err, clip(raw))
		return nil, e
	}
	r := dispatch.New(repo, issue)
	e.Key = r.Key()
	if name := firstUnknown(obj, func(n string) bool {
		return n == "repo" || n == "issue" || n == "prs" || dispatch.IsQueenField(n)
	}); name != "" {
		e.Field, e.Problem = shown(name), "unknown field"
		return nil, e
	}
	if _, err := r.Apply(obj); err != nil {
		return nil, e.from(err)
	}
	if raw, ok := obj["prs"]; ok {
		if r.PRs, err = parsePRs(raw); err != nil {
			return nil, e.from(err)
		}
		if r.PRs != nil && r.PRs.Listed != nil {
			// The read's PRs as the ledger counts them: for the row's attempt.
			p := r.Attempt().Count(*r.PRs)
			r.PRs = &p
		}
	}
	return r, nil
}

// from fills e from a field error of the row.
func (e *Error) from(err error) *Error {
	var fe *dispatch.FieldError
	if errors.As(err, &fe) {
		e.Field, e.Problem = fe.Field, fe.Problem
	} else {
		e.Problem = err.Error()
	}
	return e
}

// parsePRs reads the recorded pull-request state; null means not read.
// It is either the counts (open, merged, closed_unmerged, numbers, earlier:
// as the ledger records them) or the read's pull requests (pulls: each
// {"number", "state", "merged", "head_sha", "created_at"}, as GitHub lists
// them), which the caller counts for the row's attempt.
func parsePRs(raw json.RawMessage) (*dispatch.PRState, error) {
	if isNull(raw) {
		return nil, nil
	}
	obj, err := dispatch.DecodeObject(raw)
	if err != nil {
		return nil, &dispatch.FieldError{Field: "prs", Problem: "must be an object or null"}
	}
	if name := firstUnknown(obj, func(n string) bool { return prsFields[n] }); name != "" {
		return nil, &dispatch.FieldError{Field: "prs." + shown(name), Problem: "unknown field"}
	}
	p := &dispatch.PRState{}
	for _, name := range sortedNames(obj) {
		v := obj[name]
		fail := func(problem string) error { return &dispatch.FieldError{Field: "prs." + name, Problem: problem} }
		if isNull(v) {
			continue
		}
		switch name {
		case "read":
			if json.Unmarshal(v, &p.Read) != nil {
				return nil, fail("must be true, false or null")
			}
		case "open", "merged", "closed_unmerged":
			n, err := dispatch.Counter(v)
			if err != nil {
				return nil, fail(err.Error())
			}
			switch name {
			case "open":
				p.Open = n
			case "merged":
				p.Merged = n
			default:
				p.ClosedUnmerged = n
			}
		case "read_at":
			t, err := date(v)
			if err != nil {
				return nil, fail(err.Error())
			}
			p.ReadAt = &t
		case "numbers", "earlier":
			var ns []json.RawMessage
			if json.Unmarshal(v, &ns) != nil {
				return nil, fail("must be an array of pull request numbers or null")
			}
			for k, n := range ns {
				num, err := dispatch.Issue(n)
				if err != nil {
					return nil, &dispatch.FieldError{Field: fmt.Sprintf("prs.%s[%d]", name, k), Problem: err.Error()}
				}
				if name == "numbers" {
					p.Numbers = append(p.Numbers, int(num))
				} else {
					p.Earlier = append(p.Earlier, int(num))
				}
			}
		case "pulls":
			if p.Listed, err = parsePulls(v); err != nil {
				return nil, err
			}
		}
	}
	if p.Listed != nil {
		for _, n := range []string{"open", "merged", "closed_unmerged", "numbers", "earlier"} {
			if _, ok := obj[n]; ok {
				return nil, &dispatch.FieldError{Field: "prs.pulls", Problem: "give the pull requests or their counts (" + n + "), not both"}
			}
		}
		if r, ok := obj["read"]; ok && !isNull(r) && !p.Read {
			return nil, &dispatch.FieldError{Field: "prs.pulls", Problem: "a read that failed lists no pull requests"}
		}
		p.Read = true
	}
	return p, nil
}

// parsePulls reads a read's pull requests: each names its number, state
// ("open" or "closed"), merged (optional), head_sha (the head commit) and
// created_at, which tell the row's attempt's PRs from earlier ones.
func parsePulls(raw json.RawMessage) ([]dispatch.PR, error) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, &dispatch.FieldError{Field: "prs.pulls", Problem: "must be an array of pull requests or null"}
	}
	out := make([]dispatch.PR, 0, len(items))
	seen := map[int]bool{}
	for k, item := range items {
		field := func(name string) string { return fmt.Sprintf("prs.pulls[%d].%s", k, name) }
		obj, err := dispatch.DecodeObject(item)
		if err != nil {
			return nil, &dispatch.FieldError{Field: fmt.Sprintf("prs.pulls[%d]", k), Problem: "must be an object"}
		}
		if name := firstUnknown(obj, func(n string) bool { return pullFields[n] }); name != "" {
			return nil, &dispatch.FieldError{Field: field(shown(name)), Problem: "unknown field"}
		}
		for _, name := range []string{"number", "state", "head_sha", "created_at"} {
			if v, ok := obj[name]; !ok || isNull(v) {
				return nil, &dispatch.FieldError{Field: field(name), Problem: "required"}
			}
		}
		var pr dispatch.PR
		n, err := dispatch.Issue(obj["number"])
		if err != nil {
			return nil, &dispatch.FieldError{Field: field("number"), Problem: err.Error()}
		}
		pr.Number = int(n)
		if seen[pr.Number] {
			return nil, &dispatch.FieldError{Field: field("number"), Problem: fmt.Sprintf("repeats #%d", pr.Number)}
		}
		seen[pr.Number] = true
		if json.Unmarshal(obj["state"], &pr.State) != nil || (pr.State != "open" && pr.State != "closed") {
			return nil, &dispatch.FieldError{Field: field("state"), Problem: fmt.Sprintf(`must be "open" or "closed" (got %s)`, clip(obj["state"]))}
		}
		if v, ok := obj["merged"]; ok && !isNull(v) {
			if json.Unmarshal(v, &pr.Merged) != nil {
				return nil, &dispatch.FieldError{Field: field("merged"), Problem: "must be true, false or null"}
			}
			if pr.Merged && pr.State == "open" {
				return nil, &dispatch.FieldError{Field: field("merged"), Problem: "an open pull request is not merged"}
			}
		}
		if json.Unmarshal(obj["head_sha"], &pr.HeadSHA) != nil || !dispatch.ValidHead(pr.HeadSHA) {
			return nil, &dispatch.FieldError{Field: field("head_sha"), Problem: fmt.Sprintf("must be a 40-character lower-case commit id (got %s)", clip(obj["head_sha"]))}
		}
		if pr.CreatedAt, err = date(obj["created_at"]); err != nil {
			return nil, &dispatch.FieldError{Field: field("created_at"), Problem: err.Error()}
		}
		out = append(out, pr)
	}
	return out, nil
}

func date(raw json.RawMessage) (time.Time, error) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return time.Time{}, fmt.Errorf("must be an RFC 3339 date (got %s)", clip(raw))
	}
	return dispatch.ParseDate(s)
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

func sortedNames(obj map[string]json.RawMessage) []string {
	names := make([]string, 0, len(obj))
	for n := range obj {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// firstUnknown is the first name, in sorted order, that known refuses.
func firstUnknown(obj map[string]json.RawMessage, known func(string) bool) string {
	for _, n := range sortedNames(obj) {
		if !known(n) {
			return n
		}
	}
	return ""
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// shown is a field name from the input as an error shows it: quoted unless
// plain, so a name cannot break the one-line error.
func shown(name string) string {
	if plainName.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

// clip shows a bad value in an error without letting it run on.
func clip(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "..."
	}
	return s
}
