package redistest

import (
	"context"
	"testing"
)

func TestRestartKeepsAppendOnlyWrites(t *testing.T) {
	s := StartWith(t, Options{AppendOnly: true})
	ctx := context.Background()
	c := s.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	got, err := s.Client().Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart: got %q, %v; want v", got, err)
	}
}

func TestSentinelPromotesTheReplicaWhenThePrimaryDies(t *testing.T) {
	set := StartSentinel(t, SentinelOptions{Password: "data-pw", SentinelPassword: "sentinel-pw"})
	ctx := context.Background()
	if err := set.Primary.Client().Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	set.WaitReplicated()
	old := set.Primary
	old.Kill()
	promoted := set.WaitFailover()
	if promoted == old || set.Primary != promoted || set.MasterAddr() != promoted.Addr {
		t.Fatalf("after the failover: primary %s, sentinels name %q; want the replica", set.Primary.Addr, set.MasterAddr())
	}
	if got, err := promoted.Client().Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("promoted replica: k = %q, %v; want the replicated write", got, err)
	}
}

func TestClusterSpreadsTheSlotsOverItsNodes(t *testing.T) {
	c := StartCluster(t, 3)
	ctx := context.Background()
	rc := c.Client()
	owners := map[*Server]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if err := rc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
		n := c.NodeFor(k)
		owners[n] = true
		// The node NodeFor names holds the key itself.
		if got, err := n.Client().Get(ctx, k).Result(); err != nil || got != k {
			t.Fatalf("node %s for %s: %q, %v", n.Addr, k, got, err)
		}
	}
	if len(owners) != 3 {
		t.Fatalf("8 keys landed on %d nodes, want all 3", len(owners))
	}
}
