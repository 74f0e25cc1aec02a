package ledger

import (
	"errors"
	"slices"
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

// In a Cluster the audit stream lives on another node and is appended after
// the row's script. When that append fails the row is written and its entry
// waits in the repository's slot: the next write of the repository, the
// sweep's FlushAudit or Open appends it, once, in the repository's order.
func TestClusterAuditEntryOutlivesAFailedAppend(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	auditNode := c.NodeFor("queen:audit")
	if c.NodeFor("queen:{"+repo+"}:rows") == auditNode {
		t.Fatal("the row keys and the audit stream share a node: the test would not cross nodes")
	}
	f := newFixtureOn(c.Open(), Options{})
	if _, _, err := f.l.Init(f.ctx, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Open(f.ctx); err != nil {
		t.Fatal(err)
	}
	node := auditNode.Client()
	// The audit node refuses XADD (as a full or failing node would) while down.
	down := func(yes bool) {
		t.Helper()
		rule := "+xadd"
		if yes {
			rule = "-xadd"
		}
		if err := node.Do(f.ctx, "ACL", "SETUSER", "default", rule).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The stream's versions of the row, oldest first.
	stream := func() []int64 {
		t.Helper()
		trail, err := f.l.Audit(f.ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var vs []int64
		for i := len(trail) - 1; i >= 0; i-- {
			vs = append(vs, trail[i].Version)
		}
		return vs
	}
	lost := func(issue int64, body string) {
		t.Helper()
		down(true)
		if _, err := f.l.Upsert(f.ctx, repo, issue, patch(t, body), audit.API("test")); err == nil || !strings.Contains(err.Error(), "audit_pending") {
			t.Fatalf("upsert with the audit node down: %v; want an error naming the pending list", err)
		}
		down(false)
	}
	f.upsert(t, repo, 1, accepted)
	lost(1, sentBack)
	if got := f.get(t, repo, 1); got.Version != 2 {
		t.Fatalf("row at version %d; want 2 (written before the append failed)", got.Version)
	}
	if got := stream(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("stream %v before the flush; want [1]", got)
	}
	for range 2 {
		if err := f.l.FlushAudit(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := stream(); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("stream %v after the sweep's flush (twice); want [1 2]", got)
	}
	lost(1, accepted)
	f.upsert(t, repo, 1, sentBack)
	if got := stream(); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("stream %v after the next write; want [1 2 3 4], the pending entry first", got)
	}
	lost(1, accepted)
	if _, err := f.l.Open(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := stream(); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("stream %v after Open; want [1 2 3 4 5]", got)
	}
	if n, err := c.Open().Exists(f.ctx, f.l.pendingKey(repo)).Result(); err != nil || n != 0 {
		t.Fatalf("pending list still there (%d, %v)", n, err)
	}
}
