package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the sentinels of StartSentinel monitor.
const MasterName = "queen-primary"

// SentinelOptions tune StartSentinel.
type SentinelOptions struct {
	// Replicas is the number of replicas of the primary; default 1. With
	// one, a failover leaves the new primary without a replica.
	Replicas int
	// Password is the data nodes' requirepass; SentinelPassword the sentinels'.
	Password, SentinelPassword string
	// DownAfter is how long the primary must be unreachable before the
	// sentinels call it down; default 1 s (Redis's default is 30 s).
	DownAfter time.Duration
	// FailoverTimeout bounds a failover; a failed one is retried after
	// twice this. Default 2 s.
	FailoverTimeout time.Duration
	// AppendOnly runs the data nodes with fsync always.
	AppendOnly bool
}

// SentinelSet is a primary, its replicas and three sentinels watching it,
// all private processes on loopback ports.
type SentinelSet struct {
	Primary   *Server
	Replicas  []*Server
	Sentinels []*Server
	opts      SentinelOptions
	tb        testing.TB
}

// StartSentinel starts the primary, the replicas (each waits for its link
// to the primary) and three sentinels with a quorum of two, and returns
// once every sentinel sees the primary up, every replica and both other
// sentinels, and can authorize a failover.
func StartSentinel(tb testing.TB, opts SentinelOptions) *SentinelSet {
	tb.Helper()
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.DownAfter <= 0 {
		opts.DownAfter = time.Second
	}
	if opts.FailoverTimeout <= 0 {
		opts.FailoverTimeout = 2 * time.Second
	}
	set := &SentinelSet{opts: opts, tb: tb}
	data := Options{AppendOnly: opts.AppendOnly, Password: opts.Password}
	set.Primary = StartWith(tb, data)
	for range opts.Replicas {
		r := data
		r.Args = []string{"--replicaof", "127.0.0.1", strconv.Itoa(set.Primary.Port)}
		replica := StartWith(tb, r)
		eventually(tb, replica.String()+" linked to the primary", func() bool {
			return replica.Info("replication", "master_link_status") == "up"
		})
		set.Replicas = append(set.Replicas, replica)
	}
	// After its first sync a replica gets the primary's stream only once
	// it has sent an ACK, up to a second later: wait for it to be streaming.
	set.publish()
	set.WaitReplicated()

	// The sentinels are told of each other and of the replicas up front
	// (known-sentinel, known-replica), so none waits for discovery.
	bin := redisServer(tb)
	ports := make([]int, 3)
	ids := make([]string, 3)
	for i := range ports {
		ports[i] = freePort(tb)
		ids[i] = runID(tb)
	}
	for i := range ports {
		s := &Server{Dir: tb.TempDir(), Port: ports[i], tb: tb, password: opts.SentinelPassword}
		s.Addr = "127.0.0.1:" + strconv.Itoa(s.Port)
		conf := filepath.Join(s.Dir, "sentinel.conf")
		if err := os.WriteFile(conf, []byte(set.sentinelConf(ports, ids, i, s.Dir)), 0o600); err != nil {
			tb.Fatal(err)
		}
		s.args = []string{conf, "--sentinel"}
		s.start(bin)
		tb.Cleanup(s.Stop)
		set.Sentinels = append(set.Sentinels, s)
	}
	for _, s := range set.Sentinels {
		eventually(tb, s.String()+" ready to fail over", func() bool { return set.ready(s) })
	}
	return set
}

func (set *SentinelSet) sentinelConf(ports []int, ids []string, me int, dir string) string {
	o := set.opts
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("port %d", ports[me])
	line("bind 127.0.0.1")
	line("protected-mode no")
	line("dir %s", dir)
	line("logfile %s", filepath.Join(dir, "redis.log"))
	line("sentinel myid %s", ids[me])
	line("sentinel monitor %s 127.0.0.1 %d 2", MasterName, set.Primary.Port)
	line("sentinel down-after-milliseconds %s %d", MasterName, o.DownAfter.Milliseconds())
	line("sentinel failover-timeout %s %d", MasterName, o.FailoverTimeout.Milliseconds())
	line("sentinel parallel-syncs %s 1", MasterName)
	if o.Password != "" {
		line("sentinel auth-pass %s %s", MasterName, o.Password)
	}
	if o.SentinelPassword != "" {
		line("requirepass %s", o.SentinelPassword)
		line("sentinel sentinel-pass %s", o.SentinelPassword)
	}
	for _, r := range set.Replicas {
		line("sentinel known-replica %s 127.0.0.1 %d", MasterName, r.Port)
	}
	for i, p := range ports {
		if i != me {
			line("sentinel known-sentinel %s 127.0.0.1 %d %s", MasterName, p, ids[i])
		}
	}
	return b.String()
}

