package e2e

import (
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redistest"
)

// redisForm is a Redis deployment the binaries are pointed at: one of
// QUEEN_REDIS_URL's forms, started for a test.
type redisForm struct {
	env  map[string]string            // QUEEN_REDIS_URL and its password variables
	open func() redis.UniversalClient // the test's own client, built as the binaries build theirs
}

// sentinelForm points the binaries at set through its sentinels, the
// passwords in their own variables.
func sentinelForm(set *redistest.SentinelSet) *redisForm {
	return &redisForm{env: map[string]string{
		"QUEEN_REDIS_URL":               set.URL(),
		"QUEEN_REDIS_PASSWORD":          set.Password(),
		"QUEEN_REDIS_SENTINEL_PASSWORD": set.SentinelPassword(),
	}, open: set.Open}
}

// clusterForm points the binaries at every node of c.
func clusterForm(c *redistest.Cluster) *redisForm {
	return &redisForm{env: map[string]string{"QUEEN_REDIS_URL": c.URL()}, open: c.Open}
}
