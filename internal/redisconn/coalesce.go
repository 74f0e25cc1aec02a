package redisconn

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Coalescing. In a burst the webhook's enqueues arrive together, and each
// alone pays its own write and read at both ends: on the 2-core dev machine
// a round trip costs the receiver about 38 µs of CPU and Redis 11 µs (21 µs
// for asynq's enqueue script). A command issued under WithCoalesce runs at
// once, as it would unmarked, while fewer than MaxPipelines coalesced round
// trips are in flight; past that it waits, and the ones that waited go out
// together as one pipeline. A lone delivery never waits; a burst pays one
// round trip per batch.
const (
	// MaxPipelines is 2. With 1 (group commit) two callers took turns, at
	// 0.59x of their rate. Up to MaxPipelines callers never wait; past it
	// they batch. BenchmarkCoalesce (asynq's script beside the same calls
	// unmarked), means of 3-9 runs whose spread was +-0.15: at 32 callers
	// 1.6x with 2 in flight, 1.56x with 4, 1.49x with 8; at 8 callers
	// 0.95x, 1.05x and 1.0x, within the spread. BenchmarkIngest at 64
	// clients: 0.61-0.62x of the bare handler with 2, 0.59-0.60x with 4.
	MaxPipelines = 2
	// MaxBatch bounds the commands of one pipeline.
	MaxBatch = 100
)

type coalesceKey struct{}

// WithCoalesce marks ctx so that the commands issued under it may share a
// pipeline with others issued at the same time (see MaxPipelines). Each
// keeps its own reply and error; a batch runs until the earliest deadline
// of its commands, and a command's own cancellation does not stop the
// batch it is in. Under WithReplicaAck too, a batch is acknowledged as a
// whole: each of its commands returns only once a replica holds every
// write the primary had made when the batch ran. Only for short commands:
// a blocking one (BLPOP) would hold up the batch it is in.
func WithCoalesce(ctx context.Context) context.Context {
	return context.WithValue(ctx, coalesceKey{}, true)
}

func coalesces(ctx context.Context) bool {
	v, _ := ctx.Value(coalesceKey{}).(bool)
	return v
}

// coalescer is the outermost hook of every client New returns.
type coalescer struct {
	rdb redis.UniversalClient

	mu       sync.Mutex
	inflight int        // round trips in flight: at most MaxPipelines
	queue    []*pending // waiting for one to end
}

type pending struct {
	ctx context.Context
	cmd redis.Cmder
	ack bool
	// wake gets nil once cmd has run in another's batch, or the batch
	// (cmd first) this one is to run: its turn has come.
	wake chan []*pending
}

func (c *coalescer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *coalescer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *coalescer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !coalesces(ctx) {
			return next(ctx, cmd)
		}
		p := &pending{ctx: ctx, cmd: cmd, ack: wantsAck(ctx)}
		c.mu.Lock()
		if c.inflight < MaxPipelines {
			c.inflight++
			c.mu.Unlock()
			c.lead(next, p, []*pending{p})
			return cmd.Err()
		}
		p.wake = make(chan []*pending, 1)
		c.queue = append(c.queue, p)
		c.mu.Unlock()
		if batch := <-p.wake; batch != nil {
			c.lead(next, p, batch)
		}
		return cmd.Err()
	}
}

// lead runs batch, of which self is one, wakes the others, then hands its
// round trip on to the first that waits, with its batch, or gives it up.
func (c *coalescer) lead(next redis.ProcessHook, self *pending, batch []*pending) {
	c.run(next, batch)
	for _, p := range batch {
		if p != self {
			p.wake <- nil
		}
	}
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.inflight--
		c.mu.Unlock()
		return
	}
	nextBatch := c.take()
	c.mu.Unlock()
	nextBatch[0].wake <- nextBatch
}

// take removes from the queue, under c.mu, the next batch: the first
// waiting and, up to MaxBatch, those after it with the same ack mark.
func (c *coalescer) take() []*pending {
	ack := c.queue[0].ack
	var batch []*pending
	rest := c.queue[:0]
	for _, p := range c.queue {
		if p.ack == ack && len(batch) < MaxBatch {
			batch = append(batch, p)
		} else {
			rest = append(rest, p)
		}
	}
	clear(c.queue[len(rest):])
	c.queue = rest
	return batch
}

// run runs batch: one command as it would run unmarked, several as one
// pipeline. What go-redis issues inside (a new connection's handshake) is
// unmarked, so it never waits behind the batch that needs it.
func (c *coalescer) run(next redis.ProcessHook, batch []*pending) {
	if len(batch) == 1 {
		p := batch[0]
		// The caller of a hook records its error on the command
		// (Client.Process); the waiting ones read it from the command.
		if err := next(context.WithValue(p.ctx, coalesceKey{}, false), p.cmd); err != nil {
			p.cmd.SetErr(err)
		}
		return
	}
	// The batch shares its first command's ack mark (take groups by it).
	ctx := context.WithValue(context.WithoutCancel(batch[0].ctx), coalesceKey{}, false)
	var deadline time.Time
	for _, p := range batch {
		if d, ok := p.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	_, _ = c.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for _, p := range batch {
			_ = pl.Process(ctx, p.cmd)
		}
		return nil
	})
}

// DeliveryWrite marks ctx for the write a webhook's 202 stands on: held by
// a replica before it returns (WithReplicaAck), so a failover cannot lose a
// delivery GitHub was told was taken, and coalesced with the burst around
// it (WithCoalesce).
func DeliveryWrite(ctx context.Context) context.Context {
	return WithCoalesce(WithReplicaAck(ctx))
}
