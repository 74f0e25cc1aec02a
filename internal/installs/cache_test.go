package installs

import (
	"context"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/redistest"
)

func (c *Cache) loaded() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.valid
}

// inMemory is the installation the cache holds for repo, without Redis.
func (c *Cache) inMemory(repo string) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.repos[ghrepo.Key(repo)]; ok && c.valid {
		return e.id
	}
	return 0
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The cache follows writes made by another replica's registry: an installed
// repository is answered from memory (Redis hung, it still answers), any
// other answer comes from Redis, and a lost subscription falls back to Redis
// until it is back.
func TestCacheFollowsTheRegistry(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := NewCache(ctx, srv.Client())
	t.Cleanup(func() { cancel(); <-c.Done() })
	other := New(srv.Client()) // another replica's writes
	const repo = "Codertocat/Hello-World"

	eventually(t, "the first load", c.loaded)
	must(t, other.Set(ctx, Installation{ID: 7, Repos: []string{repo}}))
	// In memory, not only answered: Lookup asks Redis for what memory lacks,
	// and the reload after the publish runs on its own (this flaked 1 in 4).
	eventually(t, "the installation to reach the cache", func() bool { return c.inMemory(repo) == 7 })

	srv.Pause()
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	id, susp, ok, err := c.Lookup(short, repo)
	if err != nil || !ok || susp || id != 7 {
		t.Fatalf("with Redis hung: Lookup = %d %v %v %v, want installation 7 from memory", id, susp, ok, err)
	}
	if _, _, _, err := c.Lookup(short, "someone/else"); err == nil {
		t.Fatal("with Redis hung an unknown repository was answered from memory, want Redis asked (an error)")
	}
	stop()
	srv.Resume()

	must(t, other.Suspend(ctx, 7))
	eventually(t, "the suspension to be read", func() bool {
		_, susp, ok, err := c.Lookup(ctx, repo)
		return err == nil && ok && susp
	})
	must(t, other.Unsuspend(ctx, 7))
	must(t, other.RemoveRepos(ctx, 7, repo))
	eventually(t, "the removal to be read", func() bool {
		_, _, ok, err := c.Lookup(ctx, repo)
		return err == nil && !ok
	})
	must(t, other.AddRepos(ctx, 8, repo))
	eventually(t, "the move to installation 8", func() bool {
		id, _, ok, err := c.Lookup(ctx, repo)
		return err == nil && ok && id == 8
	})
	must(t, other.Replace(ctx, []Installation{{ID: 9, Repos: []string{repo}}}, true))
	eventually(t, "the sync's registry", func() bool {
		id, _, ok, err := c.Lookup(ctx, repo)
		return err == nil && ok && id == 9
	})

	// A restart drops the subscription: Redis answers until the cache has
	// subscribed and reloaded, which then sees a write made meanwhile.
	srv.Restart()
	must(t, other.Remove(ctx, 9))
	eventually(t, "the reload after the restart", func() bool {
		_, _, ok, err := c.Lookup(ctx, repo)
		return err == nil && !ok && c.loaded()
	})
}
