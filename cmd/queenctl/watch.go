package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/audit"
)

// watchContext ends on SIGINT or SIGTERM; tests end it themselves.
var watchContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// claimsWatch prints a line per change of the watch stream, and resets,
// until interrupted; a dropped connection is resumed where it stopped.
func claimsWatch(args []string, stdout, stderr io.Writer) int {
	const name = "claims watch"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	repo := fs.String("repo", "", "only this owner/name (all repositories when absent)")
	after := fs.String("after", "", "resume after this audit `ID` (an event's id); absent: changes from now on")
	asJSON := fs.Bool("json", false, `print each event as one JSON line {"event": ..., "id": ..., "data": ...}`)
	if err := parseFlags(fs, args, repo); err != nil {
		return usageError(err, name, claimsSynopsisOf("watch"), fs, stdout, stderr)
	}
	c, ok := claimsAPI(name, stderr)
	if !ok {
		return 2
	}
	ctx, stop := watchContext()
	defer stop()
	err := c.Watch(ctx, apiclient.WatchOptions{Repo: *repo, After: *after,
		OnRetry: func(err error, wait time.Duration) {
			fmt.Fprintf(stderr, "queenctl: %s: %v; reconnecting in %s\n", name, err, wait.Round(10*time.Millisecond))
		}}, func(ev apiclient.Event) error {
		if *asJSON {
			var data any = ev.Change
			if ev.Reset != nil {
				data = ev.Reset
			}
			return writeJSONLine(stdout, struct {
				Event string `json:"event"`
				ID    string `json:"id,omitempty"`
				Data  any    `json:"data"`
			}{ev.Type, ev.ID, data})
		}
		_, err := fmt.Fprintln(stdout, watchLine(ev))
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	return 0
}

func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// watchLine is one event in a line: time, row and version, what was done
// and decided, the rule, the row's outcome, the source and the id to
// resume after.
func watchLine(ev apiclient.Event) string {
	if ev.Reset != nil {
		line := fmt.Sprintf("reset: the audit stream no longer holds entries after %s (oldest %s); re-read the claims (queenctl claims list)",
			ev.Reset.After, orNone(ev.Reset.Oldest))
		if ev.ID != "" {
			line += "; changes follow after id " + ev.ID
		}
		return line
	}
	e := ev.Change.Entry
	what := e.Action
	if e.Decision != "" {
		what += " " + e.Decision
	}
	return fmt.Sprintf("%s  %s#%d v%d  %s  rule %s  %s  %s  id %s", e.At.UTC().Format(time.RFC3339), e.Repo, e.Issue, e.Version,
		what, orNone(e.Rule), watchOutcome(e.Outcome), auditSource(e.Source), ev.ID)
}

// watchOutcome is the row after the entry, in words.
func watchOutcome(o audit.Outcome) string {
	if o.Deleted {
		return "deleted"
	}
	parts := []string{"claim " + orNone(o.Claim), "stage " + orNone(o.Stage), fmt.Sprintf("live %t", o.Live)}
	for _, p := range []struct{ name, v string }{{"freed", o.Freed}, {"would_free", o.WouldFree}, {"export", o.Export}} {
		if p.v != "" {
			parts = append(parts, p.name+" "+p.v)
		}
	}
	if o.Kept {
		parts = append(parts, "kept")
	}
	return strings.Join(parts, ", ")
}
