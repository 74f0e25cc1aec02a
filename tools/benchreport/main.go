// Command benchreport runs the benchmarks of the figures registry
// (figures.go) and writes what they report (b.ReportMetric) as one
// Markdown document: each figure with its baseline, the ratio, the target,
// the command that measured it, and the machine it ran on.
//
// Benchmarks of one package and -benchtime run in one `go test`. A
// benchmark that does not exist (yet) is reported as "benchmark not found";
// a benchmark that fails is reported as failed and makes the exit status 1
// once the document is written.
//
// Usage (from the repository root):
//
//	go run ./tools/benchreport [-out docs/benchmarks.md] [-only REGEXP]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Figure is one row of the registry.
type Figure struct {
	Section   string
	Name      string // what the figure is, in words
	Pkg       string // the package, "./internal/worker/"
	Bench     string // the top-level benchmark, "BenchmarkExportDrain"
	Sub       string // a sub-benchmark of Bench ("clients=8"), "" for Bench itself
	Benchtime string // -benchtime
	Metric    string // the unit it reports, "drain-s" (ns/op is one)
	Baseline  Baseline
	Target    Target
}

// Baseline is what a figure is compared with: a number measured before
// (with its source) or another benchmark's metric in the same run.
type Baseline struct {
	Value  float64
	Source string
	// Bench, Sub and Metric name a result of the same run.
	Bench, Sub, Metric string
}

// Fixed is a baseline measured before.
func Fixed(v float64, source string) Baseline { return Baseline{Value: v, Source: source} }

// Measured is a baseline measured in the same run.
func Measured(bench, sub, metric string) Baseline {
	return Baseline{Bench: bench, Sub: sub, Metric: metric}
}

// Target is the bound a figure must keep; Op "" has none.
type Target struct {
	Op    string // "<=" or ">="
	Value float64
}

// AtMost and AtLeast are targets.
func AtMost(v float64) Target  { return Target{"<=", v} }
func AtLeast(v float64) Target { return Target{">=", v} }

func (t Target) String() string {
	switch t.Op {
	case "<=":
		return "≤ " + num(t.Value)
	case ">=":
		return "≥ " + num(t.Value)
	}
	return "–"
}

// Met reports whether v keeps the target.
func (t Target) Met(v float64) bool {
	switch t.Op {
	case "<=":
		return v <= t.Value
	case ">=":
		return v >= t.Value
	}
	return true
}

// run is one `go test` of a package and benchtime.
type run struct {
	Pkg, Benchtime string
	Benches        []string
	Args           []string
	Output         string
	Err            error
	NoPackage      bool                          // the package does not exist (yet)
	Results        map[string]map[string]float64 // "Bench" or "Bench/Sub" -> unit -> value
	Took           time.Duration
}

