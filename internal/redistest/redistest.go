// Package redistest starts private redis-server processes for tests. A test
// that needs Redis fails loudly when redis-server is missing: it never skips.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// Server is one private redis-server listening on 127.0.0.1.
type Server struct {
	Addr string // host:port
	Dir  string // working directory (AOF files live here)
	Port int

	tb       testing.TB
	args     []string
	password string // requirepass, for the helpers' own connections
	cmd      *exec.Cmd
}

// Options tune a server.
type Options struct {
	// AppendOnly turns on the append-only file with fsync always, so a
	// restart keeps every acknowledged write.
	AppendOnly bool
	// Cluster starts a one-node Redis Cluster owning every slot. Even one
	// node refuses a script whose keys hash to different slots.
	Cluster bool
	// Password is the server's requirepass and masterauth (so a replica
	// can follow a primary with the same password).
	Password string
	// Args are appended to the command line (replicaof, say).
	Args []string

	noSlots bool // StartCluster assigns the slots itself
}

// Start starts a private redis-server for tb and stops it at cleanup.
func Start(tb testing.TB) *Server { return StartWith(tb, Options{}) }

// StartWith starts a private redis-server with opts.
func StartWith(tb testing.TB, opts Options) *Server {
	tb.Helper()
	bin := redisServer(tb)
	port := freePort(tb)
	s := &Server{Dir: tb.TempDir(), Port: port, tb: tb}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	s.args = []string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port), "--dir", s.Dir,
		"--save", "", "--maxmemory-policy", "noeviction", "--protected-mode", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"),
		// A replica's first sync starts at once, not after the 5 s Redis
		// waits by default for more replicas to share it.
		"--repl-diskless-sync-delay", "0",
	}
	if opts.AppendOnly {
		s.args = append(s.args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		s.args = append(s.args, "--appendonly", "no")
	}
	if opts.Cluster {
		s.args = append(s.args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"))
	}
	if opts.Password != "" {
		s.password = opts.Password
		s.args = append(s.args, "--requirepass", opts.Password, "--masterauth", opts.Password)
	}
	s.args = append(s.args, opts.Args...)
	s.start(bin)
	tb.Cleanup(s.Stop)
	if opts.Cluster && !opts.noSlots {
		s.assignSlots()
	}
	return s
}

func redisServer(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server not found on PATH (install it: apt-get install -y redis-server): %v", err)
	}
	return bin
}

// assignSlots gives the one node every slot and waits for the cluster.
func (s *Server) assignSlots() {
	s.tb.Helper()
	node := s.conn()
	defer node.Close()
	if err := node.Do(context.Background(), "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		s.tb.Fatalf("cluster addslotsrange: %v", err)
	}
	waitClusterOK(s.tb, []*Server{s})
}

// ClusterClient returns a go-redis cluster client, closed at cleanup, for a
// server started with Options.Cluster.
func (s *Server) ClusterClient() *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{s.Addr}, Password: s.password})
	s.tb.Cleanup(func() { c.Close() })
	return c
}

func (s *Server) start(bin string) {
	s.tb.Helper()
	s.cmd = exec.Command(bin, s.args...)
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("start redis-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := s.conn()
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("redis-server on %s did not answer in 10s: %v\n%s", s.Addr, err, s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	return string(b)
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Client returns a go-redis client closed at cleanup.
func (s *Server) Client() *redis.Client {
	c := s.conn()
	s.tb.Cleanup(func() { c.Close() })
	return c
}

// conn is a client of this one server, with its password; the caller closes it.
func (s *Server) conn() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.password})
}

// Stop stops the server and waits for it (idempotent).
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot stop
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Kill stops the server with SIGKILL, as a crash would.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Pause stops the process with SIGSTOP: it keeps its connections and
// answers nothing, as a hung or partitioned server would.
func (s *Server) Pause() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Resume continues a paused server.
func (s *Server) Resume() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Restart starts the server again on the same port and directory.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start(redisServer(s.tb))
}

// Info returns one field of INFO.
func (s *Server) Info(section, field string) string {
	c := s.conn()
	defer c.Close()
	text, err := c.Info(context.Background(), section).Result()
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// freePort is a port for the redis-server about to start, with its cluster
// bus port (+10000, testkit.PortGap) free too (testkit.FreePort).
func freePort(tb testing.TB) int {
	tb.Helper()
	return testkit.FreePort(tb)
}

// String describes the server for test logs.
func (s *Server) String() string { return fmt.Sprintf("redis-server %s (dir %s)", s.Addr, s.Dir) }
