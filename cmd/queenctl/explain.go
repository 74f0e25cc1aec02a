package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/dispatch"
)

const explainSynopsis = "owner/name#N [--json]"

func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the API's answer as JSON")
	c, repo, issue, code := refCommand("explain", explainSynopsis, fs, args, nil, stdout, stderr)
	if code >= 0 {
		return code
	}
	d, err := c.Get(context.Background(), repo, issue)
	if err != nil {
		if apiclient.IsNotFound(err) {
			fmt.Fprintf(stderr, "queenctl: explain: %s#%d: no such dispatch row\n", repo, issue)
		} else {
			fmt.Fprintf(stderr, "queenctl: explain: %s#%d: %v\n", repo, issue, err)
		}
		return 1
	}
	return output(stdout, stderr, "explain", *asJSON, d, func(w io.Writer) error { return writeExplain(w, d) })
}

// writeExplain prints the claim view, the rule path and the history for a
// person to read.
func writeExplain(w io.Writer, d *apiwire.Detail) error {
	v := d.View
	fmt.Fprintf(w, "%s#%d (version %d)\n\n", v.Repo, v.Issue, v.Version)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "  %s\t%s\n", name, value) }
	field("claim", v.Claim)
	field("claims_issue", fmt.Sprint(v.ClaimsIssue))
	field("live", fmt.Sprint(v.Live))
	field("stage", v.Stage)
	field("holds_files", fmt.Sprint(v.HoldsFiles))
	field("held_paths", orNone(strings.Join(v.HeldPaths, ", ")))
	until := "-"
	if v.HeldUntil != nil {
		until = v.HeldUntil.UTC().Format(time.RFC3339)
	} else if v.HoldsFiles {
		until = "while the bee works"
	}
	field("held_until", until)
	field("send_back_claim", orDash(v.SendBackClaim))
	field("accept_claim", orDash(v.AcceptClaim))
	field("prs", prsText(v.PRs))
	field("freed", freeText(v.Freed))
	field("would_free", freeText(v.WouldFree))
	kept := "-"
	if d.Kept != nil {
		kept = fmt.Sprintf("at %s by %s: %s", d.Kept.At.UTC().Format(time.RFC3339), orNone(d.Kept.Source), d.Kept.Reason)
	}
	field("kept", kept)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nrule path:")
	for _, l := range d.Explain {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w, "\nhistory (newest first):")
	if len(d.History) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, e := range d.History {
		parts := []string{e.At.UTC().Format(time.RFC3339), fmt.Sprintf("v%d", e.Version), e.Action}
		if e.Decision != "" {
			parts = append(parts, e.Decision)
		}
		if e.Rule != "" {
			parts = append(parts, "rule "+e.Rule)
		}
		if e.Source.Kind != "" {
			parts = append(parts, "by "+e.Source.String())
		}
		if e.Evidence != "" {
			parts = append(parts, "evidence: "+e.Evidence)
		}
		if e.Outcome.Deleted {
			parts = append(parts, "-> deleted")
		} else {
			parts = append(parts, fmt.Sprintf("-> claim %s, live %t, stage %s", e.Outcome.Claim, e.Outcome.Live, e.Outcome.Stage))
		}
		fmt.Fprintf(w, "  %s\n", strings.Join(parts, "  "))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// prsText is the last PR read: the attempt's PRs counted, earlier
// attempts' apart, so a person sees which PRs the rules did not count.
func prsText(p *dispatch.PRState) string {
	switch {
	case p == nil:
		return "not read"
	case !p.Read:
		return "unread"
	}
	s := fmt.Sprintf("open %d, merged %d, closed unmerged %d", p.Open, p.Merged, p.ClosedUnmerged)
	if len(p.Numbers) > 0 {
		s += " (" + prNumbers(p.Numbers) + ")"
	}
	if len(p.Earlier) > 0 {
		s += "; earlier attempts', not counted: " + prNumbers(p.Earlier)
	}
	if p.ReadAt != nil {
		s += "; read " + p.ReadAt.UTC().Format(time.RFC3339)
	}
	return s
}

func prNumbers(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = "#" + strconv.Itoa(n)
	}
	return strings.Join(out, ", ")
}

func freeText(f *dispatch.FreeRecord) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("by %s at %s: %s", f.Rule, f.At.UTC().Format(time.RFC3339), f.Evidence)
}
