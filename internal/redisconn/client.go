package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timeouts of every client. The webhook makes up to three Redis calls per
// delivery and must answer 503 within GitHub's 10 s when Redis is gone (a
// failover in progress), so a call gives up after two attempts, each
// waiting at most half a second for a connection (a free one or a dial)
// and a second for the answer: about 3 s, where go-redis's defaults (5 s
// timeouts, 3 retries, 5 dials per connection) allow over a minute.
const (
	DialTimeout = 500 * time.Millisecond
	PoolTimeout = 500 * time.Millisecond // waiting for a free connection
	IOTimeout   = time.Second            // each read and each write
	MaxRetries  = 1
	// MaxRedirects is a Cluster call's retries (a MOVED, ASK or failed node).
	MaxRedirects = 1
	// AckTimeout is how long a write under WithReplicaAck waits for a
	// replica; it stays under IOTimeout, which bounds reading its answer.
	AckTimeout = 500 * time.Millisecond
)

// New returns the client for s: a *redis.Client for Single, a Sentinel
// failover *redis.Client for Sentinel, a *redis.ClusterClient for Cluster.
// The caller closes it; asynq's constructors over a client never do. Each
// carries the hooks of WithCoalesce and, for Sentinel, WithReplicaAck.
func New(s *Spec) redis.UniversalClient {
	c, _ := newHooked(s)
	return c
}

func newHooked(s *Spec) (redis.UniversalClient, *coalescer) {
	c := newClient(s)
	// The coalescer comes first: a batch it makes then passes the
	// replica-ack hook as one pipeline.
	co := &coalescer{rdb: c}
	c.AddHook(co)
	if s.Mode == Sentinel {
		c.AddHook(ackHook{c.(*redis.Client)})
	}
	return c, co
}

func newClient(s *Spec) redis.UniversalClient {
	var tlsConfig *tls.Config
	if s.TLS {
		// ServerName is left empty: crypto/tls takes it from each address dialed.
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	switch s.Mode {
	case Sentinel:
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: s.MasterName, SentinelAddrs: s.Addrs, SentinelPassword: s.SentinelPassword,
			Username: s.Username, Password: s.Password, DB: s.DB, TLSConfig: tlsConfig,
			DialTimeout: DialTimeout, DialerRetries: 1, ReadTimeout: IOTimeout, WriteTimeout: IOTimeout,
			PoolTimeout: PoolTimeout, MaxRetries: MaxRetries, MaxRetryBackoff: 250 * time.Millisecond,
			ContextTimeoutEnabled: true,
		})
	case Cluster:
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: s.Addrs, Username: s.Username, Password: s.Password, TLSConfig: tlsConfig,
			DialTimeout: DialTimeout, DialerRetries: 1, ReadTimeout: IOTimeout, WriteTimeout: IOTimeout,
			PoolTimeout: PoolTimeout, MaxRedirects: MaxRedirects, MaxRetryBackoff: 250 * time.Millisecond,
			ContextTimeoutEnabled: true,
		})
	default:
		return redis.NewClient(&redis.Options{
			Addr: s.Addrs[0], Username: s.Username, Password: s.Password, DB: s.DB, TLSConfig: tlsConfig,
			DialTimeout: DialTimeout, DialerRetries: 1, ReadTimeout: IOTimeout, WriteTimeout: IOTimeout,
			PoolTimeout: PoolTimeout, MaxRetries: MaxRetries, MaxRetryBackoff: 250 * time.Millisecond,
			ContextTimeoutEnabled: true,
		})
	}
}

// ErrNotReplicated is the error of a command issued under WithReplicaAck
// that no replica acknowledged within AckTimeout. The command may have
// taken effect on the primary; only its survival of a failover is unknown.
var ErrNotReplicated = errors.New("redis: no replica acknowledged the write")

type ackKey struct{}

// WithReplicaAck marks ctx so that on a Sentinel client every command
// issued under it returns only once a replica holds everything the primary
// had written when the command ran (including writes made by other
// connections before it), or fails with ErrNotReplicated. Sentinel
// promotes a replica on failover and replication is asynchronous, so
// without this a write the old primary acknowledged can be lost. On the
// other forms the mark changes nothing.
func WithReplicaAck(ctx context.Context) context.Context {
	return context.WithValue(ctx, ackKey{}, true)
}

func wantsAck(ctx context.Context) bool {
	v, _ := ctx.Value(ackKey{}).(bool)
	return v
}

// fenceChannel is published to after each acknowledged command. A PUBLISH
// is replicated, so it moves the connection's replication offset past every
// earlier write of the primary, and WAIT on that connection then waits for
// all of them: a command that wrote nothing (a duplicate enqueue finding
// the task already stored) is covered too. No one subscribes to it.
const fenceChannel = "queen:replica-ack"

// ackHook runs each command under WithReplicaAck as a pipeline of the
// command, the fence and WAIT on one connection, so the WAIT counts the
// acknowledgements of the server that ran the command.
type ackHook struct{ rdb *redis.Client }

func (h ackHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h ackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !wantsAck(ctx) {
			return next(ctx, cmd)
		}
		_, err := h.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Process(ctx, cmd) })
		return err
	}
}

func (h ackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !wantsAck(ctx) {
			return next(ctx, cmds)
		}
		// What go-redis runs inside (a new connection's handshake) is not marked.
		inner := context.WithValue(ctx, ackKey{}, false)
		if len(cmds) > 0 && cmds[0].Name() == "multi" {
			// WAIT cannot join a MULTI/EXEC batch; refuse rather than
			// answer success without the acknowledgement.
			err := errors.New("redisconn: WithReplicaAck does not cover MULTI/EXEC transactions")
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		fence := redis.NewIntCmd(inner, "publish", fenceChannel, "")
		wait := redis.NewIntCmd(inner, "wait", 1, AckTimeout.Milliseconds())
		err := next(inner, append(cmds[:len(cmds):len(cmds)], fence, wait))
		var ackErr error
		switch {
		case fence.Err() != nil:
			ackErr = fmt.Errorf("%w: %w", ErrNotReplicated, fence.Err())
		case wait.Err() != nil:
			ackErr = fmt.Errorf("%w: %w", ErrNotReplicated, wait.Err())
		case wait.Val() < 1:
			ackErr = fmt.Errorf("%w within %s", ErrNotReplicated, AckTimeout)
		}
		// A command's own failure says more than the WAIT's and stays;
		// every other command of the pipeline (a coalesced batch holds
		// several) gets the verdict. A nil reply is a reply, not a failure.
		var first error
		for _, c := range cmds {
			e := c.Err()
			if ackErr != nil && (e == nil || errors.Is(e, redis.Nil)) {
				c.SetErr(ackErr)
				e = ackErr
			}
			if first == nil {
				first = e
			}
		}
		if first == nil {
			return err
		}
		return first
	}
}
