// Package logging is the one log format of queen-app's binaries: JSON
// lines through log/slog, with secret values redacted, and go-redis's own
// log lines routed through the same handler (asynq's go through the
// worker's asynq.Config.Logger).
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Redacted stands in for a secret value in a log line.
const Redacted = "[REDACTED]"

// New is a JSON logger writing to w with service set on every line; any
// of secrets appearing in a message or a string, error or Stringer value
// is replaced with Redacted. Empty secrets are ignored.
func New(w io.Writer, service string, secrets ...string) *slog.Logger {
	var keep []string
	for _, s := range secrets {
		if s != "" {
			keep = append(keep, s)
		}
	}
	opts := &slog.HandlerOptions{}
	if len(keep) > 0 {
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			return redactAttr(a, keep)
		}
	}
	return slog.New(slog.NewJSONHandler(w, opts)).With("service", service)
}

func redactAttr(a slog.Attr, secrets []string) slog.Attr {
	v := a.Value.Resolve()
	var s string
	switch v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			return a
		}
	default:
		return a
	}
	if r := redact(s, secrets); r != s || v.Kind() == slog.KindAny {
		return slog.String(a.Key, r)
	}
	return a
}

func redact(s string, secrets []string) string {
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, Redacted)
	}
	return s
}

// Setup is New, and makes it go-redis's logger too: go-redis logs through
// one process-wide logger (redis.SetLogger), which by default writes plain
// text to stderr.
func Setup(w io.Writer, service string, secrets ...string) *slog.Logger {
	log := New(w, service, secrets...)
	redis.SetLogger(Redis(log))
	return log
}

// Redis adapts log to go-redis's logger interface; its lines carry
// component=go-redis at warn level (go-redis logs only what went wrong).
func Redis(log *slog.Logger) RedisLogger {
	return RedisLogger{log.With("component", "go-redis")}
}

// RedisLogger is go-redis's Logging over slog.
type RedisLogger struct{ l *slog.Logger }

// Printf logs one go-redis line.
func (r RedisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)))
}
