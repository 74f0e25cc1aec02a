// Command worker runs queen-app's asynq worker: the task handlers, the
// periodic scheduler (one leader among replicas) and /healthz, /readyz and
// /metrics on QUEEN_API_LISTEN.
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
	"github.com/queen-app/queen-app/internal/worker"
)

func main() {
	cfg, err := config.FromEnv(config.Worker)
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: %v\n", err)
		os.Exit(2)
	}
	opts, err := worker.OptionsFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("service", "worker")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := worker.Run(ctx, cfg, log, opts); err != nil {
		var bad *config.Error
		if errors.As(err, &bad) {
			fmt.Fprintf(os.Stderr, "worker: %v\n", bad)
			os.Exit(2)
		}
		log.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}
