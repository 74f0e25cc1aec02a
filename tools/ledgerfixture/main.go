// Command ledgerfixture captures ledgers written by old releases into
// testdata/ledgers, for the upgrade tests: for each release it checks the
// commit out in a temporary git worktree, runs writers/main.go there (with
// the shim of that release's worker calls) against a private redis-server,
// so the old code itself writes the scenario and records what its API
// answered, then backs the Redis up with this release's ledger backup.
//
//	go run ./tools/ledgerfixture            # every release of the table
//	go run ./tools/ledgerfixture -only v0.1.0
//
// It needs git with this repository's history, redis-server and the Go
// module proxy (the old releases' dependencies). CI never runs it: the
// files it writes are committed.
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/ledger"
)

// Release is one old stored shape to capture.
type Release struct {
	// Shim is the release's worker calls; Start what its binaries did to
	// the ledger at start (writers/start_*.go).
	Name, Commit, Shim, Start, Why string
}

// Releases are the stored shapes a ledger may hold when this release first
// opens it.
var Releases = []Release{
	{"v0.1.0", "9a14e4e", "shim_string.go", "start_none.go", "0.1.0: keys by the repository's spelling, no schema key, string audit sources"},
	{"schema2-string-source", "bfd7ee7~1", "shim_string.go", "start_migrate.go", "schema 2 (canonical keys) with string audit sources, before bfd7ee7"},
	{"v0.2.0", "537ea22", "shim_object.go", "start_migrate.go", "0.2.0: schema 2 with object audit sources"},
}

//go:embed writers/*.go
var writers embed.FS

func main() {
	only := flag.String("only", "", "capture only the release of this name")
	out := flag.String("out", "testdata/ledgers", "directory of the fixtures, one folder per release")
	flag.Parse()
	top, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range Releases {
		if *only != "" && r.Name != *only {
			continue
		}
		if err := capture(strings.TrimSpace(top), r, filepath.Join(*out, r.Name)); err != nil {
			log.Fatalf("%s: %v", r.Name, err)
		}
		log.Printf("%s: captured from %s", r.Name, r.Commit)
	}
}

func capture(top string, r Release, dir string) error {
	tmp, err := os.MkdirTemp("", "ledgerfixture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if _, err := git(top, "worktree", "add", "--detach", src, r.Commit); err != nil {
		return err
	}
	defer git(top, "worktree", "remove", "--force", src)
	commit, err := git(src, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	cmdDir := filepath.Join(src, "cmd", "zzledgerfixture")
	if err := os.MkdirAll(cmdDir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"main.go", r.Shim, r.Start} {
		b, err := writers.ReadFile("writers/" + f)
		if err != nil {
			return err
		}
		b = []byte(strings.Replace(string(b), "//go:build ignore\n", "", 1))
		if err := os.WriteFile(filepath.Join(cmdDir, f), b, 0o644); err != nil {
			return err
		}
	}
	addr, stop, err := startRedis(tmp)
	if err != nil {
		return err
	}
	defer stop()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	run := exec.Command("go", "run", "./cmd/zzledgerfixture", "-redis", addr,
		"-out", filepath.Join(abs, "expected.json"), "-commit", strings.TrimSpace(commit))
	run.Dir, run.Stdout, run.Stderr = src, os.Stdout, os.Stderr
	if err := run.Run(); err != nil {
		return fmt.Errorf("the writer at %s: %w", r.Commit, err)
	}
	f, err := os.Create(filepath.Join(dir, "ledger.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if _, err := ledger.New(rdb, ledger.Options{}).Backup(context.Background(), f, "ledgerfixture "+r.Name); err != nil {
		return err
	}
	readme := fmt.Sprintf("Written by go run ./tools/ledgerfixture -only %s: the ledger %s wrote\n"+
		"(commit %s) with tools/ledgerfixture/writers, as a backup (ledger.jsonl), and\n"+
		"what its claims API answered then (expected.json).\n", r.Name, r.Why, strings.TrimSpace(commit))
	return os.WriteFile(filepath.Join(dir, "README"), []byte(readme), 0o644)
}

func git(dir string, args ...string) (string, error) {
	c := exec.Command("git", args...)
	c.Dir = dir
	b, err := c.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, b)
	}
	return string(b), nil
}

// startRedis runs a private redis-server that keeps nothing on disk.
func startRedis(dir string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("redis-server: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr := "127.0.0.1:" + strconv.Itoa(port)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for i := 0; ; i++ {
		if rdb.Ping(context.Background()).Err() == nil {
			return addr, stop, nil
		}
		if i == 100 {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
