package redisavail_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

func watchOf(t *testing.T, srv *redistest.Server) (*redisavail.SettingsWatch, *testkit.Buffer, *prometheus.Registry) {
	t.Helper()
	logs := &testkit.Buffer{}
	w := redisavail.NewSettingsWatch(srv.Client(), slog.New(slog.NewJSONHandler(logs, nil)))
	reg := prometheus.NewRegistry()
	w.Register(reg)
	return w, logs, reg
}

// states is each settings gauge's state at 1.
func states(t *testing.T, reg *prometheus.Registry) map[string]string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetGauge().GetValue() == 1 {
				out[mf.GetName()] = m.GetLabel()[0].GetValue()
			}
		}
	}
	return out
}

// An evicting maxmemory-policy fails the check naming the policy and the
// fix, from a reading at start and from a later one; noeviction passes.
func TestSettingsWatchRefusesAnEvictingPolicy(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{AppendOnly: true})
	ctx := context.Background()
	w, logs, reg := watchOf(t, srv)
	w.Read(ctx)
	if err := w.Check(ctx); err != nil {
		t.Fatalf("noeviction: check %v, want ready", err)
	}
	if got := states(t, reg); got["queen_redis_eviction_state"] != "noeviction" || got["queen_redis_persistence_state"] != "on" {
		t.Fatalf("gauges %v, want noeviction and persistence on", got)
	}

	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Watch(wctx, 10*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	if err := srv.Client().ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	var err error
	testkit.Eventually(t, 10*time.Second, "the check to fail once the policy evicts", func() bool {
		err = w.Check(ctx)
		return err != nil
	})
	var ev *redisconn.EvictionError
	if !errors.As(err, &ev) || err.Error() != "redis: maxmemory-policy allkeys-lru evicts rows; set noeviction" ||
		ev.Word() != "maxmemory-policy allkeys-lru evicts rows; set noeviction" {
		t.Fatalf("check %v, want the policy and the fix named", err)
	}
	if got := states(t, reg); got["queen_redis_eviction_state"] != "evicts" {
		t.Fatalf("gauges %v, want evicts", got)
	}
	if n := strings.Count(logs.String(), `"level":"ERROR"`); n != 1 {
		t.Fatalf("%d ERROR lines while it evicts, want one:\n%s", n, logs)
	}

	if err := srv.Client().ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the check to pass again", func() bool { return w.Check(ctx) == nil })
}

// Persistence off is one WARN and a gauge, not a refusal.
func TestSettingsWatchWarnsOnceWithoutPersistence(t *testing.T) {
	srv := redistest.Start(t) // appendonly no, save ""
	ctx := context.Background()
	w, logs, reg := watchOf(t, srv)
	for range 3 {
		w.Read(ctx)
	}
	if err := w.Check(ctx); err != nil {
		t.Fatalf("persistence off: check %v, want ready (a warning only)", err)
	}
	if got := states(t, reg); got["queen_redis_persistence_state"] != "off" {
		t.Fatalf("gauges %v, want persistence off", got)
	}
	if n := strings.Count(logs.String(), `"level":"WARN"`); n != 1 || !strings.Contains(logs.String(), "persistence is off") {
		t.Fatalf("%d WARN lines over three readings, want one naming persistence:\n%s", n, logs)
	}
	if err := srv.Client().ConfigSet(ctx, "save", "3600 1").Err(); err != nil {
		t.Fatal(err)
	}
	w.Read(ctx)
	if got := states(t, reg); got["queen_redis_persistence_state"] != "on" {
		t.Fatalf("gauges %v with a save rule, want persistence on", got)
	}
}

// A Redis that refuses CONFIG GET (a managed one) is unknown, not unsafe;
// one that cannot be reached leaves the last reading standing.
func TestSettingsWatchUnknownWhenConfigIsRefused(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{Args: []string{"--rename-command", "CONFIG", ""}})
	ctx := context.Background()
	if s := redisconn.ReadSettings(ctx, srv.Client()); s.Refused == nil || s.Err != nil {
		t.Fatalf("ReadSettings on a Redis without CONFIG: %+v, want it refused", s)
	}
	w, logs, reg := watchOf(t, srv)
	w.Read(ctx)
	w.Read(ctx)
	if err := w.Check(ctx); err != nil {
		t.Fatalf("CONFIG refused: check %v, want ready", err)
	}
	if got := states(t, reg); got["queen_redis_eviction_state"] != "unknown" || got["queen_redis_persistence_state"] != "unknown" {
		t.Fatalf("gauges %v, want both unknown", got)
	}
	if n := strings.Count(logs.String(), "redis settings unknown"); n != 1 {
		t.Fatalf("%d lines saying unknown, want one:\n%s", n, logs)
	}

	evicting := redistest.Start(t)
	if err := evicting.Client().ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	w2, _, _ := watchOf(t, evicting)
	w2.Read(ctx)
	evicting.Stop()
	w2.Read(ctx)
	if err := w2.Check(ctx); err == nil || !strings.Contains(err.Error(), "volatile-lru") {
		t.Fatalf("after an outage: check %v, want the last reading (volatile-lru) standing", err)
	}
}
