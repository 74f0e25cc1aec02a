// Command worker runs queen-app's asynq worker: the task handlers, the
// periodic scheduler (one leader among replicas) and /healthz, /readyz and
// /metrics on QUEEN_API_LISTEN.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/queen-app/queen-app/internal/config"
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
	CheckEnv: func(getenv func(string) string) error {
		_, err := workerserver.OptionsFromEnv(getenv)
		return err
	},
}

func main() {
	os.Exit(binary.Main(os.Args[1:], os.Stdout, os.Stderr, func(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
		opts, err := workerserver.OptionsFromEnv(os.Getenv)
		if err != nil {
			return err // a *config.Error: exit 2 naming the variable
		}
		return workerserver.Run(ctx, cfg, log, opts)
	}))
}
