package dispatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/rules"
)

// FieldError names the field of a row that could not be taken.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// QueenFields are the fields the Queen owns and may write.
var QueenFields = []string{
	"branch", "started", "dispatched_at", "finished_at", "review_state",
	"send_backs", "ceiling", "ceiling_releases", "criteria", "free_attempts",
	"reviewer_misses", "owned_paths", "judged_head", "reaped", "issue_open",
	"owner_assigned",
}

var queenField = func() map[string]bool {
	m := make(map[string]bool, len(QueenFields))
	for _, f := range QueenFields {
		m[f] = true
	}
	return m
}()

// IsQueenField reports whether name is a field the Queen owns.
func IsQueenField(name string) bool { return queenField[name] }

// DecodeObject splits a JSON object into its fields, refusing anything that
// is not one object.
func DecodeObject(data []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	if dec.More() {
		return nil, fmt.Errorf("not a JSON object: data after the object")
	}
	return obj, nil
}

// Apply writes the Queen-owned fields present in obj onto r: an absent field
// keeps its value, null clears it (a counter to 0, the ceiling to its
// default). Other names are returned sorted as unknown, for the caller to
// refuse or to list. A bad value stops at the first field, in name order,
// and leaves r unchanged.
func (r *Row) Apply(obj map[string]json.RawMessage) (unknown []string, err error) {
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	next := *r
	for _, name := range names {
		if !queenField[name] {
			unknown = append(unknown, name)
			continue
		}
		if err := next.set(name, obj[name]); err != nil {
			return nil, err
		}
	}
	*r = next
	return unknown, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func (r *Row) set(name string, raw json.RawMessage) error {
	fail := func(problem string) error { return &FieldError{Field: name, Problem: problem} }
	null := isNull(raw)
	switch name {
	case "branch":
		if null {
			r.Branch = ""
			return nil
		}
		s, err := str(raw)
		if err != nil || s != BranchOf(r.Issue) {
			return fail(fmt.Sprintf("must be %q or null: queen-app watches and publishes only the branch queen-<issue>", BranchOf(r.Issue)))
		}
		r.Branch = s
	case "started", "reaped", "owner_assigned":
		var b bool
		if !null {
			if err := json.Unmarshal(raw, &b); err != nil {
				return fail("must be true, false or null")
			}
		}
		switch name {
		case "started":
			r.Started = b
		case "reaped":
			r.Reaped = b
		default:
			r.OwnerAssigned = b
		}
	case "dispatched_at", "finished_at":
		var t *time.Time
		if !null {
			s, err := str(raw)
			if err != nil {
				return fail("must be an RFC 3339 date or null")
			}
			v, err := ParseDate(s)
			if err != nil {
				return fail(err.Error())
			}
			t = &v
		}
		if name == "dispatched_at" {
			r.DispatchedAt = t
		} else {
			r.FinishedAt = t
		}
	case "review_state", "judged_head":
		var p *string
		if !null {
			s, err := str(raw)
			if err != nil {
				return fail("must be a string or null")
			}
			p = &s
		}
		if name == "review_state" {
			r.ReviewState = p
			return nil
		}
		if p != nil {
			s := strings.ToLower(*p)
			if !ValidHead(s) {
				return fail("must be a commit id of 40 hex digits or null")
			}
			p = &s
		}
		r.JudgedHead = p
	case "send_backs", "ceiling", "ceiling_releases", "free_attempts", "reviewer_misses":
		var n uint32
		if null && name == "ceiling" {
			n = rules.DefaultSendBackCeiling
		} else if !null {
			v, err := Counter(raw)
			if err != nil {
				return fail(err.Error())
			}
			n = v
		}
		switch name {
		case "send_backs":
			r.SendBacks = n
		case "ceiling":
			r.Ceiling = n
		case "ceiling_releases":
			r.CeilingRelease = n
		case "free_attempts":
			r.FreeAttempts = n
		default:
			r.ReviewerMisses = n
		}
	case "criteria":
		if null {
			r.Criteria = nil
			return nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fail("must be an array or null")
		}
		if items == nil {
			items = []json.RawMessage{}
		}
		r.Criteria = items
	case "owned_paths":
		if null {
			r.OwnedPaths = nil
			return nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fail("must be an array of paths or null")
		}
		paths := make([]string, 0, len(items))
		for i, it := range items {
			s, err := str(it)
			if err != nil || s == "" {
				return &FieldError{Field: fmt.Sprintf("owned_paths[%d]", i), Problem: "must be a non-empty string"}
			}
			paths = append(paths, s)
		}
		r.OwnedPaths = paths
	case "issue_open":
		var p *bool
		if !null {
			var b bool
			if err := json.Unmarshal(raw, &b); err != nil {
				return fail("must be true, false or null")
			}
			p = &b
		}
		r.IssueOpen = p
	}
	return nil
}

// ParseDate reads an RFC 3339 date as UTC. An offset can carry 0000 or
// 9999 past what JSON (and so the ledger) stores: such a date is refused.
func ParseDate(s string) (time.Time, error) {
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 date", s)
	}
	v = v.UTC()
	if v.Year() < 0 || v.Year() > 9999 {
		return time.Time{}, fmt.Errorf("%q is outside the years 0000 to 9999 in UTC", s)
	}
	return v, nil
}

func str(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("must be a string")
	}
	return s, nil
}

// Counter reads a non-negative whole number that fits 32 bits.
func Counter(raw json.RawMessage) (uint32, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, fmt.Errorf("must be a number")
	}
	switch {
	case f < 0:
		return 0, fmt.Errorf("must not be negative (got %v)", f)
	case f != math.Trunc(f):
		return 0, fmt.Errorf("must be a whole number (got %v)", f)
	case f > math.MaxUint32:
		return 0, fmt.Errorf("must be at most %d (got %v)", uint32(math.MaxUint32), f)
	}
	return uint32(f), nil
}

// Issue reads a positive issue number.
func Issue(raw json.RawMessage) (int64, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f < 1 || f != math.Trunc(f) || f > 1e10 {
		return 0, fmt.Errorf("must be a positive whole number")
	}
	return int64(f), nil
}

// Warning names a field whose value was taken but that the rules read as
// something else than its writer may mean; Known lists the values they know.
type Warning struct {
	Field   string   `json:"field"`
	Message string   `json:"message"`
	Known   []string `json:"known,omitempty"`
}

// Warnings are r's fields that were kept but are not the Queen's words: a
// review_state outside rules.ReviewWords reads as the cards' "other" (an
// unreviewed verdict), so a typo of accept would leave the row awaiting
// review for ever. nil when there are none.
func (r *Row) Warnings() []Warning {
	w := r.ReviewWord()
	if w == "" || rules.VerdictOf(w) != rules.VerdictOther {
		return nil
	}
	known := rules.ReviewWords()
	return []Warning{{
		Field: "review_state",
		Message: fmt.Sprintf("review_state: %q is not one of the Queen's words (%s); kept, and read as \"other\"",
			w, strings.Join(known, ", ")),
		Known: known,
	}}
}
