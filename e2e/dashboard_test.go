package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardSeries are the metric names the chart's Grafana dashboard
// queries, a histogram's _bucket, _sum and _count read as the histogram.
func dashboardSeries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../charts/queen-app/dashboards/queen-app.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range regexp.MustCompile(`\bqueen_[a-z_]+\b`).FindAllString(tg.Expr, -1) {
				m = regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(m, "")
				if !slices.Contains(out, m) {
					out = append(out, m)
				}
			}
		}
	}
	if len(out) < 5 {
		t.Fatalf("the dashboard queries %v only", out)
	}
	return out
}

// exported are the metric families a running binary's /metrics shows now.
func exported(t *testing.T, url string, into map[string]string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// A family without samples (a vector nothing observed yet) shows
		// no sample line: count only families with one.
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		name = regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(name, "")
		into[name] = url
	}
}

// TestDashboardSeriesAreExportedByTheRunningBinaries: every series the
// chart's dashboard queries is on the /metrics of the built webhook or
// worker once they have done what the panel shows: a delivery that frees a
// claim (deliveries, webhook to free, decisions, task runs, GitHub's rate
// limit, Redis availability, the queue), and an export push.
func TestDashboardSeriesAreExportedByTheRunningBinaries(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}

	f := newClosedPRStack(t, 9121, 521)
	id := f.deliverPR(9121, 521, "closed", false, "d-dash-1")
	frCheckFreed(t, f.waitFreed(9121), "d-dash-1")
	f.waitDone(id)
	exported(t, f.apiURL+"/metrics", seen)
	exported(t, f.workerURL+"/metrics", seen)
	if n := f.metric("queen_webhook_to_free_seconds_count", `outcome="freed"`); n != 1 {
		t.Errorf("queen_webhook_to_free_seconds_count{freed} = %v, want 1", n)
	}
	if n := f.metric("queen_redis_up"); n != 1 {
		t.Errorf("the worker's queen_redis_up = %v with Redis up, want 1", n)
	}

	x := newExStack(t, exOpts{sweep: "0s"})
	x.webhook()
	head := x.branch(82, map[string]string{"src/s82.rs": "fn a() {}\n"})
	x.accept(82, head, nil)
	x.startWorker()
	var out map[string]any
	if code := apiJSON(t, "POST", x.apiURL+"/v1/repos/"+repo+"/exports/82/push", apiToken, nil, &out); code != 202 {
		t.Fatalf("export push: %d %v, want 202", code, out)
	}
	x.waitStates("pr_opened", 82)
	exported(t, "http://"+x.workerAddr+"/metrics", seen)

	for _, s := range dashboardSeries(t) {
		if seen[s] == "" {
			t.Errorf("the dashboard queries %s; no running binary exports it", s)
		}
	}
}
