package export

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The workers that run with the export on say so in Redis, for the API
// (in the webhook process, without the export's settings) to tell whether
// an export push it is asked for can run at all.
const (
	// WorkersKey holds the id of the last worker that announced itself.
	WorkersKey = "queen:export:workers"
	// WorkerRefresh is how often a worker with the export on announces itself.
	WorkerRefresh = 15 * time.Second
	// WorkerTTL is how long an announcement lasts: three refreshes, so one
	// slow Redis round trip does not make the export look off.
	WorkerTTL = 3 * WorkerRefresh
)

// Workers reads and writes the announcements in Redis.
type Workers struct {
	RDB redis.UniversalClient
}

// Announce says the worker id runs with the export on, for WorkerTTL.
func (w Workers) Announce(ctx context.Context, id string) error {
	return w.RDB.Set(ctx, WorkersKey, id, WorkerTTL).Err()
}

// Running reports whether a worker with the export on announced itself
// within WorkerTTL. An error means unknown.
func (w Workers) Running(ctx context.Context) (bool, error) {
	n, err := w.RDB.Exists(ctx, WorkersKey).Result()
	return n > 0, err
}
