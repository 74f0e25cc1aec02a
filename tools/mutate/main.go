// Command mutate checks that the tests notice every decision broken once:
// the rules of internal/rules, the claim view's decisions (internal/dispatch),
// the ledger's transitions and the export's checks before a push.
//
// It applies one hand-written mutant at a time without touching the tree: the
// mutated file goes to a temporary directory and `go test -overlay` reads it
// in place of the original, running the tests of the mutated package (or the
// mutant's Pkgs), only those its Tests name when it names some. A mutant is
// killed when the tests fail; a mutant that does not compile is invalid, not
// killed. It exits non-zero when a mutant survives, is invalid, or is listed
// as equivalent yet gets killed.
//
// Usage (from the repository root):
//
//	go run ./tools/mutate [-write docs/mutation.md] [-parallel 2] [-run IDS] [-tests TESTS]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Outcomes of one mutant.
const (
	Killed        = "killed"
	Survived      = "survived"
	Invalid       = "invalid"        // did not compile
	Equivalent    = "equivalent"     // listed as equivalent and survived, as it should
	NotEquivalent = "not equivalent" // listed as equivalent but killed: fix the list
	Failed        = "error"          // the go command could not be run
)

// testRun, when set, is passed to go test -run in place of every mutant's Tests.
var testRun string

// Result is what one mutant run gave.
type Result struct {
	Mutant
	Outcome string
	By      string // first failing test, panic or compile error
	Elapsed time.Duration
}

func main() {
	write := flag.String("write", "", "write the result table as markdown to this file")
	parallel := flag.Int("parallel", 2, "mutants run at the same time")
	run := flag.String("run", "", "only mutants whose id matches this regexp")
	flag.StringVar(&testRun, "tests", "", "only tests matching this regexp (go test -run) for every mutant; to measure one test's power")
	flag.Parse()

	root, err := findRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	selected, err := selectMutants(mutants, *run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	if err := checkSnippets(root, selected); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	start := time.Now()
	for _, b := range Baselines(selected) {
		if out, err := goTest(ctx, root, "", b.Pkgs, b.Run); err != nil {
			fmt.Fprintf(os.Stderr, "mutate: the unmutated tests fail; fix them first:\n%s", out)
			os.Exit(2)
		}
	}
	results := runAll(ctx, root, selected, *parallel, os.Stderr)
	fmt.Fprintf(os.Stderr, "mutate: %d mutants in %s\n", len(results), time.Since(start).Round(time.Second))
	table := Markdown(results)
	fmt.Print(table)
	if *write != "" {
		if err := os.WriteFile(filepath.Join(root, *write), []byte(Document(results)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(2)
		}
	}
	if !AllGood(results) {
		os.Exit(1)
	}
}

// findRoot walks up from the working directory to the module root.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func selectMutants(all []Mutant, pattern string) ([]Mutant, error) {
	if pattern == "" {
		return all, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("-run: %w", err)
	}
	var out []Mutant
	for _, m := range all {
		if re.MatchString(m.ID) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-run %q matches no mutant", pattern)
	}
	return out, nil
}

// Apply returns src with the mutant's snippet replaced. It refuses a snippet
// that is not found exactly once, and a mutant that changes nothing.
func Apply(src []byte, m Mutant) ([]byte, error) {
	if m.Old == "" || m.Old == m.New {
		return nil, fmt.Errorf("mutant %s: empty or unchanged snippet", m.ID)
	}
	if n := bytes.Count(src, []byte(m.Old)); n != 1 {
		return nil, fmt.Errorf("mutant %s: snippet %q found %d times in %s, want exactly once", m.ID, m.Old, n, m.File)
	}
	return bytes.Replace(src, []byte(m.Old), []byte(m.New), 1), nil
}

// checkSnippets applies every mutant in memory and checks ids are unique.
func checkSnippets(root string, ms []Mutant) error {
	var errs []error
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.ID] {
			errs = append(errs, fmt.Errorf("mutant %s: duplicate id", m.ID))
		}
		seen[m.ID] = true
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			errs = append(errs, fmt.Errorf("mutant %s: %w", m.ID, err))
			continue
		}
		if _, err := Apply(src, m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func runAll(ctx context.Context, root string, ms []Mutant, parallel int, progress io.Writer) []Result {
	if parallel < 1 {
		parallel = 1
	}
	results := make([]Result, len(ms))
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = runOne(ctx, root, ms[i])
				mu.Lock()
				done++
				fmt.Fprintf(progress, "[%d/%d] %s %s: %s %s\n", done, len(ms), ms[i].ID, ms[i].Desc, results[i].Outcome, results[i].By)
				mu.Unlock()
			}
		}()
	}
	for i := range ms {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return results
}

