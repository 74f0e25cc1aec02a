package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A Redis whose maxmemory-policy evicts drops rows and tasks silently:
// both binaries' /readyz answer 503 naming the policy from their reading at
// start, and 200 again once a later reading (every minute) finds
// noeviction. The stack's Redis keeps an append-only file: the persistence
// gauge says on.
func TestEvictingRedisIsNotReady(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	if err := s.redis.Client().ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	hook := s.webhook()
	work, workURL := s.worker()
	bases := map[*proc]string{hook: s.apiURL, work: workURL}
	const word = "maxmemory-policy allkeys-lru evicts rows; set noeviction"
	for p, base := range bases {
		var failed map[string]string
		eventually(t, 30*time.Second, p.name+" /readyz naming the evicting policy", func() bool {
			var code int
			code, failed = readyz(t, base)
			return code == http.StatusServiceUnavailable && failed["redis_settings"] == word
		})
		if len(failed) != 1 {
			t.Errorf("%s /readyz failed %v, want only redis_settings", p.name, failed)
		}
		for _, series := range []string{`queen_redis_eviction_state{state="evicts"}`, `queen_redis_persistence_state{state="on"}`} {
			if v := metricValue(t, base, series); v != 1 {
				t.Errorf("%s /metrics: %s %v, want 1", p.name, series, v)
			}
		}
	}
	if err := s.redis.Client().ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	for p, base := range bases {
		eventually(t, 90*time.Second, p.name+" /readyz 200 once the policy is noeviction", func() bool {
			code, _ := readyz(t, base)
			return code == http.StatusOK
		})
		if !strings.Contains(p.out.String(), "redis evicts: not ready") {
			t.Errorf("%s logged no ERROR line naming the eviction", p.name)
		}
	}
}
