// Command queenctl is the operator CLI of queen-app: replay, explain, claims,
// export, deliveries and demo. Each subcommand lives in a file of its own and
// is one entry of the commands table.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/usage"
)

// command is one subcommand: run gets the arguments after its name and
// returns the exit status (0 ok, 1 failed, 2 usage).
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"replay":     {"apply the rules to a snapshot of dispatch rows, offline", runReplay},
	"audit":      {"show the audit stream's decisions, newest last, from the claims API", runAudit},
	"demo":       {"run the whole system on this machine against a local sandbox and check the outcomes", runDemo},
	"claims":     {"list, import, export, free, keep or delete claims over the claims API", runClaims},
	"explain":    {"show one claim view with its rule path and history, from the claims API", runExplain},
	"export":     {"show the export push's progress per row, or push one row now, over the claims API", runExport},
	"deliveries": {"list the App's webhook deliveries of the last 3 days, or redeliver the failed ones", runDeliveries},
	"ledger":     {"create, inspect, back up or restore the ledger in Redis (init, status, backup, restore)", runLedger},
	"doctor":     {"check Redis, the App's credentials, the webhook's deliveries, the export and the claims API", runDoctor},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeUsage(stderr)
		return 2
	}
	switch {
	case usage.IsHelp(args[0]):
		writeUsage(stdout)
		return 0
	case usage.IsVersion(args[0]):
		fmt.Fprintln(stdout, queenctl.Version())
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "queenctl: unknown command %q (queenctl --help lists them)\n", args[0])
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

// queenctl is the binary's help; Body, the commands, is filled in by usage.
var queenctl = usage.Binary{
	Name:  "queenctl",
	Usage: "COMMAND [ARGS] | -h | --help | --version",
	About: `queenctl is queen-app's operator CLI. demo and replay run on this machine
alone; the other commands talk to the claims API of a running webhook at
QUEEN_API_URL with QUEEN_API_TOKEN (deliveries talks to GitHub with the
App's id and key).`,
	Roles: []config.Role{config.CLI, config.Deliveries},
	Example: `go run ./cmd/queenctl demo      # the whole system on this machine, in a sandbox
QUEEN_API_URL=http://127.0.0.1:8081 QUEEN_API_TOKEN="$(cat /etc/queen-app/api-token)" \
  queenctl explain hive/t27#9111`,
}

// newAPIClient is the claims API's client as cfg says: QUEEN_API_URL with
// QUEEN_API_TOKEN, trusting QUEEN_CA_FILE's certificates, a refused
// connection naming QUEEN_API_URL; timeout 0 leaves the bound to the
// caller's context.
func newAPIClient(cfg *config.Config, timeout time.Duration) (*apiclient.Client, error) {
	rt, err := apiclient.Transport(cfg.QueenCA)
	if err != nil {
		return nil, &config.Error{Var: "QUEEN_CA_FILE", Problem: err.Error()}
	}
	return apiclient.New(cfg.QueenAPI, cfg.APIToken, &http.Client{Timeout: timeout, Transport: reachTransport{cfg.QueenAPI, rt}})
}

func writeUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Commands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-12s %s\n", n, commands[n].summary)
	}
	b.WriteString("\nRun queenctl COMMAND --help for a command's usage.")
	h := queenctl
	h.Body = b.String()
	_ = h.WriteHelp(w)
}

// parseFlags parses fs over args for a command that takes flags only: an
// argument is an error, and so is a --repo (repo; nil where the command
// has none) that is not owner/name.
func parseFlags(fs *flag.FlagSet, args []string, repo *string) error {
	pos, err := parseArgs(fs, args)
	switch {
	case err != nil:
		return err
	case len(pos) != 0:
		return fmt.Errorf("unexpected argument %q", pos[0])
	case repo != nil && *repo != "" && !ghrepo.Valid(*repo):
		return fmt.Errorf("--repo %q is not owner/name", *repo)
	}
	return nil
}

// parseArgs parses fs's flags wherever they stand among the positional
// arguments and returns the positionals in order; everything after "--" is
// positional. It returns flag.ErrHelp for -h or --help.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard) // callers print one line of their own
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError reports a usage problem in one line and returns the exit
// status: 0 with the usage on stdout for -h, 2 otherwise.
func usageError(err error, name, synopsis string, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "usage: queenctl %s %s\n", name, synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	printErr(stderr, name, fmt.Errorf("%w (usage: queenctl %s %s)", err, name, synopsis))
	return 2
}

// printErr writes err as queenctl's error for the command name: each of its
// lines (config names every bad variable on a line of its own) prefixed
// "queenctl: name: ", so a grep for the command finds them all.
func printErr(stderr io.Writer, name string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "queenctl: %s: %s\n", name, line)
	}
}

// verb is one subcommand of a command group (claims, export, deliveries).
type verb struct{ name, synopsis string }

func synopsisOf(verbs []verb, name string) string {
	for _, v := range verbs {
		if v.name == name {
			return v.synopsis
		}
	}
	return ""
}

// runGroup runs the verb args[0] of group from runs; -h lists the verbs
// with their synopses, then note.
func runGroup(group string, verbs []verb, runs map[string]func([]string, io.Writer, io.Writer) int, note string,
	args []string, stdout, stderr io.Writer) int {
	names := make([]string, len(verbs))
	for i, v := range verbs {
		names[i] = v.name
	}
	synopsis := strings.Join(names, "|") + " ..."
	if len(args) == 0 {
		fmt.Fprintf(stderr, "queenctl: %s: want a subcommand (usage: queenctl %s %s)\n", group, group, synopsis)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, "usage:")
		for _, v := range verbs {
			fmt.Fprintf(stdout, "  queenctl %s %s %s\n", group, v.name, v.synopsis)
		}
		if note != "" {
			fmt.Fprintln(stdout, "\n"+note)
		}
		return 0
	}
	if run, ok := runs[args[0]]; ok {
		return run(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "queenctl: %s: unknown subcommand %q (usage: queenctl %s %s)\n", group, args[0], group, synopsis)
	return 2
}

// output writes v as indented JSON under --json, else as text writes it;
// a failed write is one line on stderr and exit code 1.
func output(stdout, stderr io.Writer, name string, asJSON bool, v any, text func(io.Writer) error) int {
	var err error
	if asJSON {
		err = writeJSON(stdout, v)
	} else {
		err = text(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	return 0
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