// ready reports whether sentinel s sees the primary up with every replica
// and can reach a quorum and a majority.
func (set *SentinelSet) ready(s *Server) bool {
	c := set.sentinelClient(s)
	defer c.Close()
	ctx := context.Background()
	m, err := c.Master(ctx, MasterName).Result()
	if err != nil || m["flags"] != "master" || m["num-slaves"] != strconv.Itoa(len(set.Replicas)) {
		return false
	}
	replicas, err := c.Replicas(ctx, MasterName).Result()
	if err != nil || len(replicas) != len(set.Replicas) {
		return false
	}
	for _, r := range replicas {
		if r["flags"] != "slave" || r["master-link-status"] != "ok" {
			return false
		}
	}
	return c.CkQuorum(ctx, MasterName).Err() == nil
}

func (set *SentinelSet) sentinelClient(s *Server) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Password: set.opts.SentinelPassword})
}

// URL is the set's redis+sentinel:// URL, without credentials: the
// passwords go in QUEEN_REDIS_PASSWORD and QUEEN_REDIS_SENTINEL_PASSWORD.
func (set *SentinelSet) URL() string {
	addrs := make([]string, len(set.Sentinels))
	for i, s := range set.Sentinels {
		addrs[i] = s.Addr
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + MasterName
}

// Password is the data nodes' password, SentinelPassword the sentinels'.
func (set *SentinelSet) Password() string         { return set.opts.Password }
func (set *SentinelSet) SentinelPassword() string { return set.opts.SentinelPassword }

// MasterAddr is the primary's address as every sentinel names it, or ""
// while they disagree or one cannot answer.
func (set *SentinelSet) MasterAddr() string {
	agreed := ""
	for _, s := range set.Sentinels {
		c := set.sentinelClient(s)
		hp, err := c.GetMasterAddrByName(context.Background(), MasterName).Result()
		c.Close()
		if err != nil || len(hp) != 2 {
			return ""
		}
		addr := hp[0] + ":" + hp[1]
		if agreed != "" && addr != agreed {
			return ""
		}
		agreed = addr
	}
	return agreed
}

// WaitFailover waits until every sentinel names a replica as the primary
// and that replica reports role:master, then returns it; the set's Primary
// and Replicas follow the switch.
func (set *SentinelSet) WaitFailover() *Server {
	set.tb.Helper()
	old := set.Primary
	var promoted *Server
	eventually(set.tb, "the sentinels promoted a replica", func() bool {
		addr := set.MasterAddr()
		for _, r := range set.Replicas {
			if r.Addr == addr && r.Info("replication", "role") == "master" {
				promoted = r
				return true
			}
		}
		return false
	})
	rest := []*Server{old}
	for _, r := range set.Replicas {
		if r != promoted {
			rest = append(rest, r)
		}
	}
	set.Primary, set.Replicas = promoted, rest
	return promoted
}

// WaitReplicated waits until every replica that is up has caught up with
// the primary's replication offset at the time of the call.
func (set *SentinelSet) WaitReplicated() {
	set.tb.Helper()
	want, err := strconv.ParseInt(set.Primary.Info("replication", "master_repl_offset"), 10, 64)
	if err != nil {
		set.tb.Fatalf("primary %s: no replication offset", set.Primary.Addr)
	}
	for _, r := range set.Replicas {
		if r.cmd == nil {
			continue // killed
		}
		eventually(set.tb, r.String()+" caught up with the primary", func() bool {
			got, err := strconv.ParseInt(r.Info("replication", "slave_repl_offset"), 10, 64)
			return err == nil && got >= want
		})
	}
}

// Lag makes the replicas fall behind: they stop (SIGSTOP) and the
// primary's links to them are filled past the sockets' buffers, so what
// the primary takes from now on stays in its own memory. Killing the
// primary then loses it, as a crash with lagging replicas would.
func (set *SentinelSet) Lag() error {
	for _, r := range set.Replicas {
		r.Pause()
	}
	c := set.Primary.conn()
	defer c.Close()
	// Loopback socket buffers hold a few MiB each way; the primary keeps
	// up to 256 MiB for a replica before dropping it.
	return c.Set(context.Background(), "redistest:lag-filler", strings.Repeat("x", 32<<20), 0).Err()
}

// Crash kills the primary with SIGKILL and lets the replicas go on.
func (set *SentinelSet) Crash() {
	set.Primary.Kill()
	for _, r := range set.Replicas {
		r.Resume()
	}
}

// publish makes the primary write to its replication stream, keyless.
func (set *SentinelSet) publish() {
	c := set.Primary.conn()
	defer c.Close()
	if err := c.Publish(context.Background(), "redistest:sync", "").Err(); err != nil {
		set.tb.Fatalf("primary %s: %v", set.Primary.Addr, err)
	}
}

func runID(tb testing.TB) string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// eventually polls cond until it holds; the limit only bounds a broken run.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within 30s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
