package schedule

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease is a lock in Redis held by one owner until it is released or runs
// out: a holder that dies loses it after TTL, never holds it for ever.
type Lease struct {
	RDB   redis.UniversalClient
	Key   string
	Owner string // unique per holder
	TTL   time.Duration
}

// renewScript extends the lease only if Owner still holds it.
var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// releaseScript deletes the lease only if Owner still holds it.
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)

// Acquire takes the lease if nobody holds it.
func (l *Lease) Acquire(ctx context.Context) (bool, error) {
	if l.Owner == "" {
		return false, errors.New("schedule: a lease needs an owner")
	}
	return l.RDB.SetNX(ctx, l.Key, l.Owner, l.TTL).Result()
}

// Renew extends the lease; false means it is no longer Owner's.
func (l *Lease) Renew(ctx context.Context) (bool, error) {
	n, err := renewScript.Run(ctx, l.RDB, []string{l.Key}, l.Owner, l.TTL.Milliseconds()).Int()
	return n == 1, err
}

// Release gives the lease up if Owner holds it. It runs on a context of its
// own, so a holder stopping because its context ended still releases.
func (l *Lease) Release() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return releaseScript.Run(ctx, l.RDB, []string{l.Key}, l.Owner).Err()
}

// Hold runs fn while holding the lease: it renews it every TTL/3 and ends
// fn's context when a renewal finds it lost, then releases it. held is false
// (and fn not run) when someone else holds the lease.
func (l *Lease) Hold(ctx context.Context, fn func(ctx context.Context) error) (held bool, err error) {
	ok, err := l.Acquire(ctx)
	if err != nil || !ok {
		return false, err
	}
	defer l.Release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(l.TTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				// A failed round trip says nothing: the lease runs out only
				// when a renewal answers that it is gone.
				if ok, err := l.Renew(ctx); err == nil && !ok {
					cancel(errLeaseLost)
					return
				}
			}
		}
	}()
	err = fn(ctx)
	close(done)
	return true, err
}

var errLeaseLost = errors.New("schedule: lease lost")
