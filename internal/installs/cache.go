package installs

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// Cache is a Registry whose Lookup answers from a copy in memory, so that a
// webhook delivery makes one Redis round trip (its enqueue), not two. The
// copy is reloaded whenever a write publishes to Changed, and whenever the
// subscription is (re)established; while it is not subscribed Lookup asks
// Redis.
//
// Only an installed, unsuspended repository is answered from memory: any
// other answer (not installed, suspended) is read from Redis, so a copy one
// event behind can never drop a delivery. At worst, in the moment between a
// removal or a suspension and the reload it publishes, a delivery is
// accepted that Redis would have ignored; the worker reads the registry
// again before deciding anything and skips it.
type Cache struct {
	*Registry

	mu    sync.RWMutex
	valid bool
	repos map[string]cached // by ghrepo.Key

	done chan struct{}
}

type cached struct {
	id        int64
	suspended bool
}

// NewCache returns a Cache over rdb that stays current until ctx ends.
func NewCache(ctx context.Context, rdb redis.UniversalClient) *Cache {
	c := &Cache{Registry: New(rdb), done: make(chan struct{})}
	go c.run(ctx)
	return c
}

// Done is closed once the cache stopped following the registry.
func (c *Cache) Done() <-chan struct{} { return c.done }

// Lookup is Registry.Lookup, from memory for an installed, unsuspended repo.
func (c *Cache) Lookup(ctx context.Context, repo string) (installationID int64, suspended, ok bool, err error) {
	c.mu.RLock()
	e, hit := c.repos[ghrepo.Key(repo)]
	hit = hit && c.valid && !e.suspended
	c.mu.RUnlock()
	if hit {
		return e.id, false, true, nil
	}
	return c.Registry.Lookup(ctx, repo)
}

func (c *Cache) run(ctx context.Context) {
	defer close(c.done)
	ps := c.rdb.Subscribe(ctx, Changed)
	// Receive does not return when ctx ends; closing ps makes it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	for {
		msg, _ := ps.Receive(ctx)
		if ctx.Err() != nil {
			c.invalidate()
			return
		}
		switch msg.(type) {
		case *redis.Subscription, *redis.Message:
			c.reload(ctx)
			continue
		case *redis.Pong:
			continue
		}
		// The subscription is lost: what was published meanwhile is
		// unknown. Redis answers until Receive subscribes again.
		c.invalidate()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cache) invalidate() {
	c.mu.Lock()
	c.valid = false
	c.mu.Unlock()
}

// reload reads the whole registry; a failed read leaves the cache invalid.
func (c *Cache) reload(ctx context.Context) {
	c.invalidate()
	all, err := c.readAll(ctx)
	if err != nil {
		return // Registry.Lookup reports it
	}
	repos := make(map[string]cached, len(all))
	for key, r := range all {
		repos[key] = cached{id: r.InstallationID, suspended: r.Suspended}
	}
	c.mu.Lock()
	c.repos, c.valid = repos, true
	c.mu.Unlock()
}
