package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/queen-app/queen-app/internal/plural"
)

// WriteJSON writes rep in the design's machine form, one row per line so a
// large snapshot stays readable and diffable.
func WriteJSON(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"taken_at\": %q,\n \"rows\": [", rep.TakenAt.UTC().Format(time.RFC3339Nano))
	for i, l := range rep.Rows {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n  ")
		bw.Write(b)
	}
	if len(rep.Rows) > 0 {
		bw.WriteString("\n ")
	}
	bw.WriteString("],\n \"summary\": {")
	parts := []struct {
		name string
		v    any
	}{
		{"claims", rep.Summary.Claims},
		{"send_back_claim", rep.Summary.SendBackClaim},
		{"accept_claim", rep.Summary.AcceptClaim},
	}
	for i, p := range parts {
		b, err := json.Marshal(p.v)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		fmt.Fprintf(bw, "\n  %q: %s", p.name, b)
	}
	bw.WriteString("}}\n")
	return bw.Flush()
}

// WriteTable writes rep as an aligned table, one line per row, followed by
// the summary. A rule that does not apply to a row shows as "-".
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tCLAIM\tCLAIMS_ISSUE\tLIVE\tSTAGE\tHOLDS_FILES\tSEND_BACK_CLAIM\tACCEPT_CLAIM")
	for _, l := range rep.Rows {
		fmt.Fprintf(tw, "%s#%d\t%s\t%t\t%t\t%s\t%t\t%s\t%s\n",
			l.Repo, l.Issue, l.Claim, l.ClaimsIssue, l.Live, l.Stage, l.HoldsFiles, dash(l.SendBackClaim), dash(l.AcceptClaim))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return WriteSummary(w, rep)
}

// WriteSummary writes the counts of rep: claims, holds and each rule's
// answers.
func WriteSummary(w io.Writer, rep *Report) error {
	var claiming, holding int
	for _, l := range rep.Rows {
		if l.ClaimsIssue {
			claiming++
		}
		if l.HoldsFiles {
			holding++
		}
	}
	s := rep.Summary
	c, sb, a := s.Claims, s.SendBackClaim, s.AcceptClaim
	_, err := fmt.Fprintf(w, ""+
		"taken_at %s, %s (rules applied as if both freeing flags were on)\n"+
		"claims: running %d, accepted %d, rejected %d, awaitingReview %d, failed %d, cancelled %d\n"+
		"claims_issue: %s; holds_files: %s\n"+
		"send_back_claim: %s, %d free, %d live\n"+
		"accept_claim: %s, %d free, %d live (open_pr %d, merged_pr %d, no_pr %d, unread %d)\n",
		rep.TakenAt.UTC().Format(time.RFC3339Nano), plural.Rows(len(rep.Rows)),
		c.Running, c.Accepted, c.Rejected, c.AwaitingReview, c.Failed, c.Cancelled,
		plural.Rows(claiming), plural.Rows(holding),
		plural.Rows(sb.Rows), sb.Free, sb.Live,
		plural.Rows(a.Rows), a.Free, a.Live, a.OpenPR, a.MergedPR, a.NoPR, a.Unread)
	return err
}

func dash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
