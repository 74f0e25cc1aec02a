package dispatch

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"strconv"
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

// branchReference is IssueOfBranch's grammar as it was, by regexp.
var branchReference = regexp.MustCompile(`^queen-([1-9][0-9]{0,9})$`)

func TestIssueOfBranchIsTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	parts := []string{"queen-", "queen", "-", "0", "1", "9", "x", " ", "Q"}
	found := 0
	for range 50000 {
		ref := ""
		if r.IntN(4) > 0 {
			ref = "queen-"
		}
		for range r.IntN(13) {
			if r.IntN(6) == 0 {
				ref += parts[r.IntN(len(parts))]
			} else {
				ref += string(rune('0' + r.IntN(10)))
			}
		}
		n, ok := IssueOfBranch(ref)
		m := branchReference.FindStringSubmatch(ref)
		if ok != (m != nil) || (ok && strconv.FormatInt(n, 10) != m[1]) {
			t.Fatalf("IssueOfBranch(%q) = %d, %t; the reference matched %q", ref, n, ok, m)
		}
		if ok {
			found++
		}
	}
	if found < 1000 {
		t.Fatalf("only %d of 50000 refs were branches; the test says little", found)
	}
}
