package export

import (
	"context"
	"testing"

	"github.com/queen-app/queen-app/internal/redistest"
)

func TestWorkersAnnounceLastsWorkerTTL(t *testing.T) {
	rs := redistest.Start(t)
	ctx := context.Background()
	w := Workers{RDB: rs.Client()}
	if on, err := w.Running(ctx); err != nil || on {
		t.Fatalf("before any announcement: %v %v, want none running", on, err)
	}
	if err := w.Announce(ctx, "worker-1"); err != nil {
		t.Fatal(err)
	}
	if on, err := w.Running(ctx); err != nil || !on {
		t.Fatalf("after an announcement: %v %v, want one running", on, err)
	}
	ttl, err := rs.Client().TTL(ctx, WorkersKey).Result()
	if err != nil || ttl <= WorkerTTL-WorkerRefresh || ttl > WorkerTTL {
		t.Fatalf("announcement TTL %s (%v), want about %s", ttl, err, WorkerTTL)
	}
	if err := rs.Client().Del(ctx, WorkersKey).Err(); err != nil { // the TTL ran out
		t.Fatal(err)
	}
	if on, _ := w.Running(ctx); on {
		t.Fatal("an expired announcement still counts")
	}
	rs.Stop()
	if _, err := w.Running(ctx); err == nil {
		t.Fatal("Redis down: want an error, not an answer")
	}
}
