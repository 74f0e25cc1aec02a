// Command worker runs queen-app's asynq worker: the task handlers, the
// periodic scheduler (one leader among replicas) and /healthz, /readyz and
// /metrics on QUEEN_API_LISTEN.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/logging"
	"github.com/queen-app/queen-app/internal/usage"
	"github.com/queen-app/queen-app/internal/workerserver"
)

var binary = usage.Binary{
	Name:  "worker",
	Usage: "[-h | --help | --version]",
	About: `worker runs queen-app's tasks from the Redis queue the webhook fills.

claim:reevaluate re-reads every PR of branch queen-N from GitHub and frees
the claim when accept_claim says so; claim:sweep re-reads all accepted rows
(one GraphQL query per 100 branches) and applies send_back_claim;
export:sweep and export:push carry accepted heads from the Queen's export
to GitHub and open their PRs (when QUEEN_EXPORT_URL is set);
deliveries:redeliver asks GitHub to redeliver failed webhooks. One replica
among several runs the periodic tasks. It serves /healthz, /readyz and
/metrics on QUEEN_API_LISTEN. Freeing is in shadow mode (would_free only)
until QUEEN_FREE_CLOSED_PR and QUEEN_RELEASE_DEAD_CLAIMS are on. Logs are
JSON lines on stdout; SIGTERM hands unfinished tasks back to the queue.`,
	Roles: []config.Role{config.Worker},
	Example: `QUEEN_REDIS_URL=redis://127.0.0.1:6379/0 GITHUB_APP_ID=123456 \
GITHUB_APP_PRIVATE_KEY_FILE=/etc/queen-app/app.pem \
QUEEN_FREE_CLOSED_PR=on QUEEN_RELEASE_DEAD_CLAIMS=on worker`,
}

func main() {
	if code, exit := binary.Args(os.Args[1:], os.Stdout, os.Stderr); exit {
		os.Exit(code)
	}
	cfg, err := config.FromEnv(config.Worker)
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: %v\n", err)
		os.Exit(2)
	}
	opts, err := workerserver.OptionsFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: %v\n", err)
		os.Exit(2)
	}
	log := logging.Setup(os.Stdout, "worker", cfg.Secrets()...)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := workerserver.Run(ctx, cfg, log, opts); err != nil {
		var bad *config.Error
		if errors.As(err, &bad) {
			fmt.Fprintf(os.Stderr, "worker: %v\n", bad)
			os.Exit(2)
		}
		log.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}
