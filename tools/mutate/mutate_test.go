package main

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSnippetsFoundOnce keeps the list runnable as the code changes: every
// snippet is found exactly once in the current source, ids are unique, and
// every mutated file still parses.
func TestSnippetsFoundOnce(t *testing.T) {
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSnippets(root, mutants); err != nil {
		t.Fatal(err)
	}
	for _, m := range mutants {
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			t.Fatal(err)
		}
		mutated, err := Apply(src, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), m.File, mutated, 0); err != nil {
			t.Errorf("mutant %s does not parse: %v", m.ID, err)
		}
		if m.Desc == "" {
			t.Errorf("mutant %s has no description", m.ID)
		}
	}
	if len(mutants) < 100 {
		t.Errorf("%d mutants, want at least 100", len(mutants))
	}
}

func TestApplyRefuses(t *testing.T) {
	src := []byte("a := 1\nb := 1\n")
	if _, err := Apply(src, Mutant{ID: "x", Old: "1", New: "2"}); err == nil {
		t.Error("a snippet found twice was applied")
	}
	if _, err := Apply(src, Mutant{ID: "x", Old: "c := 1", New: "c := 2"}); err == nil {
		t.Error("a snippet found nowhere was applied")
	}
	if _, err := Apply(src, Mutant{ID: "x", Old: "a := 1", New: "a := 1"}); err == nil {
		t.Error("a mutant that changes nothing was applied")
	}
	got, err := Apply(src, Mutant{ID: "x", Old: "a := 1", New: "a := 2"})
	if err != nil || string(got) != "a := 2\nb := 1\n" {
		t.Errorf("Apply = %q, %v", got, err)
	}
}

func TestClassify(t *testing.T) {
	exitErr := exitError(t)
	for _, c := range []struct {
		name, out   string
		err         error
		outcome, by string
	}{
		{"pass", "ok  \tx\t0.1s\n", nil, Survived, ""},
		{"test failure", "--- FAIL: TestClaimGrid (0.2s)\n    grid_test.go:1: x\nFAIL\nFAIL\tx\t0.3s\n", exitErr, Killed, "TestClaimGrid"},
		{"subtest failure", "--- FAIL: TestClaimQuirks (0.00s)\n    --- FAIL: TestClaimQuirks/spent (0.00s)\n", exitErr, Killed, "TestClaimQuirks"},
		{"panic", "panic: runtime error: index out of range [6] with length 6\n\ngoroutine 1\nFAIL\tx\t0.1s\n", exitErr, Killed, "panic: runtime error: index out of range [6] with length 6"},
		{"compile error", "# x\ninternal/rules/claim.go:12:3: undefined: foo\nFAIL\tx [build failed]\n", exitErr, Invalid, "internal/rules/claim.go:12:3: undefined: foo"},
		{"setup failure", "FAIL\tx [setup failed]\n", exitErr, Invalid, "build failed"},
		{"go missing", "", errors.New("exec: go: not found"), Failed, "exec: go: not found"},
	} {
		outcome, by := Classify(c.out, c.err)
		if outcome != c.outcome || by != c.by {
			t.Errorf("%s: Classify = %q, %q; want %q, %q", c.name, outcome, by, c.outcome, c.by)
		}
	}
}

// exitError is a real *exec.ExitError from a command that fails.
func exitError(t *testing.T) error {
	t.Helper()
	err := exec.Command("go", "tool", "no-such-tool").Run()
	var e *exec.ExitError
	if !errors.As(err, &e) {
		t.Fatalf("want an exit error, got %v", err)
	}
	return err
}

func TestSummaryAndAllGood(t *testing.T) {
	rs := []Result{
		{Mutant: Mutant{ID: "A"}, Outcome: Killed},
		{Mutant: Mutant{ID: "B"}, Outcome: Equivalent},
	}
	if !AllGood(rs) {
		t.Error("killed and equivalent mutants are all good")
	}
	if got := Summary(rs); !strings.HasPrefix(got, "2 mutants, 1 killed, 1 equivalent, 0 survived, 0 invalid") {
		t.Errorf("Summary = %q", got)
	}
	for _, bad := range []string{Survived, Invalid, NotEquivalent, Failed} {
		if AllGood(append(rs, Result{Outcome: bad})) {
			t.Errorf("a %s mutant passed AllGood", bad)
		}
	}
	md := Markdown([]Result{{Mutant: Mutant{ID: "A", File: "f.go", Desc: "a | b"}, Outcome: Killed, By: "TestX"}})
	if !strings.Contains(md, "| A | f.go | a \\| b | killed | TestX |") {
		t.Errorf("Markdown row missing or unescaped:\n%s", md)
	}
}

// A mutant runs its own package's tests, or its Pkgs'; the baseline runs,
// per package set, every test some mutant runs, and all of them when one
// mutant names no tests.
func TestBaselinesCoverEveryMutantsTests(t *testing.T) {
	ms := []Mutant{
		{ID: "A", File: "internal/rules/holds.go"},
		{ID: "B", File: "internal/ledger/transitions.go", Tests: "^TestX$"},
		{ID: "C", File: "internal/ledger/transitions.go", Tests: "^TestY"},
		{ID: "D", File: "internal/ledger/transitions.go", Tests: "^TestX$"},
		{ID: "E", File: "internal/worker/exportpush.go", Pkgs: []string{"./internal/worker/", "./e2e/"}, Tests: "^TestZ$"},
	}
	if got := ms[1].Packages(); len(got) != 1 || got[0] != "./internal/ledger/" || ms[1].Package() != "internal/ledger" {
		t.Fatalf("packages of a ledger mutant: %v %q", got, ms[1].Package())
	}
	got := fmt.Sprint(Baselines(ms))
	want := "[{[./internal/rules/] } {[./internal/ledger/] (?:^TestX$)|(?:^TestY)} {[./internal/worker/ ./e2e/] (?:^TestZ$)}]"
	if got != want {
		t.Fatalf("Baselines = %s\nwant        %s", got, want)
	}
	if !regexp.MustCompile(Baselines(ms)[1].Run).MatchString("TestY2") || regexp.MustCompile(Baselines(ms)[1].Run).MatchString("TestX2") {
		t.Fatal("the ledger baseline's -run does not select exactly its mutants' tests")
	}
}
