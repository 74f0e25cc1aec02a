package worker

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// drainBacklog is the measured backlog of issue 11: 213 accepted
// dispatches without a PR after days of failed export pushes.
const drainBacklog = 213

// BenchmarkExportDrain publishes the measured backlog after an export
// outage, as deployed: PR creations paced 1 s apart per installation (in
// Redis), git pushes unpaced, against a real git remote over HTTP, the
// export stand-in and the local GitHub. During the outage every push fails
// and is retried every second, so drain-s is the drain itself (from the
// outage's end to the last row recorded pr_opened), not the last backoff.
//
//	go test -run '^$' -bench ExportDrain -benchtime 1x ./internal/worker/
func BenchmarkExportDrain(b *testing.B) {
	for i := 0; i < b.N; i++ {
		drainOnce(b)
	}
}

func drainOnce(b *testing.B) {
	b.StopTimer()
	e := newEnv(b, options{export: true, realPacing: true})
	heads := map[int64]string{}
	for i := int64(1); i <= drainBacklog; i++ {
		heads[i] = e.accepted(i, map[string]string{fmt.Sprintf("src/part%d.rs", i): fmt.Sprintf("fn part%d() {}\n", i)})
	}
	e.exp.Fail(http.StatusServiceUnavailable, -1)
	if rep := e.exportSweep(); rep.Enqueued != drainBacklog {
		b.Fatalf("sweep %+v, want %d enqueued", rep, drainBacklog)
	}
	e.serve(time.Second)
	e.within(5*time.Minute, time.Second, "every push to meet the outage", func() bool {
		for i := range heads {
			if e.exportState(i) != StateRetrying {
				return false
			}
		}
		return true
	})
	e.mu.Lock()
	e.creates = nil
	e.mu.Unlock()

	e.exp.Fail(0, 0)
	start := time.Now()
	b.StartTimer()
	e.within(20*time.Minute, 250*time.Millisecond, "the backlog to drain", e.allPublished(heads))
	took := time.Since(start)
	b.StopTimer()
	e.checkPublished(heads)

	e.mu.Lock()
	creates := slices.Clone(e.creates)
	e.mu.Unlock()
	slices.SortFunc(creates, func(a, b time.Time) int { return a.Compare(b) })
	gap := time.Duration(0)
	for i := 1; i < len(creates); i++ {
		if d := creates[i].Sub(creates[i-1]); i == 1 || d < gap {
			gap = d
		}
	}
	if len(creates) != drainBacklog {
		b.Fatalf("%d PR creations, want %d", len(creates), drainBacklog)
	}
	b.ReportMetric(took.Seconds(), "drain-s")
	b.ReportMetric(float64(gap.Milliseconds()), "pr-gap-min-ms")
	b.ReportMetric(float64(drainBacklog)/took.Minutes(), "prs/min")
	// What the two paced turns per branch it replaces needed at least.
	b.ReportMetric((2 * time.Duration(drainBacklog-1) * DefaultWriteSpacing).Seconds(), "paced-floor-s")
}

// sweepRows is the sweep of issue 11's cost figure.
const sweepRows = 10000

// BenchmarkSweepCost runs one claim:sweep (the installations sync, then one
// GraphQL query per 100 accepted branches) over 10,000 accepted rows and
// counts every request the local GitHub was sent. The installation token
// is minted before, as a running worker holds one (GitHub's last an hour,
// the sweep runs every 10 minutes).
//
//	go test -run '^$' -bench SweepCost -benchtime 1x ./internal/worker/
func BenchmarkSweepCost(b *testing.B) {
	e := newEnv(b, options{freeClosedPR: true})
	for i := int64(1); i <= sweepRows; i++ {
		e.row(i, "accept", nil)
		if i%10 == 0 {
			e.pr(i, "closed", false)
		}
	}
	if _, err := e.app.InstallationToken(e.ctx, instID); err != nil {
		b.Fatal(err)
	}
	var requests int
	for b.Loop() {
		e.mu.Lock()
		e.requests = 0
		e.mu.Unlock()
		if err := e.w.Sweep(e.ctx, tasks.NewSweep()); err != nil {
			b.Fatal(err)
		}
		e.mu.Lock()
		requests = e.requests
		e.mu.Unlock()
	}
	b.Logf("%d GitHub requests: %d GraphQL, %d installation lists, %d repository lists, %d token mints",
		requests, e.gh.Count(githubtest.RouteGraphQL)/b.N, e.gh.Count(githubtest.RouteInstallations)/b.N,
		e.gh.Count(githubtest.RouteRepos)/b.N, e.gh.Count(githubtest.RouteMint)-1)
	b.ReportMetric(float64(requests)*1000/sweepRows, "github-req-per-1000-rows")
	b.ReportMetric(float64(sweepRows)/b.Elapsed().Seconds()*float64(b.N), "rows/s")
}