func (r *run) command() string {
	parts := []string{"go"}
	for _, a := range r.Args {
		if strings.ContainsAny(a, " ^$|()*") {
			a = "'" + a + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func main() {
	out := flag.String("out", "docs/benchmarks.md", "the document to write (- for stdout)")
	only := flag.String("only", "", "run only the figures whose benchmark matches this regexp")
	flag.Parse()
	figs := figures
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchreport: -only: %v\n", err)
			os.Exit(2)
		}
		figs = slices.DeleteFunc(slices.Clone(figs), func(f Figure) bool { return !re.MatchString(f.Bench) })
	}
	m := machineNow()
	runs := plan(figs)
	failed := false
	for _, r := range runs {
		fmt.Fprintf(os.Stderr, "benchreport: %s\n", r.command())
		execute(context.Background(), r)
		if r.Err != nil && !r.NoPackage {
			failed = true
			fmt.Fprintf(os.Stderr, "benchreport: %s: %v\n%s\n", r.Pkg, r.Err, tail(withoutLogs(r.Output), 20))
		}
	}
	m.LoadAfter = loadavg()
	var buf bytes.Buffer
	render(&buf, figs, runs, m)
	if *out == "-" {
		_, _ = os.Stdout.Write(buf.Bytes())
	} else if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// plan groups the figures into runs, in registry order.
func plan(figs []Figure) []*run {
	var runs []*run
	byKey := map[string]*run{}
	for _, f := range figs {
		for _, b := range append([]string{f.Bench}, f.Baseline.Bench) {
			if b == "" {
				continue
			}
			key := f.Pkg + " " + f.Benchtime
			r := byKey[key]
			if r == nil {
				r = &run{Pkg: f.Pkg, Benchtime: f.Benchtime}
				byKey[key] = r
				runs = append(runs, r)
			}
			if !slices.Contains(r.Benches, b) {
				r.Benches = append(r.Benches, b)
			}
		}
	}
	for _, r := range runs {
		r.Args = []string{"test", "-run", "^$", "-bench", "^(" + strings.Join(r.Benches, "|") + ")$",
			"-benchtime", r.Benchtime, "-timeout", "60m", r.Pkg}
	}
	return runs
}

// missingPackage matches go's words for a package that is not there.
var missingPackage = regexp.MustCompile(`no Go files|directory not found|cannot find package|matched no packages|is not in std|no required module provides`)

func execute(ctx context.Context, r *run) {
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", r.Args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	r.Err = cmd.Run()
	r.Took = time.Since(start)
	r.Output = out.String()
	r.Results = parse(r.Output)
	r.NoPackage = r.Err != nil && missingPackage.MatchString(r.Output)
}

// procs is the -GOMAXPROCS suffix go test appends to benchmark names.
var procs = regexp.MustCompile(`-\d+$`)

// parse reads the result lines of `go test -bench`: a name, the iteration
// count, then value-unit pairs.
func parse(out string) map[string]map[string]float64 {
	res := map[string]map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		name := procs.ReplaceAllString(f[0], "")
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			m[f[i+1]] = v
		}
		res[name] = m
	}
	return res
}

func key(bench, sub string) string {
	if sub == "" {
		return bench
	}
	return bench + "/" + sub
}

// runOf is the run that measured bench of f's package and benchtime.
func runOf(runs []*run, f Figure) *run {
	for _, r := range runs {
		if r.Pkg == f.Pkg && r.Benchtime == f.Benchtime {
			return r
		}
	}
	return nil
}

// value is what a figure measured, or why there is nothing.
func value(r *run, bench, sub, metric string) (float64, string) {
	if r == nil {
		return 0, "not run"
	}
	res, ok := r.Results[key(bench, sub)]
	switch {
	case ok:
		v, ok := res[metric]
		if !ok {
			return 0, "metric " + metric + " not reported"
		}
		return v, ""
	case r.NoPackage:
		return 0, "benchmark not found (no package " + r.Pkg + ")"
	case r.Err != nil && strings.Contains(r.Output, "--- FAIL: "+bench):
		return 0, "failed (see the run's output)"
	case r.Err != nil:
		return 0, "failed: " + firstLine(tail(r.Output, 3))
	}
	return 0, "benchmark not found"
}

// machine is where and when the figures were measured.
type machine struct {
	CPU, GoVersion, Commit string
	Cores                  int
	Date                   time.Time
	LoadBefore, LoadAfter  string
}

