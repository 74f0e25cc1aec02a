package redisavail_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redistest"
)

// queen_redis_up follows a real Redis: 1 while it answers, 0 once it is
// gone or refuses the password, each scrape asking anew.
func TestRedisUpFollowsRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	reg := prometheus.NewRegistry()
	reg.MustRegister(redisavail.NewUpCollector(func(ctx context.Context) error { return rdb.Ping(ctx).Err() }))
	scrape := func(want float64) {
		t.Helper()
		if v := gaugeValue(t, reg); v != want {
			t.Fatalf("queen_redis_up %v, want %v", v, want)
		}
	}
	scrape(1)

	// A password Redis refuses is no Redis to this binary.
	locked := redistest.Start(t)
	if err := locked.Client().ConfigSet(context.Background(), "requirepass", "right-password-1").Err(); err != nil {
		t.Fatal(err)
	}
	wrong := redis.NewClient(&redis.Options{Addr: locked.Addr, Password: "wrong-password-1", MaxRetries: -1})
	defer wrong.Close()
	refused := prometheus.NewRegistry()
	refused.MustRegister(redisavail.NewUpCollector(func(ctx context.Context) error { return wrong.Ping(ctx).Err() }))
	if v := gaugeValue(t, refused); v != 0 {
		t.Errorf("queen_redis_up %v with a refused password, want 0", v)
	}

	srv.Kill()
	scrape(0)
}

func gaugeValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "queen_redis_up" || mfs[0].GetType().String() != "GAUGE" {
		t.Fatalf("gather: %v %v; want the one gauge queen_redis_up", mfs, err)
	}
	return mfs[0].GetMetric()[0].GetGauge().GetValue()
}
