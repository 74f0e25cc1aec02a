package usage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/logging"
)

// Run is what a server binary does once configured; it returns when ctx ends.
type Run func(ctx context.Context, cfg *config.Config, log *slog.Logger) error

// Main is a server binary's main: --help and --version, the configuration
// of its first role, JSON logs on stdout that carry no secret, and run until
// SIGTERM or Ctrl-C. It returns the exit status: 2 for a bad configuration
// (one line on stderr naming the variable), 1 when run failed.
func (b Binary) Main(args []string, stdout, stderr io.Writer, run Run) int {
	if code, exit := b.Args(args, stdout, stderr); exit {
		return code
	}
	cfg, err := config.FromEnv(b.Roles[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", b.Name, err)
		return 2
	}
	log := logging.Setup(stdout, b.Name, cfg.Secrets()...)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		var bad *config.Error
		if errors.As(err, &bad) {
			fmt.Fprintf(stderr, "%s: %v\n", b.Name, bad)
			return 2
		}
		log.Error(b.Name+" stopped", "err", err)
		return 1
	}
	return 0
}
