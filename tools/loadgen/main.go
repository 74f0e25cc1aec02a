// Command loadgen posts signed webhook deliveries to receivers and reports
// deliveries per second and p99 latency per receiver, as JSON on stdout. It
// is BenchmarkIngest's load tool (internal/ghevents), run as its own
// process as GitHub is, and works against any deployed receiver.
//
// The deliveries are signed with GITHUB_WEBHOOK_SECRET, the receiver's own
// variable; a secret is never a flag, which every process on the machine
// can read.
//
// Usage:
//
//	loadgen -plan plan.json
//	loadgen -url http://127.0.0.1:8080/webhook -body payload.json [-event pull_request] \
//	        [-clients 8] [-rounds 3] [-deliveries 600] [-id-prefix run1] [-expect 202]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// SecretEnv names the variable holding the webhook secret.
const SecretEnv = "GITHUB_WEBHOOK_SECRET"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv(SecretEnv), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, secret string, out io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	planFile := fs.String("plan", "", "a JSON plan of several targets (see Plan); the flags below make a one-target plan")
	var p Plan
	var t Target
	fs.StringVar(&t.URL, "url", "", "the receiver's webhook URL")
	fs.StringVar(&t.BodyFile, "body", "", "the payload file")
	fs.StringVar(&t.Event, "event", "pull_request", "X-GitHub-Event")
	fs.StringVar(&t.IDPrefix, "id-prefix", "", "a unique X-GitHub-Delivery per delivery under this prefix (default: one fixed id)")
	fs.IntVar(&t.Expect, "expect", 202, "the status every answer must have")
	fs.IntVar(&p.Clients, "clients", 1, "clients at once")
	fs.IntVar(&p.Rounds, "rounds", 1, "rounds; the figures are medians over them")
	fs.IntVar(&p.Deliveries, "deliveries", 100, "deliveries per round")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *planFile != "" {
		var err error
		if p, err = readPlan(*planFile); err != nil {
			return err
		}
	} else {
		switch {
		case t.URL == "":
			return fmt.Errorf("-url is required (or -plan)")
		case t.BodyFile == "":
			return fmt.Errorf("-body is required (or -plan)")
		}
		t.Name = t.URL
		p.Targets = []Target{t}
	}
	if secret == "" {
		return fmt.Errorf("%s is not set", SecretEnv)
	}
	res, err := Run(ctx, p, []byte(secret))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
