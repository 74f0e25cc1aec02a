package redisavail

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// UpTimeout bounds the PING of a scrape, as /readyz bounds its checks.
const UpTimeout = 2 * time.Second

// upCollector is queen_redis_up.
type upCollector struct {
	ping func(context.Context) error
	desc *prometheus.Desc
}

// NewUpCollector reports queen_redis_up at each scrape: 1 when ping (the
// binary's own client's PING) answers within UpTimeout, else 0. Asked at
// scrape time, not remembered from the last request, so an idle binary's
// Redis is still watched and a scrape never shows a stale 1.
func NewUpCollector(ping func(context.Context) error) prometheus.Collector {
	return &upCollector{ping: ping, desc: prometheus.NewDesc("queen_redis_up",
		"1 when this binary's Redis answered a PING at the scrape, 0 when it did not.", nil, nil)}
}

func (c *upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *upCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), UpTimeout)
	defer cancel()
	up := 0.0
	if c.ping(ctx) == nil {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, up)
}
