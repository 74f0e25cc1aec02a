// Command webhook receives GitHub's webhooks on QUEEN_LISTEN and serves the
// claims API, /healthz, /readyz and /metrics on QUEEN_API_LISTEN.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/webhookserver"
)

func main() {
	cfg, err := config.FromEnv(config.Webhook)
	if err != nil {
		fmt.Fprintf(os.Stderr, "webhook: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("service", "webhook")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := webhookserver.Run(ctx, cfg, log, webhookserver.Listeners{}); err != nil {
		var bad *config.Error
		if errors.As(err, &bad) {
			fmt.Fprintf(os.Stderr, "webhook: %v\n", bad)
			os.Exit(2)
		}
		log.Error("webhook stopped", "err", err)
		os.Exit(1)
	}
}
