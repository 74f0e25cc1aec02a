// Command webhook receives GitHub's webhooks on QUEEN_LISTEN and serves the
// claims API, /healthz, /readyz and /metrics on QUEEN_API_LISTEN.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/usage"
	"github.com/queen-app/queen-app/internal/webhookserver"
)

var binary = usage.Binary{
	Name:  "webhook",
	Usage: "[-h | --help | --version]",
	About: `webhook is queen-app's GitHub-facing receiver and its claims API.

On QUEEN_LISTEN it takes GitHub's deliveries at POST /webhook, signed with
GITHUB_WEBHOOK_SECRET, and queues a re-evaluation of issue N (in Redis, for
the worker) when a pull request of branch queen-N opens, closes or reopens. On
QUEEN_API_LISTEN it serves the claims API (/v1/*, bearer QUEEN_API_TOKEN)
that the Queen writes its dispatch rows to, and /healthz, /readyz and
/metrics. Either listener serves HTTPS with QUEEN_TLS_CERT_FILE/_KEY_FILE or
QUEEN_API_TLS_CERT_FILE/_KEY_FILE, re-read when the files change. Logs are JSON
lines on stdout; SIGTERM stops it gracefully.`,
	Roles: []config.Role{config.Webhook},
	Example: `QUEEN_REDIS_URL=redis://127.0.0.1:6379/0 GITHUB_APP_ID=123456 \
GITHUB_APP_PRIVATE_KEY_FILE=/etc/queen-app/app.pem \
GITHUB_WEBHOOK_SECRET="$(cat /etc/queen-app/webhook-secret)" \
QUEEN_API_TOKEN="$(cat /etc/queen-app/api-token)" webhook`,
}

func main() {
	os.Exit(binary.Main(os.Args[1:], os.Stdout, os.Stderr, func(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
		return webhookserver.Run(ctx, cfg, log, webhookserver.Listeners{})
	}))
}
