package redisconn_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/redistest"
)

// scheduleScript is asynq's (v0.26) script for a task scheduled later: the
// write a webhook delivery makes.
var scheduleScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 1 then
	return 0
end
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "scheduled")
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[3])
return 1
`)

// BenchmarkCoalesce runs asynq's schedule script from 1, 2, 8 and 32
// goroutines at once, marked WithCoalesce and not, on one client of a
// private redis-server: coalesced-x is the coalesced rate over the plain
// one (medians of seven rounds each, alternating which goes first).
func BenchmarkCoalesce(b *testing.B) {
	rdb := redistest.Open(b, redistest.Start(b).URL(), "", "")
	msg := make([]byte, 400)
	var seq atomic.Int64
	// rate runs n scripts from goroutines and returns scripts per second.
	rate := func(b *testing.B, ctx context.Context, goroutines, n int) float64 {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range goroutines {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					id := strconv.FormatInt(seq.Add(1), 10)
					err := scheduleScript.Run(ctx, rdb, []string{"asynq:{default}:t:" + id, "asynq:{default}:scheduled"},
						msg, time.Now().Add(time.Hour).Unix(), id).Err()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	for _, g := range []int{1, 2, 8, 32} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) {
			var plain, coalesced []float64
			for b.Loop() {
				for round := range 7 {
					// Each goes first in turn: the keys grow the
					// keyspace, which the later one pays.
					if round%2 == 0 {
						plain = append(plain, rate(b, context.Background(), g, 5000))
					}
					coalesced = append(coalesced, rate(b, redisconn.WithCoalesce(context.Background()), g, 5000))
					if round%2 == 1 {
						plain = append(plain, rate(b, context.Background(), g, 5000))
					}
				}
			}
			slices.Sort(plain)
			slices.Sort(coalesced)
			p, c := plain[len(plain)/2], coalesced[len(coalesced)/2]
			b.ReportMetric(p, "plain/s")
			b.ReportMetric(c, "coalesced/s")
			b.ReportMetric(c/p, "coalesced-x")
		})
	}
}
