package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// startCluster starts a one-node Redis Cluster: it refuses a script whose
// keys hash to different slots, so it proves the key layout is Cluster-safe.
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	return redistest.StartWith(t, redistest.Options{Cluster: true}).ClusterClient()
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
		if _, err := l.Upsert(ctx, r, 7, patch(t, accepted), audit.API("api")); err != nil {
			t.Fatalf("upsert on a cluster: %v", err)
		}
		res, err := l.RecordPRs(ctx, r, 7, prs(0, 0, 1), audit.Webhook("d"))
		if err != nil || res.Outcome != DecisionFree {
			t.Fatalf("record prs on a cluster: %+v %v", res, err)
		}
	}
	if _, err := l.Delete(ctx, "other/repo", 7, audit.Source{Kind: audit.KindAPI, Writer: "api", Reason: "gone"}); err != nil {
		t.Fatal(err)
	}
	rows, next, err := l.List(ctx, "", "", 10)
	if err != nil || next != "" || len(rows) != 2 {
		t.Fatalf("list on a cluster: %d rows %q %v", len(rows), next, err)
	}
	trail, err := l.Audit(ctx, 100)
	if err != nil || len(trail) != 7 {
		t.Fatalf("audit on a cluster: %d entries, %v; want 7", len(trail), err)
	}
	if h, err := l.History(ctx, "hive/t27", 7, 10); err != nil || len(h) != 2 || h[0].Outcome.Freed != dispatch.RuleAccept {
		t.Fatalf("history on a cluster: %+v %v", h, err)
	}
	// The same script with the global stream among its keys is refused, as it would be on a real cluster.
	k := l.keysOf("hive/t27", 8)
	f := &fixture{ctx: ctx}
	_, err = f.cas(c, k, l.auditKey(), 0, 1, "{}", 8, "w")
	if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "CROSSSLOT") {
		t.Fatalf("cross-slot script: %v; want CROSSSLOT", err)
	}
	if _, err := l.Get(ctx, "hive/t27", 8); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused script wrote a row: %v", err)
	}
}

// The binaries' client of each multi-server form (redisconn) carries the
// ledger: racing writers keep every acknowledged write, the histories and
// the audit stream agree. On three cluster nodes the repositories' rows
// and the global audit stream and index live on different nodes.
func TestConcurrentTransitionsOnSentinelAndCluster(t *testing.T) {
	t.Run("sentinel", func(t *testing.T) {
		set := redistest.StartSentinel(t, redistest.SentinelOptions{Password: "data-pw"})
		checkConcurrentTransitions(t, newFixtureOn(set.Open(), concurrentOptions))
	})
	t.Run("cluster of three", func(t *testing.T) {
		c := redistest.StartCluster(t, 3)
		if c.NodeFor("queen:{"+repo+"}:rows") == c.NodeFor("queen:audit") {
			t.Fatal("the row keys and the audit stream share a node: the test would not cross nodes")
		}
		rdb := c.Open()
		if _, ok := rdb.(*redis.ClusterClient); !ok {
			t.Fatalf("redis+cluster:// gave %T", rdb)
		}
		f := newFixtureOn(rdb, concurrentOptions)
		if !f.l.split {
			t.Fatal("the cluster client must write the audit stream outside the row's script")
		}
		checkConcurrentTransitions(t, f)
	})
}

// The stream's copy of an entry, written outside the row's script on a
// Cluster, lands once however often it is retried.
func TestAuditAppendIsOncePerWrite(t *testing.T) {
	c := startCluster(t)
	l := New(c, Options{})
	ctx := t.Context()
	for range 3 {
		if err := l.appendAudit(ctx, []byte(`{"repo":"hive/t27","issue":1,"version":1}`), "w-1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.appendAudit(ctx, []byte(`{"repo":"hive/t27","issue":1,"version":2}`), "w-2"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.XLen(ctx, l.auditKey()).Result(); err != nil || n != 2 {
		t.Fatalf("stream length %d %v; want 2 (one per write)", n, err)
	}
}
