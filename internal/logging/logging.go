// Package logging is the one log format of queen-app's binaries: JSON
// lines through log/slog, every secret scrubbed by internal/redact (whole
// or cut), and go-redis's and asynq's own log lines routed through the same
// handler.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redact"
)

// Redacted stands in for a secret value in a log line.
const Redacted = redact.Mask

// New is a JSON logger writing to w with service set on every line; no
// line carries any of secrets, a piece of one, or a credential-shaped
// value (redact.Handler). Empty secrets are ignored. go-redis's and
// asynq's warnings come in bursts: the first line, a summary a minute and
// one at the end (BurstQuiet, BurstEvery).
func New(w io.Writer, service string, secrets ...string) *slog.Logger {
	return slog.New(limitBursts(redact.Handler(slog.NewJSONHandler(w, nil), secrets...), BurstQuiet, BurstEvery)).
		With("service", service)
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

// Asynq adapts log to asynq's Logger (asynq.Config.Logger), its lines
// carrying component=asynq.
func Asynq(log *slog.Logger) AsynqLogger { return AsynqLogger{log.With("component", "asynq")} }

// AsynqLogger is asynq's Logger over slog.
type AsynqLogger struct{ l *slog.Logger }

func (a AsynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a AsynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a AsynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a AsynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }

// Fatal logs and exits, as asynq expects of it.
func (a AsynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)); os.Exit(1) }
