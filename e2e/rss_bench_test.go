package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/sandbox"
	"github.com/queen-app/queen-app/internal/tasks"
)

// rssRows is the size of issue 11's memory figures: 10,000 queued tasks,
// a 10,000-row sweep.
const rssRows = 10000

// BenchmarkWorkerRSS runs the built worker against a private Redis and the
// local GitHub: 10,000 accepted rows, 10,000 queued claim:reevaluate tasks
// (one per row) that it works off, then one claim:sweep of the 10,000
// rows. It reports the process's peak resident set (VmHWM of
// /proc/<pid>/status) after the queue drained and after the sweep.
//
//	go test -run '^$' -bench WorkerRSS -benchtime 1x ./e2e/
func BenchmarkWorkerRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		rssOnce(b)
	}
}

func rssOnce(b *testing.B) {
	b.StopTimer()
	sb, err := sandbox.Start(sandbox.Options{Dir: b.TempDir(), Repo: repo, Installation: instID, ExportToken: exToken})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	rs := redistest.Start(b)
	rdb := rs.Client()
	ctx := context.Background()
	l := ledger.New(rdb, ledger.Options{})
	now := time.Now().UTC()
	row := map[string]json.RawMessage{
		"started":       json.RawMessage(`true`),
		"dispatched_at": json.RawMessage(strconv.Quote(now.Add(-2 * time.Hour).Format(time.RFC3339))),
		"finished_at":   json.RawMessage(strconv.Quote(now.Add(-time.Hour).Format(time.RFC3339))),
		"review_state":  json.RawMessage(`"accept"`),
		"owned_paths":   json.RawMessage(`["src/compiler.rs", "src/parser.rs"]`),
	}
	client := asynq.NewClientFromRedisClient(rdb)
	defer client.Close()
	for i := int64(1); i <= rssRows; i++ {
		if _, err := l.Upsert(ctx, repo, i, row, audit.API("bench")); err != nil {
			b.Fatal(err)
		}
		task, err := tasks.NewReevaluate(tasks.ReevaluatePayload{Repo: repo, Issue: i, Delivery: fmt.Sprintf("bench-%d", i),
			Event: "pull_request", Action: "closed", InstallationID: instID}, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := client.Enqueue(task); err != nil {
			b.Fatal(err)
		}
	}

	env := sb.GitHubEnv()
	addr := freeAddr(b)
	for k, v := range map[string]string{
		"QUEEN_REDIS_URL": rs.URL(), "QUEEN_API_LISTEN": addr,
		"QUEEN_SWEEP_INTERVAL": "0s", "QUEEN_REDELIVER_INTERVAL": "0s", "QUEEN_EXPORT_SWEEP_INTERVAL": "0s",
	} {
		env[k] = v
	}
	b.StartTimer()
	p := start(b, "worker", env)
	waitHTTP(b, p, "http://"+addr+"/healthz")
	insp := asynq.NewInspectorFromRedisClient(rdb)
	eventually(b, 15*time.Minute, "the worker to work off the queue", func() bool {
		q, err := insp.GetQueueInfo(tasks.Queue)
		time.Sleep(250 * time.Millisecond)
		return err == nil && q.Pending == 0 && q.Active == 0 && q.Retry == 0 && q.Scheduled == 0
	})
	if q, _ := insp.GetQueueInfo(tasks.Queue); q.Archived != 0 {
		b.Fatalf("%d tasks archived", q.Archived)
	}
	queueHWM := vmHWM(b, p.cmd.Process.Pid)

	// The queue's re-evaluations read together in GraphQL too: count the sweep's alone.
	before := sb.GitHub.Count(sandbox.RouteGraphQL)
	if _, err := client.Enqueue(tasks.NewSweep()); err != nil {
		b.Fatal(err)
	}
	eventually(b, 15*time.Minute, "the claim sweep to run", func() bool {
		time.Sleep(250 * time.Millisecond)
		return sweepRuns(b, "http://"+addr+"/metrics") >= 1
	})
	sweepHWM := vmHWM(b, p.cmd.Process.Pid)
	b.StopTimer()
	p.stop()
	if got := sb.GitHub.Count(sandbox.RouteGraphQL) - before; got != rssRows/ledger.DefaultPage {
		b.Fatalf("%d GraphQL requests; want one sweep of %d rows", got, rssRows)
	}
	b.ReportMetric(queueHWM, "queue-hwm-MiB")
	b.ReportMetric(sweepHWM, "sweep-hwm-MiB")
}

// vmHWM is the peak resident set of process pid, in MiB.
func vmHWM(tb testing.TB, pid int) float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				tb.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb / 1024
		}
	}
	tb.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// sweepRuns reads queen_sweep_runs_total{sweep="claim",result="ok"} from
// the worker's /metrics.
func sweepRuns(tb testing.TB, url string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "queen_sweep_runs_total{") && strings.Contains(line, `sweep="claim"`) && strings.Contains(line, `result="ok"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return 0
}
