package dispatch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/dispatch"
)

// snapshot is the module's replay snapshot: the seeds are real row shapes.
const snapshot = "../../testdata/replay/2026-10-11.json"

// seedRows are a few rows of the snapshot, the first of each review_state
// with and without a recorded PR state, so seeds stay few and fast.
func seedRows(tb testing.TB) []json.RawMessage {
	tb.Helper()
	data, err := os.ReadFile(snapshot)
	if err != nil {
		tb.Fatal(err)
	}
	var s struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		tb.Fatal(err)
	}
	seen := map[string]bool{}
	var out []json.RawMessage
	for _, raw := range s.Rows {
		var r struct {
			ReviewState *string         `json:"review_state"`
			PRs         json.RawMessage `json:"prs"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			tb.Fatal(err)
		}
		kind := "null"
		if r.ReviewState != nil {
			kind = *r.ReviewState
		}
		kind += "/" + strconv.FormatBool(r.PRs != nil)
		if !seen[kind] {
			seen[kind] = true
			out = append(out, raw)
		}
	}
	if len(out) < 3 {
		tb.Fatalf("%s: only %d kinds of rows", snapshot, len(out))
	}
	return out
}

// FuzzQueenBranch: BranchOf and IssueOfBranch are inverses on the issues
// 1..9999999999 and IssueOfBranch accepts nothing else.
func FuzzQueenBranch(f *testing.F) {
	for _, raw := range seedRows(f) {
		var r struct {
			Issue  int64  `json:"issue"`
			Branch string `json:"branch"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			f.Fatal(err)
		}
		f.Add(r.Branch, r.Issue)
	}
	for _, s := range []string{"queen-0", "queen-042", "queen-9999999999", "queen-10000000000", "queen-1\n",
		"Queen-1", "queen-+1", "queen--1", "queen-\u0661", "refs/heads/queen-1", "queen-1/x", ""} {
		f.Add(s, int64(0))
	}
	f.Add("", int64(-1))
	f.Add("", int64(1e10))
	f.Add("", int64(-9223372036854775808))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		issue, ok := dispatch.IssueOfBranch(s)
		if ok {
			if issue < 1 || issue > 9999999999 {
				t.Fatalf("IssueOfBranch(%q) = %d: outside 1..9999999999", s, issue)
			}
			if b := dispatch.BranchOf(issue); b != s {
				t.Fatalf("IssueOfBranch(%q) = %d, but BranchOf(%d) = %q", s, issue, issue, b)
			}
		} else if issue != 0 {
			t.Fatalf("IssueOfBranch(%q) refused but gave %d", s, issue)
		}

		b := dispatch.BranchOf(n)
		got, ok := dispatch.IssueOfBranch(b)
		valid := n >= 1 && n <= 9999999999
		if ok != valid || (valid && got != n) {
			t.Fatalf("IssueOfBranch(BranchOf(%d) = %q) = %d, %t", n, b, got, ok)
		}
	})
}

// FuzzApply: the API's decoding of a dispatch body never panics; a refused
// patch is a *FieldError naming a Queen field and leaves the row as it was;
// the unknown names are exactly the non-Queen ones; an accepted row
// marshals and reads back as the same row.
func FuzzApply(f *testing.F) {
	rows := seedRows(f)
	for i, raw := range rows {
		f.Add([]byte(raw), []byte(rows[(i+1)%len(rows)]))
	}
	f.Add([]byte(`{}`), []byte(`{"branch":null,"ceiling":null,"criteria":null,"owned_paths":[""],"typo":1}`))
	f.Add([]byte(`{"send_backs":4294967295}`), []byte(`{"send_backs":4294967296,"finished_at":"2026-10-11T12:55:00+01:00"}`))
	f.Add([]byte(`{"branch":"queen-8152"}`), []byte(`{"owned_paths":["a",1],"criteria":{}} `))
	f.Add([]byte(`null`), []byte(`{"a":1}{"b":2}`))
	f.Fuzz(func(t *testing.T, base, patch []byte) {
		r := dispatch.New("hive/t27", 8152)
		if obj, err := dispatch.DecodeObject(base); err == nil {
			_, _ = r.Apply(obj) // any start the API could have left
		}
		before := marshal(t, r)

		obj, err := dispatch.DecodeObject(patch)
		if err != nil {
			if obj != nil {
				t.Fatalf("DecodeObject refused %q but gave %v", patch, obj)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if obj == nil {
			t.Fatalf("DecodeObject(%q) = nil, nil", patch)
		}
		unknown, err := r.Apply(obj)
		if err != nil {
			var fe *dispatch.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Apply error %T %q is not a *FieldError", err, err)
			}
			if !dispatch.IsQueenField(queenFieldOf(fe.Field)) {
				t.Fatalf("Apply error %q names %q, not a Queen field", err, fe.Field)
			}
			if _, ok := obj[queenFieldOf(fe.Field)]; !ok {
				t.Fatalf("Apply error %q names a field the patch does not have", err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("multi-line error %q", err)
			}
			if unknown != nil {
				t.Fatalf("Apply refused and listed unknown %v", unknown)
			}
			if after := marshal(t, r); !bytes.Equal(before, after) {
				t.Fatalf("refused patch %q changed the row:\n%s\n%s", patch, before, after)
			}
			return
		}
		var want []string
		for name := range obj {
			if !dispatch.IsQueenField(name) {
				want = append(want, name)
			}
		}
		slices.Sort(want)
		if !slices.Equal(unknown, want) {
			t.Fatalf("unknown = %q, want %q", unknown, want)
		}
		if r.Repo != "hive/t27" || r.Issue != 8152 {
			t.Fatalf("Apply changed the row's identity to %s", r.Key())
		}
		if r.Branch != "" && r.Branch != r.BranchName() {
			t.Fatalf("Apply took branch %q", r.Branch)
		}

		data := marshal(t, r)
		var back dispatch.Row
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("accepted row %s does not read back: %v", data, err)
		}
		if again := marshal(t, &back); !bytes.Equal(data, again) {
			t.Fatalf("row changed through JSON:\n%s\n%s", data, again)
		}
	})
}

// queenFieldOf is the field of a FieldError's name: owned_paths[3] is
// owned_paths.
func queenFieldOf(name string) string {
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		if _, err := strconv.Atoi(name[i+1 : len(name)-1]); err == nil {
			return name[:i]
		}
	}
	return name
}

func marshal(t *testing.T, r *dispatch.Row) []byte {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("row %s does not marshal: %v", r.Key(), err)
	}
	return data
}
