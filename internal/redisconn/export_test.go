package redisconn

import "github.com/redis/go-redis/v9"

// NewCounting is New that also returns how many coalesced commands wait
// for a round trip to end.
func NewCounting(s *Spec) (redis.UniversalClient, func() int) {
	c, co := newHooked(s)
	return c, func() int {
		co.mu.Lock()
		defer co.mu.Unlock()
		return len(co.queue)
	}
}
