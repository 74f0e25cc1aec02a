package export

import (
	"strings"
	"testing"
	"unicode/utf8"
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
