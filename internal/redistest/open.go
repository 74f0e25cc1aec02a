package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redisconn"
)

// Open returns the client the binaries build for a QUEEN_REDIS_URL and its
// two password variables (redisconn.New), closed at cleanup.
func Open(tb testing.TB, url, password, sentinelPassword string) redis.UniversalClient {
	tb.Helper()
	spec, err := redisconn.Parse(url, password, sentinelPassword)
	if err != nil {
		tb.Fatal(err)
	}
	c := redisconn.New(spec)
	tb.Cleanup(func() { c.Close() })
	return c
}

// Open is the binaries' client of the set.
func (set *SentinelSet) Open() redis.UniversalClient {
	set.tb.Helper()
	return Open(set.tb, set.URL(), set.Password(), set.SentinelPassword())
}

// Open is the binaries' client of the cluster.
func (c *Cluster) Open() redis.UniversalClient {
	c.tb.Helper()
	return Open(c.tb, c.URL(), "", "")
}
