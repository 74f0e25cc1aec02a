package dispatch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 10, 8, 16, 0, 0, 0, time.UTC)

func row(t *testing.T, body string) *Row {
	t.Helper()
	obj, err := DecodeObject([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r := New("hive/t27", 9111)
	unknown, err := r.Apply(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) > 0 {
		t.Fatalf("unknown fields %v", unknown)
	}
	return r
}

func ago(m int) string { return now.Add(-time.Duration(m) * time.Minute).Format(time.RFC3339) }

func TestApplyAbsentKeepsNullClearsUnknownListed(t *testing.T) {
	r := row(t, `{"finished_at":"`+ago(10)+`","review_state":"sendBack","send_backs":1,"ceiling":3,
		"criteria":["builds"],"owned_paths":["a/b.rs"],"judged_head":"`+strings.Repeat("ab", 20)+`","issue_open":false}`)
	obj, _ := DecodeObject([]byte(`{"review_state":null,"ceiling":null,"criteria":null,"typo_field":1,"issue_open":null}`))
	unknown, err := r.Apply(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "typo_field" {
		t.Fatalf("unknown = %v, want [typo_field]", unknown)
	}
	if r.ReviewState != nil || r.Ceiling != 2 || r.Criteria != nil || r.IssueOpen != nil {
		t.Fatalf("null did not clear: %+v", r)
	}
	if r.SendBacks != 1 || r.FinishedAt == nil || len(r.OwnedPaths) != 1 || r.JudgedHead == nil {
		t.Fatalf("absent fields changed: %+v", r)
	}
	// An empty array is read criteria (zero of them), not unread.
	obj, _ = DecodeObject([]byte(`{"criteria":[]}`))
	if _, err := r.Apply(obj); err != nil || r.Criteria == nil || len(r.Criteria) != 0 {
		t.Fatalf("criteria [] must read as zero criteria: %v %v", r.Criteria, err)
	}
}

func TestApplyRefusesBadValuesNamingTheFieldAndKeepsTheRow(t *testing.T) {
	cases := map[string]string{
		`{"send_backs":-1}`:             "send_backs",
		`{"ceiling":1.5}`:               "ceiling",
		`{"free_attempts":"3"}`:         "free_attempts",
		`{"reviewer_misses":1e11}`:      "reviewer_misses",
		`{"finished_at":"yesterday"}`:   "finished_at",
		`{"dispatched_at":12}`:          "dispatched_at",
		`{"review_state":0}`:            "review_state",
		`{"review_state":{"w":1}}`:      "review_state",
		`{"owned_paths":"a/b"}`:         "owned_paths",
		`{"owned_paths":["a",3]}`:       "owned_paths[1]",
		`{"criteria":"all"}`:            "criteria",
		`{"started":"yes"}`:             "started",
		`{"issue_open":"open"}`:         "issue_open",
		`{"judged_head":["x"]}`:         "judged_head",
		`{"judged_head":"abc"}`:         "judged_head",
		`{"send_backs":2,"ceiling":-3}`: "ceiling",
	}
	for body, field := range cases {
		r := New("hive/t27", 1)
		before := *r
		obj, err := DecodeObject([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Apply(obj)
		var fe *FieldError
		if err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: error %v, want one naming %s", body, err, field)
		}
		if ok := errorAs(err, &fe); !ok || fe.Field != field {
			t.Errorf("%s: FieldError.Field = %v, want %s", body, fe, field)
		}
		if r.SendBacks != before.SendBacks || r.Ceiling != before.Ceiling {
			t.Errorf("%s: a refused patch changed the row", body)
		}
	}
}

func errorAs(err error, fe **FieldError) bool {
	e, ok := err.(*FieldError)
	*fe = e
	return ok
}

func TestDecodeObjectRefusesNonObjects(t *testing.T) {
	for _, body := range []string{``, `[]`, `null`, `{"a":1} {"b":2}`, `{"a":`, `"x"`} {
		if _, err := DecodeObject([]byte(body)); err == nil {
			t.Errorf("%q decoded as an object", body)
		}
	}
}

// Expected values come from the cards' tables (docs/design.md, The cards),
// not from the code under test.
func TestViewOfRows(t *testing.T) {
	paths := `"owned_paths":["bootstrap/src/compiler.rs","docs/x.md"]`
	cases := []struct {
		name, body         string
		prs                *PRState
		claim, stage       string
		claimsIssue, holds bool
		sendBack, accept   string // "" = null
	}{
		{"running", `{"started":true,` + paths + `}`, nil, "running", "working", true, true, "", ""},
		{"running send-back word", `{"review_state":"sendBack",` + paths + `}`, nil, "running", "working", true, true, "", ""},
		{"wait 29m", `{"finished_at":"` + ago(29) + `","review_state":"wait",` + paths + `}`, nil, "awaitingReview", "awaiting", true, true, "", ""},
		{"wait 31m", `{"finished_at":"` + ago(31) + `","review_state":"wait",` + paths + `}`, nil, "awaitingReview", "awaiting", true, false, "", ""},
		{"wait 360m", `{"finished_at":"` + ago(360) + `","review_state":"wait",` + paths + `}`, nil, "failed", "awaiting", false, false, "", ""},
		{"escalate now", `{"finished_at":"` + ago(0) + `","review_state":"escalate",` + paths + `}`, nil, "awaitingReview", "escalated", true, false, "", ""},
		{"send-back under ceiling", `{"finished_at":"` + ago(10) + `","review_state":"sendBack","send_backs":1,` + paths + `}`, nil, "rejected", "send_back", true, true, "free", ""},
		{"send-back at ceiling", `{"finished_at":"` + ago(90) + `","review_state":"sendBack","send_backs":2,` + paths + `}`, nil, "failed", "send_back", false, true, "live", ""},
		{"send-back at ceiling 121m", `{"finished_at":"` + ago(121) + `","review_state":"sendBack","send_backs":2,` + paths + `}`, nil, "failed", "send_back", false, false, "live", ""},
		{"accept unread", `{"finished_at":"` + ago(5) + `","review_state":"accept",` + paths + `}`, nil, "accepted", "done", true, false, "", "live"},
		{"accept closed unmerged", `{"finished_at":"` + ago(5) + `","review_state":"accept",` + paths + `}`, &PRState{Read: true, ClosedUnmerged: 1}, "accepted", "done", true, false, "", "free"},
		{"accept merged", `{"finished_at":"` + ago(5) + `","review_state":"accept"}`, &PRState{Read: true, Merged: 1, ClosedUnmerged: 2}, "accepted", "done", true, false, "", "live"},
		{"accept failed read", `{"finished_at":"` + ago(5) + `","review_state":"accept"}`, &PRState{Read: false, ClosedUnmerged: 1}, "accepted", "done", true, false, "", "live"},
		{"obsolete", `{"finished_at":"` + ago(0) + `","review_state":"obsolete"}`, nil, "cancelled", "done", false, false, "", ""},
		{"empty 30m", `{"finished_at":"` + ago(30) + `","review_state":"empty"}`, nil, "failed", "awaiting", false, false, "", ""},
		{"unparsed future", `{"finished_at":"2026-10-08T17:00:00Z","review_state":"wait",` + paths + `}`, nil, "awaitingReview", "awaiting", true, true, "", ""},
	}
	for _, tc := range cases {
		r := row(t, tc.body)
		r.PRs = tc.prs
		v := ViewOf(r, now)
		if v.Claim != tc.claim || v.Stage != tc.stage || v.ClaimsIssue != tc.claimsIssue || v.HoldsFiles != tc.holds || !v.Live {
			t.Errorf("%s: got claim=%s stage=%s claims_issue=%t holds=%t live=%t", tc.name, v.Claim, v.Stage, v.ClaimsIssue, v.HoldsFiles, v.Live)
		}
		if got := deref(v.SendBackClaim); got != tc.sendBack {
			t.Errorf("%s: send_back_claim=%q want %q", tc.name, got, tc.sendBack)
		}
		if got := deref(v.AcceptClaim); got != tc.accept {
			t.Errorf("%s: accept_claim=%q want %q", tc.name, got, tc.accept)
		}
		if tc.holds != (len(v.HeldPaths) > 0) && len(r.OwnedPaths) > 0 {
			t.Errorf("%s: held_paths %v with holds_files %t", tc.name, v.HeldPaths, tc.holds)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestFreedRowHoldsNothingAndClaimsNothing(t *testing.T) {
	r := row(t, `{"finished_at":"`+ago(10)+`","review_state":"sendBack","send_backs":1,"owned_paths":["a/b.rs"]}`)
	r.Freed = &FreeRecord{At: now, Rule: RuleSendBack, Evidence: "send_backs 1 < ceiling 2"}
	v := ViewOf(r, now)
	if v.Live || v.ClaimsIssue || v.HoldsFiles || len(v.HeldPaths) != 0 || v.Stage != "done" {
		t.Fatalf("a freed row still holds: %+v", v)
	}
	b, _ := json.Marshal(v)
	if !strings.Contains(string(b), `"held_paths":[]`) || !strings.Contains(string(b), `"rule":"send_back_claim"`) {
		t.Fatalf("view JSON: %s", b)
	}
}

// A person freed a send-back at its ceiling (the rule says live) and an
// accepted row with an open PR: the view says free under the rules that
// apply, never "live" beside live false.
func TestViewNeverContradictsItself(t *testing.T) {
	for _, body := range []string{
		`{"finished_at":"` + ago(10) + `","review_state":"sendBack","send_backs":2,"ceiling":2}`,
		`{"finished_at":"` + ago(10) + `","review_state":"accept"}`,
	} {
		r := row(t, body)
		r.PRs = &PRState{Read: true, Open: 1}
		r.Freed = &FreeRecord{At: now, Rule: RuleManual, Evidence: "by hand"}
		v := ViewOf(r, now)
		for name, w := range map[string]*string{"send_back_claim": v.SendBackClaim, "accept_claim": v.AcceptClaim} {
			if w != nil && *w != "free" {
				t.Errorf("%s: %s = %q beside live %t", body, name, *w, v.Live)
			}
		}
		r.Freed = nil
		if v := ViewOf(r, now); (v.SendBackClaim != nil && *v.SendBackClaim != "live") || (v.AcceptClaim != nil && *v.AcceptClaim != "live") {
			t.Errorf("%s: a live row's rules: %v %v", body, v.SendBackClaim, v.AcceptClaim)
		}
	}
}

func TestHeldUntilFollowsTheGrace(t *testing.T) {
	r := row(t, `{"finished_at":"`+ago(10)+`","review_state":"sendBack","send_backs":2,"owned_paths":["a"]}`)
	v := ViewOf(r, now)
	if v.HeldUntil == nil || !v.HeldUntil.Equal(now.Add(110*time.Minute)) {
		t.Fatalf("held_until = %v, want finished_at + 120m", v.HeldUntil)
	}
	r = row(t, `{"owned_paths":["a"]}`)
	if v := ViewOf(r, now); v.HeldUntil != nil || !v.HoldsFiles {
		t.Fatalf("a working row holds with no end: %+v", v)
	}
}

func TestExplainNamesInputsAndRules(t *testing.T) {
	r := row(t, `{"finished_at":"`+ago(5)+`","review_state":"accept"}`)
	r.PRs = &PRState{Read: true, ClosedUnmerged: 2}
	text := strings.Join(Explain(r, now), "\n")
	for _, want := range []string{"review_state=\"accept\"", "idle=5m", "claim_of:", "-> accepted", "accept_claim: open=0 merged=0 closed_unmerged=2 -> free"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
}
