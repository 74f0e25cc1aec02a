package workerserver

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/redistest"
)

// The first announcement is made before announceExport returns (the worker
// then reports healthy); the refreshes stop with the context.
func TestAnnounceExportAnnouncesAtOnceAndStopsWithItsContext(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client()
	ctx, stop := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	announceExport(ctx, &bg, rdb, "replica-1", slog.New(slog.DiscardHandler))
	if on, err := (export.Workers{RDB: rdb}).Running(context.Background()); err != nil || !on {
		t.Fatalf("right after the start: running %v (%v), want announced", on, err)
	}
	if id, err := rdb.Get(context.Background(), export.WorkersKey).Result(); err != nil || id != "replica-1" {
		t.Fatalf("announced %q (%v), want the replica's id", id, err)
	}
	stop()
	done := make(chan struct{})
	go func() { bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the refreshes did not stop when the context ended")
	}
}
