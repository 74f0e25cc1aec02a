package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/demo"
)

const demoSynopsis = "[--flags=on|off] [--keep] [--log FILE]"

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	flags := fs.String("flags", "on", "the freeing flags: on frees, off is shadow mode (would_free only, nothing freed)")
	keep := fs.Bool("keep", false, "after the table, keep everything running and print how to look at it, until Ctrl-C")
	logFile := fs.String("log", "", "write the webhook's and worker's JSON logs to `FILE`")
	pos, err := parseArgs(fs, args)
	on, ferr := config.ParseFlag(*flags)
	switch {
	case err != nil:
	case len(pos) != 0:
		err = fmt.Errorf("unexpected argument %q", pos[0])
	case ferr != nil:
		err = fmt.Errorf("--flags %s", ferr)
	}
	if err != nil {
		return usageError(err, "demo", demoSynopsis, fs, stdout, stderr)
	}
	o := demo.Options{FlagsOn: on, Keep: *keep, Out: stdout}
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintf(stderr, "queenctl: demo: %v\n", err)
			return 1
		}
		defer f.Close()
		o.Logs = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, o); err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		fmt.Fprintf(stderr, "queenctl: demo: %v\n", err)
		return 1
	}
	return 0
}
