package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/queen-app/queen-app/internal/worker
cpu: Intel(R) Xeon(R) Processor
BenchmarkExportDrain-2   	       1	219589693216 ns/op	       219.6 drain-s	      1024 pr-gap-min-ms
BenchmarkIngest/clients=8-2   	       1	     1000 ns/op	         0.71 accepted-x
PASS
ok  	github.com/queen-app/queen-app/internal/worker	221.607s
`

func TestParseReadsReportedMetrics(t *testing.T) {
	res := parse(sample)
	if v := res["BenchmarkExportDrain"]["drain-s"]; v != 219.6 {
		t.Fatalf("drain-s %v, want 219.6 (%v)", v, res)
	}
	if v := res["BenchmarkIngest/clients=8"]["accepted-x"]; v != 0.71 {
		t.Fatalf("accepted-x of clients=8: %v, want 0.71 (%v)", v, res)
	}
}

// A figure whose benchmark is not in the output, or whose package does not
// exist, is "benchmark not found" in the document; the others are rendered
// with their ratio and whether they met the target.
func TestRenderSaysNotFoundAndMet(t *testing.T) {
	figs := []Figure{
		{Section: issue11, Name: "drain", Pkg: "./internal/worker/", Bench: "BenchmarkExportDrain", Benchtime: "1x",
			Metric: "drain-s", Target: AtMost(240), Baseline: Fixed(426, "issue 11")},
		{Section: issue11, Name: "burst", Pkg: "./internal/worker/", Bench: "BenchmarkBurst", Benchtime: "1x",
			Metric: "github-requests", Target: AtMost(12)},
		{Section: issue11, Name: "to free", Pkg: "./nowhere/", Bench: "BenchmarkWebhookToFree", Benchtime: "1x",
			Metric: "p99-over-delay-ms", Target: AtMost(300)},
	}
	runs := plan(figs)
	if len(runs) != 2 || !strings.Contains(runs[0].command(), "'^(BenchmarkExportDrain|BenchmarkBurst)$'") {
		t.Fatalf("runs %+v", runs)
	}
	runs[0].Output, runs[0].Results = sample, parse(sample)
	execute(context.Background(), runs[1]) // a package that does not exist
	if !runs[1].NoPackage {
		t.Fatalf("./nowhere/ not taken for a missing package: %v\n%s", runs[1].Err, runs[1].Output)
	}
	var buf bytes.Buffer
	render(&buf, figs, runs, machine{CPU: "test CPU", Cores: 2, GoVersion: "go1.26", Date: time.Now()})
	doc := buf.String()
	for _, want := range []string{
		"| drain | `BenchmarkExportDrain` | 219.6 drain-s | 426 (issue 11) | 0.515x | ≤ 240 | yes |",
		"| burst | `BenchmarkBurst` | benchmark not found |",
		"| to free | `BenchmarkWebhookToFree` | benchmark not found (no package ./nowhere/) |",
		"test CPU, 2 cores, go1.26",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
}
