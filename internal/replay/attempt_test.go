package replay

import (
	"slices"
	"strings"
	"testing"
)

const redispatch = "../../testdata/replay/redispatch.json"

// Re-dispatched issues (issue 21): each branch lists the PRs of every
// attempt, and only the row's attempt's count. #21 is the jam: attempt
// 1's closed PR #24 alone must not free the new attempt, as it did when
// every PR counted. #22's own PR at its judged head, closed unmerged, frees
// it; #23's own PR is open; #27's only PR, merged, is attempt 1's; #29 had
// one attempt; #33 is a read as the ledger records it (counts and earlier).
func TestReDispatchSnapshot(t *testing.T) {
	s, rep := load(t, redispatch)
	want := map[int64]struct {
		accept  string
		numbers []int
		earlier []int
	}{
		21: {"live", []int{}, []int{24}},
		22: {"free", []int{30}, []int{25}},
		23: {"live", []int{31}, []int{26}},
		27: {"live", []int{}, []int{28}},
		29: {"free", []int{32}, nil},
		33: {"live", []int{}, []int{34}},
	}
	if len(rep.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rep.Rows), len(want))
	}
	for i, l := range rep.Rows {
		w, p := want[l.Issue], s.Rows[i].PRs
		if word(l.AcceptClaim) != w.accept || (w.accept == "free") == l.Live {
			t.Errorf("#%d: accept_claim %s live %t, want %s", l.Issue, word(l.AcceptClaim), l.Live, w.accept)
		}
		if p == nil || !p.Read || !slices.Equal(p.Numbers, w.numbers) || !slices.Equal(p.Earlier, w.earlier) {
			t.Errorf("#%d: prs %+v, want numbers %v and earlier %v", l.Issue, p, w.numbers, w.earlier)
		}
	}
	wantAccept := AcceptSummary{Rows: 6, Free: 2, Live: 4, OpenPR: 1, NoPR: 3}
	if rep.Summary.AcceptClaim != wantAccept || rep.Summary.Claims.Accepted != 6 {
		t.Errorf("summary %+v, want accept_claim %+v", rep.Summary, wantAccept)
	}
	checkSummary(t, rep)
}

func TestParseRefusesBadPulls(t *testing.T) {
	const head = "2222222222222222222222222222222222222222"
	pull := `{"number": 24, "state": "closed", "head_sha": "` + head + `", "created_at": "2026-10-11T11:00:00Z"`
	for _, c := range []struct{ prs, want string }{
		{`{"pulls": {}}`, "prs.pulls: must be an array of pull requests or null"},
		{`{"pulls": [7]}`, "prs.pulls[0]: must be an object"},
		{`{"pulls": [` + pull + `, "title": "x"}]}`, "prs.pulls[0].title: unknown field"},
		{`{"pulls": [{"number": 24, "state": "closed", "head_sha": "` + head + `"}]}`, "prs.pulls[0].created_at: required"},
		{`{"pulls": [` + pull + `}, ` + pull + `}]}`, "prs.pulls[1].number: repeats #24"},
		{`{"pulls": [{"number": 24, "state": "merged", "head_sha": "` + head + `", "created_at": "2026-10-11T11:00:00Z"}]}`, `prs.pulls[0].state: must be "open" or "closed" (got "merged")`},
		{`{"pulls": [{"number": 24, "state": "open", "merged": true, "head_sha": "` + head + `", "created_at": "2026-10-11T11:00:00Z"}]}`, "prs.pulls[0].merged: an open pull request is not merged"},
		{`{"pulls": [{"number": 24, "state": "closed", "head_sha": "abc", "created_at": "2026-10-11T11:00:00Z"}]}`, `prs.pulls[0].head_sha: must be a 40-character lower-case commit id (got "abc")`},
		{`{"pulls": [{"number": 24, "state": "closed", "head_sha": "` + head + `", "created_at": "yesterday"}]}`, `prs.pulls[0].created_at: "yesterday" is not an RFC 3339 date`},
		{`{"closed_unmerged": 1, "pulls": []}`, "prs.pulls: give the pull requests or their counts (closed_unmerged), not both"},
		{`{"read": false, "pulls": []}`, "prs.pulls: a read that failed lists no pull requests"},
	} {
		in := `{"taken_at": "2026-10-11T12:55:00Z", "rows": [{"repo": "hive/t27", "issue": 9, "prs": ` + c.prs + `}]}`
		_, err := Parse([]byte(in))
		if err == nil || err.Error() != "row 0 (hive/t27#9): "+c.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", c.prs, err, c.want)
		}
	}
}
