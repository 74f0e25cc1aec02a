package workerserver

import (
	"context"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/retry"
)

// announceExport tells the API, through Redis, that this worker runs the
// export: once now, so it is known before the worker reports healthy, then
// every export.WorkerRefresh in bg until ctx ends. A failed write is
// logged; the next one may land before the announcement expires.
func announceExport(ctx context.Context, bg *sync.WaitGroup, rdb redis.UniversalClient, id string, log *slog.Logger) {
	ws := export.Workers{RDB: rdb}
	announce := func() {
		if err := ws.Announce(ctx, id); err != nil && ctx.Err() == nil {
			log.Warn("export: announcing this worker failed", "err", err)
		}
	}
	announce()
	bg.Go(func() { retry.Every(ctx, export.WorkerRefresh, announce) })
}
