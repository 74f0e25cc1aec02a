package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// Cluster is a Redis Cluster of private nodes, every slot assigned, no replicas.
type Cluster struct {
	Nodes []*Server
	tb    testing.TB
}

// StartCluster starts an n-node Redis Cluster: each node owns an equal
// range of slots, the nodes meet, and it returns once every node reports
// cluster_state:ok with all n nodes known.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("StartCluster: %d nodes", n)
	}
	c := &Cluster{tb: tb}
	for range n {
		c.Nodes = append(c.Nodes, StartWith(tb, Options{Cluster: true, noSlots: true}))
	}
	ctx := context.Background()
	for i, s := range c.Nodes {
		node := s.conn()
		first, last := slotRange(i, n)
		err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err()
		// Meeting every earlier node, not just the first, spares waiting for gossip.
		for _, earlier := range c.Nodes[:i] {
			if err == nil {
				err = node.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(earlier.Port)).Err()
			}
		}
		node.Close()
		if err != nil {
			tb.Fatalf("cluster node %s: %v", s.Addr, err)
		}
	}
	waitClusterOK(tb, c.Nodes)
	return c
}

// waitClusterOK waits until every node sees a healthy cluster of all nodes.
func waitClusterOK(tb testing.TB, nodes []*Server) {
	tb.Helper()
	ctx := context.Background()
	want := []string{"cluster_state:ok", "cluster_slots_assigned:" + strconv.Itoa(slots),
		"cluster_known_nodes:" + strconv.Itoa(len(nodes))}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range nodes {
		node := s.conn()
		for {
			info, _ := node.ClusterInfo(ctx).Result()
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(info, w)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				node.Close()
				tb.Fatalf("cluster node %s never saw %v:\n%s", s.Addr, want, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
		node.Close()
	}
}

// URL is the cluster's redis+cluster:// URL naming every node.
func (c *Cluster) URL() string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// Client returns a go-redis cluster client, closed at cleanup.
func (c *Cluster) Client() *redis.ClusterClient {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	c.tb.Cleanup(func() { rc.Close() })
	return rc
}

// NodeFor is the node that owns key's slot, as StartCluster assigned them.
func (c *Cluster) NodeFor(key string) *Server {
	c.tb.Helper()
	node := c.Nodes[0].conn()
	defer node.Close()
	slot, err := node.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		c.tb.Fatalf("cluster keyslot %q: %v", key, err)
	}
	n := len(c.Nodes)
	for i := range n {
		if first, last := slotRange(i, n); int(slot) >= first && int(slot) <= last {
			return c.Nodes[i]
		}
	}
	c.tb.Fatalf("no node owns slot %d", slot)
	return nil
}

// slotRange is node i's slots of n.
func slotRange(i, n int) (first, last int) { return i * slots / n, (i+1)*slots/n - 1 }
