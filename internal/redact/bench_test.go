package redact

import (
	"io"
	"log/slog"
	"testing"
)

// BenchmarkLogLine writes the webhook's log line of an accepted delivery
// through Handler with three secrets, as the binaries do, beside the same
// line unscrubbed (the baseline).
func BenchmarkLogLine(b *testing.B) {
	secrets := []string{"current-webhook-secret-5f1c", "previous-webhook-secret-9a0e",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	attrs := []slog.Attr{
		slog.String("delivery_id", "72d3162e-cc78-11e3-81ab-4c9367dc0958"), slog.String("event", "pull_request"),
		slog.String("action", "closed"), slog.Int("code", 202), slog.String("repo", "Codertocat/Hello-World"),
		slog.Int("pr", 2), slog.Int64("issue", 77), slog.Int64("installation_id", 1),
		slog.String("task_id", "reevaluate:Codertocat/Hello-World:77:72d3162e-cc78-11e3-81ab-4c9367dc0958"),
	}
	for _, c := range []struct {
		name string
		log  *slog.Logger
	}{
		{"plain", slog.New(slog.NewJSONHandler(io.Discard, nil)).With("service", "webhook")},
		{"scrubbed", slog.New(Handler(slog.NewJSONHandler(io.Discard, nil), secrets...)).With("service", "webhook")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.log.LogAttrs(b.Context(), slog.LevelInfo, "webhook accepted", attrs...)
			}
		})
	}
}