func machineNow() machine {
	m := machine{CPU: cpuModel(), Cores: runtime.NumCPU(), Date: time.Now().UTC(), LoadBefore: loadavg()}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func render(w io.Writer, figs []Figure, runs []*run, m machine) {
	fmt.Fprintf(w, "# Benchmarks\n\n")
	fmt.Fprintf(w, "Written by `make bench` (`go run ./tools/benchreport -out docs/benchmarks.md`); the figures and\n")
	fmt.Fprintf(w, "their targets are the registry in tools/benchreport/figures.go.\n\n")
	fmt.Fprintf(w, "Machine: %s, %d cores, %s, linux/%s; measured %s (commit %s).\n", m.CPU, m.Cores, m.GoVersion,
		runtime.GOARCH, m.Date.Format("2006-01-02 15:04 UTC"), m.Commit)
	fmt.Fprintf(w, "Load average (1, 5, 15 min) %s before, %s after. The machine is shared with other builds:\n", m.LoadBefore, m.LoadAfter)
	fmt.Fprintf(w, "each figure is one run of its benchmark (some take medians inside, as their notes say); read the ratios and the targets, not the last digit.\n")
	for _, s := range sections {
		var rows []Figure
		for _, f := range figs {
			if f.Section == s {
				rows = append(rows, f)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n## %s\n\n", s)
		if n := notes[s]; n != "" {
			fmt.Fprintf(w, "%s\n\n", n)
		}
		fmt.Fprintf(w, "| figure | benchmark | measured | baseline | ratio | target | met |\n")
		fmt.Fprintf(w, "|---|---|---|---|---|---|---|\n")
		for _, f := range rows {
			r := runOf(runs, f)
			v, why := value(r, f.Bench, f.Sub, f.Metric)
			measured, ratio, met := why, "–", "–"
			base := baselineText(f.Baseline)
			if why == "" {
				measured = num(v) + " " + f.Metric
				if b, ok := baselineValue(runs, f); ok && b != 0 {
					ratio = num(v/b) + "x"
					if f.Baseline.Bench != "" {
						base = num(b) + " " + f.Baseline.Metric + " (" + key(f.Baseline.Bench, f.Baseline.Sub) + ", same run)"
					}
				}
				if f.Target.Op != "" {
					met = "yes"
					if !f.Target.Met(v) {
						met = "**no**"
					}
				}
			}
			fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s | %s | %s |\n", f.Name, key(f.Bench, f.Sub), measured, base, ratio, f.Target, met)
		}
		fmt.Fprintf(w, "\nCommands:\n\n")
		seen := map[*run]bool{}
		for _, f := range rows {
			if r := runOf(runs, f); r != nil && !seen[r] {
				seen[r] = true
				fmt.Fprintf(w, "    %s    # %s\n", r.command(), r.Took.Round(time.Second))
			}
		}
	}
	fmt.Fprintf(w, "\n## Result lines\n\nWhat each run printed, as `go test` printed it.\n")
	for _, r := range runs {
		fmt.Fprintf(w, "\n    %s\n", r.command())
		lines := benchLines(r.Output)
		if len(lines) == 0 {
			lines = []string{"(no result lines)"}
		}
		for _, l := range lines {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

// benchLines are the result and log lines of a run, without go test's
// frame (goos, pkg, PASS, ok).
func benchLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "", t == "PASS", strings.HasPrefix(t, "goos:"), strings.HasPrefix(t, "goarch:"),
			strings.HasPrefix(t, "pkg:"), strings.HasPrefix(t, "cpu:"), strings.HasPrefix(t, "ok "):
			continue
		case strings.HasPrefix(t, "{"): // JSON log lines of a failing test
			continue
		}
		lines = append(lines, strings.TrimRight(l, " \t"))
	}
	return lines
}

func baselineText(b Baseline) string {
	switch {
	case b.Bench != "":
		return key(b.Bench, b.Sub) + " (same run)"
	case b.Source != "":
		return num(b.Value) + " (" + b.Source + ")"
	}
	return "–"
}

func baselineValue(runs []*run, f Figure) (float64, bool) {
	b := f.Baseline
	switch {
	case b.Bench != "":
		v, why := value(runOf(runs, f), b.Bench, b.Sub, b.Metric)
		return v, why == ""
	case b.Source != "":
		return b.Value, true
	}
	return 0, false
}

// num prints a figure: whole numbers as they are, others with two
// decimals at most (three significant digits below 1).
func num(v float64) string {
	var s string
	switch a := abs(v); {
	case v == float64(int64(v)):
		return strconv.FormatInt(int64(v), 10)
	case a >= 100:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// withoutLogs drops the binaries' JSON log lines a failed benchmark
// prints, so what is left shows why it failed.
func withoutLogs(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), `{"time"`) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
