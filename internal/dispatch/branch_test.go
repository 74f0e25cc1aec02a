package dispatch

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestBranchIsAlwaysQueenIssue(t *testing.T) {
	if BranchOf(42) != "queen-42" {
		t.Fatalf("BranchOf(42) = %q", BranchOf(42))
	}
	for ref, want := range map[string]int64{"queen-1": 1, "queen-42": 42, "queen-9999999999": 9999999999,
		"queen-0": 0, "queen-042": 0, "queen-1a": 0, "queen-1 ": 0, "xqueen-1": 0, "queen-": 0, "Queen-42": 0, "queen-42x": 0, "feature/queen-42": 0, "queen-12345678901": 0} {
		n, ok := IssueOfBranch(ref)
		if n != want || ok != (want > 0) {
			t.Errorf("IssueOfBranch(%q) = %d, %t; want %d", ref, n, ok, want)
		}
		if ok && BranchOf(n) != ref {
			t.Errorf("BranchOf(IssueOfBranch(%q)) = %q", ref, BranchOf(n))
		}
	}
}

// A PUT naming another branch is refused with the field named: the export,
// the webhook and the sweep only ever look at queen-<issue>.
func TestApplyRefusesAnotherBranch(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"branch":"queen-42"}`: true, `{"branch":null}`: true,
		`{"branch":"feature-x"}`: false, `{"branch":"queen-43"}`: false, `{"branch":""}`: false, `{"branch":7}`: false,
	} {
		r := New("hive/t27", 42)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatal(err)
		}
		_, err := r.Apply(obj)
		var fe *FieldError
		if ok != (err == nil) || (err != nil && (!errors.As(err, &fe) || fe.Field != "branch")) {
			t.Errorf("%s: err = %v", body, err)
		}
		if r.BranchName() != "queen-42" {
			t.Errorf("%s: BranchName = %q", body, r.BranchName())
		}
	}
}

func TestValidHead(t *testing.T) {
	for s, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef01234567":                         true,
		"0123456789ABCDEF0123456789abcdef01234567":                         false,
		"0123456789abcdef0123456789abcdef0123456":                          false,
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": false, // SHA-256: not a judged head
		"": false, "HEAD": false,
	} {
		if ValidHead(s) != want {
			t.Errorf("ValidHead(%q) = %t", s, !want)
		}
	}
}
