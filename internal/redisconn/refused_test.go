package redisconn_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/redistest"
)

// A wrong or missing password is named by its variable, and
// /readyz's word for it is "refused"; an unreachable Redis is left as it is.
func TestRefusalNamesThePasswordVariable(t *testing.T) {
	ctx := context.Background()
	locked := redistest.StartWith(t, redistest.Options{Password: "right-password-0123"})
	for what, c := range map[string]struct{ url, pw string }{
		"wrong password": {"redis://" + locked.Addr + "/0", "wrong-password-0123"},
		"no password":    {"redis://" + locked.Addr + "/0", ""},
	} {
		spec, err := redisconn.Parse(c.url, c.pw, "")
		if err != nil {
			t.Fatal(err)
		}
		rdb := redisconn.New(spec)
		err = redisconn.Refusal(rdb.Ping(ctx).Err(), spec)
		rdb.Close()
		var ref *redisconn.RefusedError
		if !errors.As(err, &ref) || ref.Word() != "refused" || !strings.Contains(err.Error(), redisconn.PasswordVar) {
			t.Errorf("%s: %v, want a refusal naming %s", what, err, redisconn.PasswordVar)
			continue
		}
		if c.pw != "" && strings.Contains(err.Error(), c.pw) {
			t.Errorf("%s: the error holds the password", what)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	spec, _ := redisconn.Parse("redis://"+addr+"/0", "", "")
	rdb := redisconn.New(spec)
	defer rdb.Close()
	down := rdb.Ping(ctx).Err()
	if got := redisconn.Refusal(down, spec); got != down {
		t.Errorf("unreachable: %v, want the error unchanged", got)
	}
}

// A redis+cluster:// URL naming a node without cluster mode can never
// work: WaitReady says so at once, naming QUEEN_REDIS_URL, instead of
// retrying.
func TestWaitReadyRefusesAClusterURLAtOneNode(t *testing.T) {
	r := redistest.Start(t)
	spec, err := redisconn.Parse("redis+cluster://"+r.Addr, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rdb := redisconn.New(spec)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = redisconn.WaitReady(ctx, rdb, spec, slog.New(slog.DiscardHandler))
	var bad *redisconn.Error
	if !errors.As(err, &bad) || bad.Var != redisconn.URLVar || !strings.Contains(bad.Problem, "not in cluster mode") {
		t.Fatalf("got %v, want an error naming %s", err, redisconn.URLVar)
	}
	// The same node as one node answers.
	one, _ := redisconn.Parse(r.URL(), "", "")
	rdb1 := redisconn.New(one)
	defer rdb1.Close()
	if err := redisconn.WaitReady(ctx, rdb1, one, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
}

// The sentinels refusing their password is named by its own variable:
// the failover client only says that no sentinel answered.
func TestWaitReadyNamesTheSentinelPassword(t *testing.T) {
	set := redistest.StartSentinel(t, redistest.SentinelOptions{SentinelPassword: "sentinel-password-0123"})
	u := set.URL()
	spec, err := redisconn.Parse(u, "", "wrong-sentinel-password-0123")
	if err != nil {
		t.Fatal(err)
	}
	rdb := redisconn.New(spec)
	defer rdb.Close()
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := redisconn.WaitReady(ctx, rdb, spec, log); err == nil {
		t.Fatal("WaitReady succeeded with a wrong sentinel password")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "check "+redisconn.SentinelPasswordVar) || strings.Contains(buf.String(), "wrong-sentinel-password-0123") {
		t.Errorf("log:\n%s\nwant it to name %s, without the password", buf.String(), redisconn.SentinelPasswordVar)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