// runOne runs the tests with one mutant overlaid on its file.
func runOne(ctx context.Context, root string, m Mutant) Result {
	start := time.Now()
	res := Result{Mutant: m}
	fail := func(err error) Result {
		res.Outcome, res.By, res.Elapsed = Failed, err.Error(), time.Since(start)
		return res
	}
	orig := filepath.Join(root, m.File)
	src, err := os.ReadFile(orig)
	if err != nil {
		return fail(err)
	}
	mutated, err := Apply(src, m)
	if err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "mutate-"+m.ID+"-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		return fail(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {orig: file}})
	if err != nil {
		return fail(err)
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return fail(err)
	}
	out, err := goTest(ctx, root, overlayFile, m.Packages(), m.Tests)
	res.Outcome, res.By = Classify(out, err)
	if m.Equivalent != "" {
		switch res.Outcome {
		case Survived:
			res.Outcome, res.By = Equivalent, m.Equivalent
		case Killed:
			res.Outcome = NotEquivalent
		}
	}
	res.Elapsed = time.Since(start)
	return res
}

// Baseline is one run of unmutated tests that must pass before any mutant runs.
type Baseline struct {
	Pkgs []string
	Run  string // go test -run; "" runs every test
}

// Baselines are the tests the mutants will run, unmutated: per package
// set, every test any of its mutants runs, in one go test.
func Baselines(ms []Mutant) []Baseline {
	var order []string
	runs := map[string][]string{}
	all := map[string]bool{}
	for _, m := range ms {
		key := strings.Join(m.Packages(), " ")
		if _, ok := runs[key]; !ok {
			order = append(order, key)
			runs[key] = nil
		}
		if m.Tests == "" {
			all[key] = true
		} else if !slices.Contains(runs[key], m.Tests) {
			runs[key] = append(runs[key], m.Tests)
		}
	}
	var out []Baseline
	for _, key := range order {
		b := Baseline{Pkgs: strings.Fields(key)}
		if !all[key] {
			b.Run = "(?:" + strings.Join(runs[key], ")|(?:") + ")"
		}
		out = append(out, b)
	}
	return out
}

// goTest runs the packages' tests (those matching run, unless -tests says
// otherwise), with an overlay file when given. Vet is off: a vet complaint
// about a mutant is not a failing test. -failfast: the first failure kills.
func goTest(ctx context.Context, root, overlay string, pkgs []string, run string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	args := []string{"test", "-count=1", "-vet=off", "-timeout=5m", "-failfast"}
	if overlay != "" {
		args = append(args, "-overlay="+overlay)
	}
	if testRun != "" {
		run = testRun
	}
	if run != "" {
		args = append(args, "-run="+run)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var (
	failLine  = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	panicLine = regexp.MustCompile(`(?m)^panic: (.*)$`)
	compile   = regexp.MustCompile(`(?m)^(\S+\.go:\d+:\d+: .*)$`)
)

// Classify reads the go test output: no error is a survivor, a build or
// setup failure is invalid, any other failure is a kill.
func Classify(out string, err error) (outcome, by string) {
	if err == nil {
		return Survived, ""
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return Failed, err.Error()
	}
	if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
		if m := compile.FindStringSubmatch(out); m != nil {
			return Invalid, m[1]
		}
		return Invalid, "build failed"
	}
	if m := failLine.FindStringSubmatch(out); m != nil {
		return Killed, m[1]
	}
	if m := panicLine.FindStringSubmatch(out); m != nil {
		return Killed, "panic: " + m[1]
	}
	return Killed, "tests failed"
}

// AllGood is true when every mutant was killed or is a confirmed equivalent.
func AllGood(rs []Result) bool {
	for _, r := range rs {
		if r.Outcome != Killed && r.Outcome != Equivalent {
			return false
		}
	}
	return true
}

// Summary is the one-line count.
func Summary(rs []Result) string {
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.Outcome]++
	}
	s := fmt.Sprintf("%d mutants, %d killed", len(rs), counts[Killed])
	for _, o := range []string{Equivalent, Survived, Invalid, NotEquivalent, Failed} {
		s += fmt.Sprintf(", %d %s", counts[o], o)
	}
	return s
}

