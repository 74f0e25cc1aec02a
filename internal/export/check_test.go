package export

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/queen-app/queen-app/internal/dispatch"
)

func TestBoundaryMatchesByPathComponent(t *testing.T) {
	cases := []struct {
		owned, path string
		want        bool
	}{
		{"rings/SR-00", "rings/SR-00/Foo.swift", true},
		{"rings/SR-00", "rings/SR-00", true},
		{"./rings/SR-00/", "rings/SR-00/deep/Foo.swift", true},
		{"/bootstrap/src/compiler.rs", "bootstrap/src/compiler.rs", true},
		{"docs", "docsite/x", false},
		{"rings/SR-00", "rings/SR-001/Foo.swift", false},
		{"bootstrap/src/compiler.rs", "bootstrap/src/compiler.rs.bak", false},
		{"a/b", "a", false},
		{"", "anything", false},
	}
	for _, c := range cases {
		if got := Contains(c.owned, c.path); got != c.want {
			t.Errorf("Contains(%q, %q) = %v, want %v", c.owned, c.path, got, c.want)
		}
	}
	files := []string{"docs/a.md", "docsite/x", "src/main.rs"}
	if s := Strays(nil, files); s != nil {
		t.Fatalf("no boundary must check nothing, got %v", s)
	}
	if s := Strays([]string{"", "./"}, files); s != nil {
		t.Fatalf("only empty entries must check nothing, got %v", s)
	}
	if s := Strays([]string{"docs", "src/main.rs"}, files); len(s) != 1 || s[0] != "docsite/x" {
		t.Fatalf("strays %v", s)
	}
}

func TestRefusalsComeInThePublishersOrder(t *testing.T) {
	judged := strings.Repeat("b", 40)
	// Everything wrong at once; fixing each in turn reveals the next.
	f := Facts{
		PRs:        PRs{ClosedUnmerged: 1, Numbers: []int{9}},
		IssueOpen:  false,
		Verdict:    "sendBack",
		JudgedHead: judged,
		OwnedPaths: []string{"src"},
		Diff:       &Diff{Commits: 0, Files: []string{".github/workflows/ci.yml", "docs/x.md"}, Conflict: "README.md"},
	}
	fixes := []struct {
		kind string
		fix  func()
	}{
		{KindHasPR, func() { f.PRs = PRs{} }},
		{KindIssueNotOpen, func() { f.IssueOpen = true }},
		{KindNotAccepted, func() { f.Verdict = "accept"; f.Head = judged }},
		{KindNoCommits, func() { f.Diff.Commits = 21 }},
		{KindWorkflow, func() { f.Diff.Files = f.Diff.Files[1:] }},
		{KindTooLarge, func() { f.Diff.Commits = 2 }},
		{KindConflicts, func() { f.Diff.Conflict = "" }},
		{KindBoundary, func() { f.OwnedPaths = []string{"docs"} }},
	}
	for _, step := range fixes {
		r := Check(f)
		if r == nil || r.Kind != step.kind || r.Reason == "" {
			t.Fatalf("got %+v, want %s", r, step.kind)
		}
		step.fix()
	}
	if r := Check(f); r != nil {
		t.Fatalf("all fixed, still refused: %+v", r)
	}
}

func TestChecksWaitForTheirFacts(t *testing.T) {
	judged := strings.Repeat("c", 40)
	f := Facts{IssueOpen: true, Verdict: "accept", JudgedHead: judged}
	if r := Check(f); r != nil {
		t.Fatalf("a diff not read yet refused: %+v", r)
	}
	f.Head = strings.Repeat("d", 40)
	if r := Check(f); r == nil || r.Kind != KindNotAccepted || r.Reason != "accepted at cccccccccccc, but the export has dddddddddddd" {
		t.Fatalf("gate: %+v", r)
	}
	for _, bad := range []string{"", strings.Repeat("C", 40), strings.Repeat("c", 39), strings.Repeat("g", 40)} {
		f.JudgedHead, f.Head = bad, ""
		if r := Check(f); r == nil || r.Kind != KindNotAccepted {
			t.Fatalf("judged head %q passed the gate", bad)
		}
	}
	f.JudgedHead = judged
	f.Diff = &Diff{Commits: 20, Files: make([]string, 25)}
	for i := range f.Diff.Files {
		f.Diff.Files[i] = "src/f"
	}
	if r := Check(f); r != nil {
		t.Fatalf("20 commits and 25 files are allowed: %+v", r)
	}
	f.Diff.Files = append(f.Diff.Files, "src/g")
	if r := Check(f); r == nil || r.Kind != KindTooLarge {
		t.Fatalf("26 files: %+v", r)
	}
}

