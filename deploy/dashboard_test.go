package deploy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The Grafana dashboard queries only series the binaries export, scoped to
// the release, and is off unless asked for. Here "export" is what the code
// registers; e2e's TestDashboardSeriesAreExportedByTheRunningBinaries reads
// each series off the built binaries' /metrics.
func TestGrafanaDashboardQueriesWhatTheCodeExports(t *testing.T) {
	for _, cm := range render(t, ciFileValues(t)).ConfigMaps {
		if _, ok := cm.Labels["grafana_dashboard"]; ok {
			t.Fatalf("a dashboard ConfigMap %s by default", cm.Name)
		}
	}
	o := render(t, with(ciFileValues(t), "metrics.grafanaDashboard", map[string]any{"enabled": true,
		"annotations": map[string]any{"grafana_folder": "queen-app"}}))
	var board string
	for _, cm := range o.ConfigMaps {
		if cm.Labels["grafana_dashboard"] == "1" && cm.Annotations["grafana_folder"] == "queen-app" {
			board = cm.Data["queen-app.json"]
		}
	}
	if board == "" {
		t.Fatal("no ConfigMap labelled grafana_dashboard with queen-app.json and the folder annotation")
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(board), &d); err != nil || len(d.Panels) == 0 {
		t.Fatalf("the dashboard is no Grafana JSON with panels: %v", err)
	}
	exported := exportedMetrics(t)
	series := regexp.MustCompile(`\bqueen_[a-z_]+\b`)
	queried := map[string]bool{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			names := series.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q queries no queen_ series: %s", p.Title, tg.Expr)
			}
			for _, m := range names {
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suffix); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] {
					t.Errorf("panel %q queries %s, which no binary exports", p.Title, m)
				}
				queried[base] = true
			}
			if !strings.Contains(tg.Expr, `namespace="`+namespace+`"`) || !strings.Contains(tg.Expr, release+"-queen-app-(api|worker)") {
				t.Errorf("panel %q is not scoped to the release: %s", p.Title, tg.Expr)
			}
		}
	}
	for _, need := range []string{
		"queen_webhook_requests_total",      // deliveries by outcome
		"queen_claims_decisions_total",      // frees and would-frees by rule
		"queen_asynq_tasks",                 // the backlog by state
		"queen_export_outcomes_total",       // export pushes by state
		"queen_github_rate_limit_remaining", // GitHub's rate limit
		"queen_task_duration_seconds",       // re-evaluation run time
		"queen_webhook_to_free_seconds",     // webhook-to-free latency
		"queen_redis_up",                    // Redis availability
	} {
		if !queried[need] {
			t.Errorf("no panel reads %s", need)
		}
	}
}
