package ledger

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/testkit"
)

// startCluster starts a one-node Redis Cluster owning every slot. Even one
// node refuses a script whose keys hash to different slots, so it proves
// the key layout is Cluster-safe.
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found on PATH (install it: apt-get install -y redis-server): %v", err)
	}
	port := clusterPort(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server --cluster-enabled: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	node := redis.NewClient(&redis.Options{Addr: addr})
	defer node.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for node.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("cluster node %s did not answer:\n%s", addr, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("cluster addslotsrange: %v", err)
	}
	for {
		info, _ := node.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster state never ok:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterPort finds a free port whose cluster bus port (+10000) is free too.
func clusterPort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return p
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

func TestClusterKeysShareOneSlot(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()
	clk := testkit.NewClock(t0)
	l := New(c, Options{Now: clk.Now, FreeClosedPR: true})
	if !l.split {
		t.Fatal("a ClusterClient must write the audit stream outside the row's script")
	}
	for _, r := range []string{"hive/t27", "other/repo", "a-b/c.d"} {
		if _, err := l.Upsert(ctx, r, 7, patch(t, accepted), "api"); err != nil {
			t.Fatalf("upsert on a cluster: %v", err)
		}
		res, err := l.RecordPRs(ctx, r, 7, prs(0, 0, 1), "d")
		if err != nil || res.Outcome != DecisionFree {
			t.Fatalf("record prs on a cluster: %+v %v", res, err)
		}
	}
	if _, err := l.Delete(ctx, "other/repo", 7, "gone", "api"); err != nil {
		t.Fatal(err)
	}
	rows, next, err := l.List(ctx, "", "", 10)
	if err != nil || next != "" || len(rows) != 2 {
		t.Fatalf("list on a cluster: %d rows %q %v", len(rows), next, err)
	}
	audit, err := l.Audit(ctx, 100)
	if err != nil || len(audit) != 7 {
		t.Fatalf("audit on a cluster: %d entries, %v; want 7", len(audit), err)
	}
	if h, err := l.History(ctx, "hive/t27", 7, 10); err != nil || len(h) != 2 || h[0].Outcome.Freed != dispatch.RuleAccept {
		t.Fatalf("history on a cluster: %+v %v", h, err)
	}
	// The same script with the global stream among its keys is refused, as it would be on a real cluster.
	k := l.keysOf("hive/t27", 8)
	err = casScript.Run(ctx, c, []string{k.row, k.history, k.rows, k.accepted, k.sendbacks, l.auditKey()},
		0, 1, "{}", 8, "0", "0", "{}", 10, 10, "w").Err()
	if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "CROSSSLOT") {
		t.Fatalf("cross-slot script: %v; want CROSSSLOT", err)
	}
	if _, err := l.Get(ctx, "hive/t27", 8); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused script wrote a row: %v", err)
	}
}
