package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/version"
)

// buildInfo is queen_build_info{version,commit,goversion} 1, so a scrape
// says which build answered it.
func buildInfo() prometheus.Collector {
	b := version.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "queen_build_info",
		Help: "The running build: release version, source commit and Go version; always 1.",
		ConstLabels: prometheus.Labels{
			"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion,
		},
	})
	g.Set(1)
	return g
}
