package redisconn

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/retry"
)

// WaitReady pings rdb until Redis answers, logging each failure with the
// variable to check when Redis refuses the credentials (Refusal); it
// returns ctx's error if ctx ends first. The servers wait here after
// opening their listeners, so a probe sees a live process that is not
// ready, and why.
//
// A deployment that can never answer as configured is an *Error naming
// URLVar, returned at once: a redis+cluster:// URL naming a node without
// cluster mode.
func WaitReady(ctx context.Context, rdb redis.UniversalClient, s *Spec, log *slog.Logger) error {
	var impossible error
	err := retry.Until(ctx, log, "Redis at "+s.String(), func(ctx context.Context) error {
		err := rdb.Ping(ctx).Err()
		if s.Mode == Cluster && err != nil && strings.Contains(err.Error(), clusterDisabled) {
			impossible = bad("names a Redis Cluster, but %s is not in cluster mode (%q): use redis://HOST:PORT/DB for one node",
				strings.Join(s.Addrs, ","), err.Error())
			return nil
		}
		if err != nil && s.Mode == Sentinel {
			if refused := sentinelRefusal(ctx, s); refused != nil {
				return refused
			}
		}
		return Refusal(err, s)
	})
	if impossible != nil {
		return impossible
	}
	return err
}

// clusterDisabled is how a node without cluster mode answers CLUSTER SLOTS.
const clusterDisabled = "cluster support disabled"

// sentinelRefusal is a sentinel of s refusing SentinelPassword, nil when
// none does. A failover client reports only that no sentinel answered,
// so a failed start-up asks them itself.
func sentinelRefusal(ctx context.Context, s *Spec) error {
	for _, addr := range s.Addrs {
		opts := &redis.Options{Addr: addr, Password: s.SentinelPassword, DialTimeout: DialTimeout,
			ReadTimeout: IOTimeout, WriteTimeout: IOTimeout, MaxRetries: -1}
		if s.TLS {
			opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c := redis.NewSentinelClient(opts)
		err := c.Ping(ctx).Err()
		c.Close()
		if refused(err) {
			return &RefusedError{Vars: SentinelPasswordVar + " (the sentinels' own password)", Err: err}
		}
	}
	return nil
}
