package usage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/logging"
)

// Run is what a server binary does once configured; it returns when ctx ends.
type Run func(ctx context.Context, cfg *config.Config, log *slog.Logger) error

// Main is a server binary's main: --help and --version, the configuration
// of its first role, JSON logs on stdout that carry no secret, and run until
// SIGTERM or Ctrl-C. It returns the exit status: 2 for a bad configuration
// (on stderr one line naming each bad variable, all of them), 1 when run
// failed.
func (b Binary) Main(args []string, stdout, stderr io.Writer, run Run) int {
	if code, exit := b.Args(args, stdout, stderr); exit {
		return code
	}
	cfg, err := config.FromEnv(b.Roles[0])
	if b.CheckEnv != nil {
		err = config.Join(err, b.CheckEnv(os.Getenv))
	}
	if err != nil {
		b.writeErrors(stderr, err)
		return 2
	}
	log := logging.Setup(stdout, b.Name, cfg.Secrets()...)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		var bad *config.Error
		if errors.As(err, &bad) {
			b.writeErrors(stderr, err)
			return 2
		}
		log.Error(b.Name+" stopped", "err", err)
		return 1
	}
	return 0
}

// writeErrors writes each line of err (config.Errors has one per
// variable) prefixed with the binary's name.
func (b Binary) writeErrors(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "%s: %s\n", b.Name, line)
	}
}
