package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/plural"
)

const auditSynopsis = "[--repo owner/name] [--issue N] [--since DURATION] [--limit N] [--json]"

func runAudit(args []string, stdout, stderr io.Writer) int {
	const name = "audit"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	repo := fs.String("repo", "", "only this owner/name")
	issue := fs.Int64("issue", 0, "only this issue `N`")
	since := fs.Duration("since", 0, "only entries of the last `DURATION` (e.g. 30m, 24h)")
	limit := fs.Int("limit", apiwire.DefaultLimit, fmt.Sprintf("at most the newest `N` entries (1 to %d)", apiwire.MaxLimit))
	asJSON := fs.Bool("json", false, `print {"entries": [ENTRY, ...], "more": bool} instead of the table`)
	err := parseFlags(fs, args, repo)
	switch {
	case err != nil:
	case *issue < 0:
		err = errors.New("--issue must be a positive number")
	case *since < 0:
		err = errors.New("--since must not be negative")
	case *limit < 1 || *limit > apiwire.MaxLimit:
		err = fmt.Errorf("--limit must be from 1 to %d", apiwire.MaxLimit)
	}
	if err != nil {
		return usageError(err, name, auditSynopsis, fs, stdout, stderr)
	}
	c, ok := claimsAPI(name, stderr)
	if !ok {
		return 2
	}
	o := apiclient.AuditOptions{Repo: *repo, Issue: *issue, Limit: *limit}
	if *since > 0 {
		o.Since = since.String()
	}
	list, err := c.Audit(context.Background(), o)
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	return output(stdout, stderr, name, *asJSON, list, func(w io.Writer) error { return writeAudit(w, list) })
}

// writeAudit prints one line per entry, newest last, then a count.
func writeAudit(w io.Writer, list *apiwire.AuditList) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tROW\tRULE\tOUTCOME\tSOURCE\tDELIVERY")
	for _, e := range list.Entries {
		fmt.Fprintf(tw, "%s\t%s#%d\t%s\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339), e.Repo, e.Issue,
			orNone(e.Rule), auditOutcome(e), orNone(auditSource(e.Source)), orNone(e.Source.Delivery))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	more := ""
	if list.More {
		more = " (older entries left out: narrow with --repo, --issue or --since, or raise --limit)"
	}
	_, err := fmt.Fprintf(w, "%s%s\n", plural.Count(len(list.Entries), "entry", "entries"), more)
	return err
}

// auditSource is the source's kind and writer or slot, one word; the
// delivery has a column of its own and the reason is in --json.
func auditSource(s audit.Source) string {
	for _, who := range []string{s.Writer, s.Slot} {
		if who != "" {
			return s.Kind + ":" + who
		}
	}
	return s.Kind
}

// auditOutcome is what an entry decided, else what was asked (a write, a
// PR read, a delete).
func auditOutcome(e audit.Entry) string {
	switch {
	case e.Outcome.Deleted:
		return "deleted"
	case e.Decision != "":
		return e.Decision
	}
	return e.Action
}