func TestTitleIsCutTo120Characters(t *testing.T) {
	if got := Title("", 42); got != "Work on #42" {
		t.Fatalf("empty title: %q", got)
	}
	if got := Title("  \n ", 42); got != "Work on #42" {
		t.Fatalf("blank title: %q", got)
	}
	if got := Title("Fix\n  the parser", 1); got != "Fix the parser" {
		t.Fatalf("spaces: %q", got)
	}
	long := strings.Repeat("é", 130)
	got := Title(long, 1)
	if utf8.RuneCountInString(got) != 120 || !utf8.ValidString(got) {
		t.Fatalf("cut to %d characters, valid %v", utf8.RuneCountInString(got), utf8.ValidString(got))
	}
	exact := strings.Repeat("x", 120)
	if Title(exact, 1) != exact {
		t.Fatal("a 120-character title was cut")
	}
}

func TestMaySupersede(t *testing.T) {
	none := PRs{ClosedUnmerged: 2}
	cases := []struct {
		accepted bool
		prs      PRs
		exp, tip int64
		want     bool
	}{
		{true, none, 200, 100, true},
		{true, none, 100, 100, false}, // strictly newer only
		{true, none, 100, 200, false},
		{false, none, 200, 100, false},
		{true, PRs{Open: 1}, 200, 100, false},
	}
	for _, c := range cases {
		if ok, why := MaySupersede(c.accepted, c.prs, c.exp, c.tip); ok != c.want || (!ok && why == "") {
			t.Errorf("%+v: %v %q", c, ok, why)
		}
	}
}

// The PR refusal counts the attempt's PRs only: an open PR (whatever its
// head) or one at the judged head (whatever its state: the attempt's work
// was proposed, and is not proposed again). A closed or merged PR at
// another head, an earlier attempt's on a re-dispatched issue, does not
// stop the push. A read without its list counts every PR.
func TestHasPRCountsTheAttemptsPRsOnly(t *testing.T) {
	judged, earlier := strings.Repeat("b", 40), strings.Repeat("a", 40)
	created := time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)
	pr := func(n int, state string, merged bool, head string) dispatch.PR {
		return dispatch.PR{Number: n, State: state, Merged: merged, HeadSHA: head, CreatedAt: created}
	}
	for _, c := range []struct {
		name   string
		listed []dispatch.PR
		want   string // the has-pr reason, "" for none
	}{
		{"none", []dispatch.PR{}, ""},
		{"an earlier attempt's, closed", []dispatch.PR{pr(24, "closed", false, earlier)}, ""},
		{"an earlier attempt's, merged", []dispatch.PR{pr(24, "closed", true, earlier)}, ""},
		{"open at another head", []dispatch.PR{pr(24, "closed", false, earlier), pr(25, "open", false, earlier)},
			"the branch already has a pull request (1 open, 0 merged, 0 closed: #25)"},
		{"closed at the judged head", []dispatch.PR{pr(24, "closed", false, earlier), pr(30, "closed", false, judged)},
			"the branch already has a pull request (0 open, 0 merged, 1 closed: #30)"},
		{"merged at the judged head", []dispatch.PR{pr(30, "closed", true, judged)},
			"the branch already has a pull request (0 open, 1 merged, 0 closed: #30)"},
	} {
		readAt := created.Add(time.Hour)
		f := Facts{PRs: PRs{Read: true, ReadAt: &readAt, Listed: c.listed}, IssueOpen: true, Verdict: "accept", JudgedHead: judged}
		// Counted as githubapp.Summarize counts them: every PR.
		f.PRs = dispatch.Attempt{}.Count(f.PRs)
		r := Check(f)
		switch {
		case c.want == "" && r != nil:
			t.Errorf("%s: refused %+v, want the push to go ahead", c.name, r)
		case c.want != "" && (r == nil || r.Kind != KindHasPR || r.Reason != c.want):
			t.Errorf("%s: %+v, want has-pr %q", c.name, r, c.want)
		}
	}
	unlisted := Facts{PRs: PRs{Read: true, ClosedUnmerged: 1, Numbers: []int{24}}, IssueOpen: true, Verdict: "accept", JudgedHead: judged}
	if r := Check(unlisted); r == nil || r.Kind != KindHasPR {
		t.Errorf("a read without its list, one closed PR: %+v, want has-pr", r)
	}
}
