package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queen-app/queen-app/internal/retry"
	"github.com/redis/go-redis/v9"
)

// GitHub's guidance for content-creating requests (here: PR creation) of one
// installation: at least a second apart, at most 80 a minute and 500 an
// hour. Git pushes and reads are not content-creating REST requests.
const (
	DefaultPRsPerMinute = 80
	DefaultPRsPerHour   = 500
	// DefaultPaceMaxWait is the longest a push waits in its task for its
	// turn to open a PR. A turn further out (the hour's 500 are spent, or
	// GitHub asked for a pause) is not booked: the row is recorded as
	// waiting until then and the task comes back at that time. Two pushes
	// per installation on each replica book at most a few seconds ahead.
	DefaultPaceMaxWait = 30 * time.Second
	// sendMargin is added to the gap between two sends: GitHub counts
	// arrivals, and a request's way out (a pooled or a new connection, the
	// scheduler) varies. On the drain benchmark, sends stamped 1 s apart
	// arrived at the local GitHub as little as 996 ms apart.
	sendMargin = 25 * time.Millisecond
)

// pacer books turns for content-creating requests per installation in
// Redis, so the spacing holds across every worker replica. A turn is booked
// before it is waited for: concurrent callers queue up one gap apart.
type pacer struct {
	rdb                redis.UniversalClient
	gap                time.Duration
	perMinute, perHour int
	maxWait            time.Duration
	now                func() time.Time
}

// PaceKeys are the Redis keys of an installation's pacing: the booked
// turns (a sorted set of unix milliseconds), the time before which GitHub
// asked for no content-creating request, and when the last one was sent.
// One hash tag: one slot.
func PaceKeys(installationID int64) (turns, hold, sent string) {
	tag := "queen:pace:{" + strconv.FormatInt(installationID, 10) + "}"
	return tag + ":turns", tag + ":hold", tag + ":sent"
}

// bookScript finds the earliest turn at or after now that keeps the gap to
// the last turn, the minute's and the hour's count, and any hold; it books
// it as ARGV[6] unless it is more than max_wait away. Returns {booked,
// turn_ms}.
var bookScript = redis.NewScript(`
local now, gap, pmin, phour, maxw = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 3600000)
local t = now
local hold = tonumber(redis.call('GET', KEYS[2]) or '0')
if hold > t then t = hold end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if #last > 0 and tonumber(last[2]) + gap > t then t = tonumber(last[2]) + gap end
if pmin > 0 then
  local b = redis.call('ZRANGE', KEYS[1], -pmin, -pmin, 'WITHSCORES')
  if #b > 0 and tonumber(b[2]) + 60000 > t then t = tonumber(b[2]) + 60000 end
end
if phour > 0 then
  local b = redis.call('ZRANGE', KEYS[1], -phour, -phour, 'WITHSCORES')
  if #b > 0 and tonumber(b[2]) + 3600000 > t then t = tonumber(b[2]) + 3600000 end
end
if t - now > maxw then return {0, t} end
redis.call('ZADD', KEYS[1], t, ARGV[6])
redis.call('PEXPIRE', KEYS[1], t - now + 3600000)
return {1, t}
`)

// sendScript is the last look before a send. A turn is booked ahead, and
// GitHub may ask for a pause meanwhile: a turn the hold (KEYS[2]) covers at
// ARGV[2] is given back (ARGV[3] leaves the turns, KEYS[3]) and the answer
// is {1, hold_ms}: book again. Otherwise it stamps the send now unless the
// last one was less than ARGV[1] milliseconds ago: {0, ms left to wait},
// {0, 0} stamped, go; a caller woken late by its timer would otherwise
// leave the next turn's request less than the gap behind. The gap is on
// Redis's clock, the one clock every replica shares; the hold on the
// pacers' clock, as it was set and as turns are booked.
var sendScript = redis.NewScript(`
local hold = tonumber(redis.call('GET', KEYS[2]) or '0')
if hold > tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[3], ARGV[3])
  return {1, hold}
end
local gap = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
if last + gap > now then return {0, last + gap - now} end
redis.call('SET', KEYS[1], now, 'PX', gap + 60000)
return {0, 0}
`)

