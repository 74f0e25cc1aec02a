// Package redisavail says when Redis is unavailable to a request, and how
// long a request may wait for it. The claims API and the webhook receiver
// answer 503 on exactly these errors, so a caller retries (and GitHub marks
// the delivery failed, for the redelivery job to bring back) instead of
// reading a 500 as a bug.
package redisavail

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redisconn"
)

// Budget is the total time one HTTP request may spend on Redis, every call
// of the request sharing it. It keeps a webhook delivery well under GitHub's
// 10 s timeout and is what a caller of the claims API waits at most before
// a 503. go-redis's default dial timeout is the same 5 s, so a dial that
// ignores the context (TLS) ends within the budget too.
const Budget = 5 * time.Second

// Unavailable reports whether err means Redis could not serve the request
// now: it is unreachable or slow (network errors, timeouts, a deadline, an
// exhausted or closed pool, a connection cut mid-reply, a TLS mismatch), not
// ready (LOADING, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, a read-only replica,
// out of memory, too many clients, too few replicas, no replica
// acknowledging a write made under redisconn.WithReplicaAck) or refuses us
// (NOAUTH, WRONGPASS, NOPERM: a configuration fault that retrying after the
// fix resolves). Anything else, a script error or a wrong type, is a bug.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	var rhe tls.RecordHeaderError
	var cve *tls.CertificateVerificationError
	var alert tls.AlertError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redisconn.ErrNotReplicated),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.As(err, &ne), errors.As(err, &rhe), errors.As(err, &cve), errors.As(err, &alert):
		return true
	}
	if redis.IsLoadingError(err) || redis.IsMasterDownError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsReadOnlyError(err) || redis.IsOOMError(err) ||
		redis.IsMaxClientsError(err) || redis.IsNoReplicasError(err) ||
		redis.IsAuthError(err) || redis.IsPermissionError(err) {
		return true
	}
	return asynqUnavailable(err.Error())
}

// asynq formats a script's Redis error into its own text ("redis eval
// error: dial tcp ...: connection refused"), so its enqueue errors keep no
// chain to inspect: read what it kept. Only behind asynq's markers, so no
// other error is judged by its words.
func asynqUnavailable(msg string) bool {
	if !strings.Contains(msg, "redis eval error: ") && !strings.Contains(msg, "redis command error: ") {
		return false
	}
	for _, s := range asynqSigns {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

var asynqSigns = []string{
	"dial tcp", "connection refused", "connection reset", "broken pipe", "i/o timeout", "EOF",
	"context deadline exceeded", "context canceled", "connection pool timeout", "client is closed",
	"LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "READONLY ", "OOM ", "NOREPLICAS ",
	"NOAUTH ", "WRONGPASS ", "NOPERM ", "max number of clients",
	redisconn.ErrNotReplicated.Error(),
}
