package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/plural"
)

var exportVerbs = []verb{
	{"status", "[--repo owner/name] [--json]"},
	{"push", "owner/name#N [--dry-run]"},
}

func runExport(args []string, stdout, stderr io.Writer) int {
	return runGroup("export", exportVerbs, map[string]func([]string, io.Writer, io.Writer) int{
		"status": exportStatus, "push": exportPush,
	}, "", args, stdout, stderr)
}

// exportRow is one row of export status --json.
type exportRow struct {
	Repo   string                `json:"repo"`
	Issue  int64                 `json:"issue"`
	Claim  string                `json:"claim"`
	Export *dispatch.ExportState `json:"export"` // null: no attempt recorded yet
}

// notTried is the state shown for an accepted row with no attempt recorded.
const notTried = "not_tried"

func exportStatus(args []string, stdout, stderr io.Writer) int {
	const name = "export status"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	repo := fs.String("repo", "", "only this owner/name (all repositories when absent)")
	asJSON := fs.Bool("json", false, `print {"exports": [{"repo", "issue", "claim", "export"}, ...]} instead of the table`)
	if err := parseFlags(fs, args, repo); err != nil {
		return usageError(err, name, synopsisOf(exportVerbs, "status"), fs, stdout, stderr)
	}
	c, ok := claimsAPI(name, stderr)
	if !ok {
		return 2
	}
	views, err := c.ListAll(context.Background(), apiclient.ListOptions{Repo: *repo, Limit: claimsPageSize})
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	rows := []exportRow{}
	for _, v := range views {
		if v.Export != nil || v.Claim == "accepted" {
			rows = append(rows, exportRow{Repo: v.Repo, Issue: v.Issue, Claim: v.Claim, Export: v.Export})
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			Exports []exportRow `json:"exports"`
		}{rows})
	} else {
		err = writeExportStatus(stdout, rows)
	}
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	return 0
}

// writeExportStatus prints one line per row and a count per state.
func writeExportStatus(w io.Writer, rows []exportRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tSTATE\tHEAD\tPR\tATTEMPTS\tREFUSAL\tLAST_ERROR")
	counts := map[string]int{}
	for _, r := range rows {
		state, head, pr, attempts, refusal, lastErr := notTried, "-", "-", 0, "-", "-"
		shown := state
		if st := r.Export; st != nil {
			state, attempts = st.State, st.Attempts
			shown = state
			if st.Until != nil { // a waiting row says when its turn comes
				shown += " until " + st.Until.UTC().Format(time.RFC3339)
			}
			if st.PushedHead != "" {
				head = shortHead(st.PushedHead)
			}
			if st.PRNumber != 0 {
				pr = fmt.Sprintf("#%d", st.PRNumber)
			}
			if st.Refusal != "" {
				refusal = st.Refusal
			}
			if st.LastError != "" {
				lastErr = st.LastError
			}
		}
		counts[state]++
		fmt.Fprintf(tw, "%s#%d\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Repo, r.Issue, shown, head, pr, attempts, refusal, lastErr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	states := make([]string, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	sort.Strings(states)
	parts := make([]string, 0, len(states))
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	summary := strings.Join(parts, ", ")
	if summary == "" {
		summary = "none"
	}
	_, err := fmt.Fprintf(w, "%s: %s\n", plural.Rows(len(rows)), summary)
	return err
}

func shortHead(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func exportPush(args []string, stdout, stderr io.Writer) int {
	const name = "export push"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dryRun := fs.Bool("dry-run", false, "decide only: push nothing, open no PR, change nothing on the row (the decision is an audit entry)")
	c, repo, issue, code := refCommand(name, synopsisOf(exportVerbs, "push"), fs, args, nil, stdout, stderr)
	if code >= 0 {
		return code
	}
	res, err := c.ExportPush(context.Background(), repo, issue, *dryRun)
	if err != nil {
		var ae *apiclient.Error
		if errors.As(err, &ae) {
			err = errors.New(ae.Message) // the API's own words name the row and the reason
		}
		fmt.Fprintf(stderr, "queenctl: %s: %s#%d: %v\n", name, repo, issue, err)
		return 1
	}
	what := "export push"
	if res.DryRun {
		what = "export dry run"
	}
	how := "enqueued"
	if res.AlreadyEnqueued {
		how = "already enqueued"
	}
	fmt.Fprintf(stdout, "%s#%d: %s %s at %s (task %s)\n", res.Repo, res.Issue, what, how, shortHead(res.Head), res.TaskID)
	return 0
}