// holdScript moves the installation's hold forward to ARGV[1], never back.
var holdScript = redis.NewScript(`
local upto, now = tonumber(ARGV[1]), tonumber(ARGV[2])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if upto > cur and upto > now then redis.call('SET', KEYS[1], upto, 'PX', upto - now) end
return 0
`)

// notYet is a turn further out than the pacer waits in a task.
type notYet struct{ until time.Time }

func (e *notYet) Error() string {
	return "content-creating requests of this installation are paced: next turn at " + e.until.UTC().Format(time.RFC3339)
}

// turn is a booked turn: when, and its member in the turns.
type turn struct {
	at time.Time
	id string
}

// wait books the installation's next turn and sleeps until it; a turn
// further out than maxWait is not booked and comes back as a *notYet. A
// turn that a pause GitHub asked for meanwhile covers does not go: it is
// booked again, after the pause (up to 30 booked turns across replicas
// went out inside a Retry-After of 60 s).
func (p *pacer) wait(ctx context.Context, installationID int64) error {
	if p == nil || p.rdb == nil {
		return ctx.Err()
	}
	for {
		now := p.now()
		tn, err := p.book(ctx, installationID, now)
		if err != nil {
			return err
		}
		sent, err := p.send(ctx, installationID, tn, tn.at.Sub(now))
		if sent || err != nil {
			return err
		}
	}
}

// send sleeps d, then takes turn tn: true when it is stamped and the
// request may go, false when a hold covers it and it was given back.
func (p *pacer) send(ctx context.Context, installationID int64, tn turn, d time.Duration) (bool, error) {
	turns, hold, sent := PaceKeys(installationID)
	for {
		if err := retry.Sleep(ctx, d); err != nil {
			return false, err
		}
		at := p.now()
		if at.Before(tn.at) {
			at = tn.at // a clock that has not moved: the turn is when it goes
		}
		res, err := sendScript.Run(ctx, p.rdb, []string{sent, hold, turns},
			p.sendGap().Milliseconds(), at.UnixMilli(), tn.id).Int64Slice()
		if err != nil {
			return false, fmt.Errorf("pacing: %w", err)
		}
		switch {
		case res[0] == 1:
			return false, nil
		case res[1] <= 0:
			return true, nil
		}
		d = time.Duration(res[1]) * time.Millisecond
	}
}

// sendGap is the least time between two sends.
func (p *pacer) sendGap() time.Duration {
	if p.gap <= 0 {
		return 0
	}
	return p.gap + sendMargin
}

// book takes the installation's earliest turn at or after now.
func (p *pacer) book(ctx context.Context, installationID int64, now time.Time) (turn, error) {
	turns, hold, _ := PaceKeys(installationID)
	id := randomID()
	res, err := bookScript.Run(ctx, p.rdb, []string{turns, hold},
		now.UnixMilli(), p.gap.Milliseconds(), p.perMinute, p.perHour, p.maxWait.Milliseconds(), id).Int64Slice()
	if err != nil {
		return turn{}, fmt.Errorf("pacing: %w", err)
	}
	at := time.UnixMilli(res[1])
	if res[0] == 0 {
		return turn{}, &notYet{until: at}
	}
	return turn{at: at, id: id}, nil
}

// holdUntil sends no request of the installation before until: GitHub
// asked for the pause (Retry-After, a secondary limit), and it holds for
// every replica, for turns booked from now on and for those booked before.
func (p *pacer) holdUntil(ctx context.Context, installationID int64, until time.Time) error {
	if p == nil || p.rdb == nil {
		return nil
	}
	_, hold, _ := PaceKeys(installationID)
	return holdScript.Run(ctx, p.rdb, []string{hold}, until.UnixMilli(), p.now().UnixMilli()).Err()
}

// acquire takes one of the installation's push slots; release gives it back.
func (w *Worker) acquire(ctx context.Context, installationID int64) (release func(), err error) {
	w.mu.Lock()
	s := w.slots[installationID]
	if s == nil {
		s = make(chan struct{}, w.d.PushesPerInstallation)
		w.slots[installationID] = s
	}
	w.mu.Unlock()
	release = func() { <-s }
	select {
	case s <- struct{}{}:
		return release, nil
	default:
	}
	select {
	case s <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