// Markdown is the result table with its summary line.
func Markdown(rs []Result) string {
	var b strings.Builder
	b.WriteString("| id | file | description | result | by |\n|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.ID, r.File, cell(r.Desc), r.Outcome, cell(r.By))
	}
	fmt.Fprintf(&b, "\n%s\n", Summary(rs))
	return b.String()
}

// PackageSummary is one line per mutated package, in the order first seen.
func PackageSummary(rs []Result) string {
	var order []string
	by := map[string][]Result{}
	for _, r := range rs {
		p := r.Package()
		if _, ok := by[p]; !ok {
			order = append(order, p)
		}
		by[p] = append(by[p], r)
	}
	var b strings.Builder
	b.WriteString("| package | mutants |\n|---|---|\n")
	for _, p := range order {
		fmt.Fprintf(&b, "| %s | %s |\n", p, Summary(by[p]))
	}
	return b.String()
}

// Document is docs/mutation.md.
func Document(rs []Result) string {
	var b strings.Builder
	b.WriteString(`# Mutation check

Generated by ` + "`make mutate`" + ` (` + "`go run ./tools/mutate -write docs/mutation.md`" + `); do not edit by hand.

Each mutant breaks one decision once: a rule of internal/rules (a floor, grace or ceiling moved by
one, a comparison flipped or loosened, a branch's result changed, a word dropped from a table, a
boundary clamp removed); the claim view's decisions in internal/dispatch (Decide, live, free, held);
the ledger's transitions in internal/ledger/transitions.go (decide, RecordPRs' stale-read and
same-state checks, the unfree on a reopened PR, the new-dispatch reset); the export's checks before a
push in internal/export (head valid, paths held by the Boundary, branch state, the supersede tag kept
before a remote branch is replaced) and the scrubbing of git's output; the export's recording
in internal/worker (no outcome on a row that moved, last_error scrubbed); the coalescing of the
webhook's writes with a pipeline's replica acknowledgement in internal/redisconn; and the identifier
checks of every delivery (internal/ghrepo, internal/charclass, the branch of internal/dispatch); the watch
stream's resume, gaps, resets, filter and caps (internal/api, internal/ledger, internal/apiclient), listener
TLS (internal/serve), renames (internal/installs, internal/ghevents), QUEEN_API_URL's plain-http hosts
(internal/config) and two metrics (internal/worker, internal/redisavail). The tool writes the mutated
file to a temporary directory, overlays it with ` + "`go test -overlay`" + ` (the tree is never touched) and
runs the tests of the mutated package with ` + "`-failfast`" + `: all of them for internal/rules and
internal/dispatch, and for the Redis and git packages those that reach the broken code (each mutant's
` + "`Tests`" + ` in tools/mutate/mutants*.go, a ` + "`go test -run`" + ` regexp; a mutant whose effect is recorded in
another package, as git's output in the worker's row, runs that package's tests, its ` + "`Pkgs`" + `). Before any
mutant runs, the same tests must pass unmutated. A mutant is killed when a test fails; one that does not compile is invalid
and fails the run. A mutant listed as equivalent cannot change behaviour (the reason is in the "by"
column); it must survive and is not counted as killed. The "by" column of a killed mutant names the
first failing test.

Not listed: ` + "`ReviewQueueMax`" + ` - 1 (the constant is compared with a uint32, so -1 does not compile) and the
numbers of ` + "`Free`/`Live`" + ` (the card never published them, docs/design.md; nothing may depend on them).
` + "`-run IDS`" + ` runs only some mutants; ` + "`-tests REGEXP`" + ` runs only some tests, to measure one test's power (for
example ` + "`-run '^[HCV]' -tests '^TestClaimGrid$'`" + ` shows what the exhaustive grid kills on its own).
Mutants C88 and C101 rely on the amd64 conversion of a negative float to uint32 (it wraps); on
another architecture they may need another vector.

`)
	fmt.Fprintf(&b, "**%s**\n\n", Summary(rs))
	b.WriteString(PackageSummary(rs))
	b.WriteString("\n")
	b.WriteString(Markdown(rs))
	return b.String()
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
