package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/sandbox"
	"github.com/queen-app/queen-app/internal/schedule"
	"github.com/queen-app/queen-app/internal/tasks"
)

// stage sets GitHub and the export up as the scenarios find them: issues
// open, PRs open on the branches that have one, the bees' accepted work in
// the export, one branch GitHub cannot list, the export down at first.
func (d *run) stage() error {
	gh := d.sb.GitHub
	d.heads, d.prOf = map[int64]string{}, map[int64]int{}
	var withPR []string
	// Issues first: PRs take the numbers after them, as on GitHub, where
	// both share one sequence.
	for _, s := range scenarios {
		gh.SetIssue(repo, int(s.issue), true, fmt.Sprintf("Issue %d: %s", s.issue, s.what))
	}
	for _, s := range scenarios {
		switch s.kind {
		case closedUnmerged, merged, openPR, unreadable:
			d.prOf[s.issue] = gh.AddPR(repo, sandbox.PR{HeadRef: s.branch(), HeadRepo: repo, State: "open",
				Title: fmt.Sprintf("Issue %d", s.issue), Body: fmt.Sprintf("Closes #%d", s.issue)})
			withPR = append(withPR, fmt.Sprintf("#%d on %s", d.prOf[s.issue], s.branch()))
		case exported:
			head, err := d.sb.ExportBranch(s.issue, map[string]string{
				fmt.Sprintf("src/part%d.rs", s.issue): fmt.Sprintf("pub fn part%d() -> u32 { %d }\n", s.issue, s.issue)})
			if err != nil {
				return fmt.Errorf("sandbox export branch: %w", err)
			}
			d.heads[s.issue] = head
			d.exported = append(d.exported, s.issue)
		}
		if s.kind == unreadable {
			gh.UnreadablePRs(s.branch())
		}
	}
	d.sb.Export.Fail(503, -1)
	d.exportDown = true
	d.logf("sandbox", "GitHub: open PRs %s; GitHub cannot list the PRs of queen-9124", strings.Join(withPR, ", "))
	d.logf("sandbox", "export: holds the accepted heads of queen-9130, queen-9131, queen-9132, and is DOWN (503)")
	return nil
}

// exportBack ends the export's outage once every push has failed on it
// at least once, or after ExportDownFor.
func (d *run) exportBack() {
	if !d.exportDown {
		return
	}
	all := true
	for _, n := range d.exported {
		if o := d.obs[n]; o == nil || o.view.Export == nil || o.view.Export.State != "retrying" {
			all = false
		}
	}
	if all || time.Since(d.start) > ExportDownFor {
		d.sb.Export.Fail(0, 0)
		d.exportDown = false
		d.logf("sandbox", "export: back up")
	}
}

// writeRows writes the Queen's rows through the claims API.
func (d *run) writeRows() error {
	now := time.Now().UTC()
	for _, s := range scenarios {
		raw, err := json.Marshal(s.row(now, d.heads[s.issue]))
		if err != nil {
			return err
		}
		patch := map[string]json.RawMessage{}
		if err := json.Unmarshal(raw, &patch); err != nil {
			return err
		}
		c, err := d.api.Put(d.ctx, repo, s.issue, patch)
		if err != nil {
			return fmt.Errorf("PUT %s#%d: %w", repo, s.issue, err)
		}
		d.logf("queen", "PUT %s#%d (%s): %s", repo, s.issue, s.what, c.Outcome)
	}
	return nil
}

// play waits for the first sweep, closes the PRs (GitHub sends the
// webhooks) and waits for every expected outcome.
func (d *run) play() error {
	deadline := d.start.Add(d.o.Limit)
	firstSweep := func() bool {
		for _, s := range scenarios {
			if o := d.obs[s.issue]; (s.kind == openPR || s.kind == noPR) && (o == nil || o.prs == nil) {
				return false
			}
		}
		return true
	}
	if err := d.poll(deadline, firstSweep); err != nil {
		return d.failure(err)
	}
	// The sweep is the safety net: let the webhooks, not the next sweep,
	// decide the PRs closed now.
	if next := time.Now().Truncate(SweepInterval).Add(SweepInterval); time.Until(next) < 10*time.Second {
		d.logf("demo", "the next claim:sweep is due in %.0fs: waiting for it, so that the webhooks decide", time.Until(next).Seconds())
		id := schedule.SlotID(tasks.TypeSweep, next)
		err := d.poll(deadline, func() bool {
			info, err := d.insp.GetTaskInfo(tasks.Queue, id)
			return err == nil && info.State == asynq.TaskStateCompleted
		})
		if err != nil {
			return d.failure(err)
		}
	}
	for _, s := range scenarios {
		if !s.webhook() {
			continue
		}
		n := d.prOf[s.issue]
		del, err := d.sb.GitHub.ClosePR(repo, n, s.kind == merged)
		if err != nil {
			return err
		}
		o := d.obs[s.issue]
		o.delivery, o.sentAt = del.GUID, del.DeliveredAt
		how := "closed unmerged"
		if s.kind == merged {
			how = "merged"
		}
		d.logf("github", "PR #%d of %s %s: signed pull_request webhook %s answered %d", n, s.branch(), how,
			shortID(del.GUID), del.StatusCode)
	}
	return d.failure(d.poll(deadline, func() bool { return d.check() == nil }))
}

var errDeadline = errors.New("deadline")

// failure turns running out of time into the first expected outcome that
// did not happen.
func (d *run) failure(err error) error {
	if errors.Is(err, errDeadline) {
		if f := d.check(); f != nil {
			return f
		}
		return &Failed{Want: fmt.Sprintf("the first claim:sweep within %s", d.o.Limit)}
	}
	return err
}

// poll observes every row four times a second, logging what changed,
// until done holds or the deadline passes.
func (d *run) poll(deadline time.Time, done func() bool) error {
	for {
		if err := d.observe(); err != nil {
			return err
		}
		if done() {
			return nil
		}
		if time.Now().After(deadline) {
			return errDeadline
		}
		select {
		case <-d.ctx.Done():
			return d.ctx.Err()
		case err := <-d.firstExit():
			return fmt.Errorf("a component stopped: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// check is the first expected outcome that has not happened, or nil.
func (d *run) check() error {
	for _, s := range scenarios {
		o := d.obs[s.issue]
		if o == nil {
			return &Failed{Row: rowName(s.issue), What: s.what, Want: "observed"}
		}
		if ok, want := s.expect(*o, d.o.FlagsOn, d.heads[s.issue]); !ok {
			return &Failed{Row: rowName(s.issue), What: s.what, Want: want}
		}
	}
	retried := false
	for _, n := range d.exported {
		if st := d.obs[n].view.Export; st != nil && st.Attempts > 1 {
			retried = true
		}
	}
	if !retried {
		return &Failed{Want: "a push retried through the export's outage"}
	}
	return nil
}

func rowName(issue int64) string { return repo + "#" + itoa(issue) }

// observe reads every row through the claims API and GitHub's state from
// the sandbox, and logs what changed since the last look.
func (d *run) observe() error {
	prs := map[string][]string{}
	opened := map[string]int{}
	for _, p := range d.sb.GitHub.PRs(repo) {
		state := p.State
		if p.MergedAt != nil {
			state = "merged"
		}
		prs[p.HeadRef] = append(prs[p.HeadRef], fmt.Sprintf("#%d %s", p.Number, state))
		opened[p.HeadRef]++
	}
	for _, s := range scenarios {
		det, err := d.api.Get(d.ctx, repo, s.issue)
		if err != nil {
			return fmt.Errorf("claims API: %w", err)
		}
		prev := d.obs[s.issue]
		o := &observed{view: det.View, ghPRs: prs[s.branch()], prsOpened: opened[s.branch()],
			gitHead: d.sb.Git.Ref(s.branch())}
		if prev != nil {
			o.delivery, o.sentAt, o.waiting = prev.delivery, prev.sentAt, prev.waiting
		}
		o.prs, o.readBy = lastRead(det.History)
		if o.delivery != "" && o.waiting == "" && s.kind == unreadable {
			id := tasks.ReevaluateID(tasks.ReevaluatePayload{Repo: repo, Issue: s.issue, Delivery: o.delivery})
			if info, err := d.insp.GetTaskInfo(tasks.Queue, id); err == nil && info.State == asynq.TaskStateRetry {
				o.waiting = info.LastErr
			}
		}
		d.logChanges(s, prev, o)
		d.obs[s.issue] = o
	}
	d.exportBack()
	return nil
}

// lastRead is the newest recorded PR read in a row's history, newest first.
func lastRead(hist []ledger.Entry) (*dispatch.PRState, string) {
	for _, e := range hist {
		if e.Action != ledger.ActionPRs {
			continue
		}
		var in struct {
			PRs *dispatch.PRState `json:"prs"`
		}
		if json.Unmarshal(e.Inputs, &in) == nil && in.PRs != nil {
			return in.PRs, e.Source.Delivery
		}
	}
	return nil, ""
}

func (d *run) logChanges(s scenario, prev, o *observed) {
	row := rowName(s.issue)
	if prev == nil {
		prev = &observed{}
	}
	if o.prs != nil && (prev.prs == nil || prsText(prev.prs) != prsText(o.prs)) {
		by := "the sweep"
		if o.readBy != "" && o.readBy != "sweep" {
			by = "webhook " + shortID(o.readBy)
		}
		d.logf("worker", "%s: PRs read (after %s): %s; accept_claim %s", row, by, prsText(o.prs), deref(o.view.AcceptClaim))
	}
	if f := o.view.Freed; f != nil && prev.view.Freed == nil {
		d.logf("ledger", "%s FREED by %s%s: %s", row, f.Rule, d.after(o, f.At), f.Evidence)
	}
	if f := o.view.WouldFree; f != nil && prev.view.WouldFree == nil {
		d.logf("ledger", "%s would be freed by %s%s (shadow mode: kept): %s", row, f.Rule, d.after(o, f.At), f.Evidence)
	}
	if o.waiting != "" && prev.waiting == "" {
		d.logf("worker", "%s: its PR list could not be read: nothing decided, the re-evaluation retries (%s)", row, shorten(o.waiting, 72))
	}
	if st := o.view.Export; st != nil && (prev.view.Export == nil || prev.view.Export.State != st.State || prev.view.Export.Attempts != st.Attempts) {
		switch st.State {
		case "pr_opened":
			d.logf("export", "%s: pushed %s at %s to GitHub's git and opened PR #%d (attempt %d)", row, s.branch(),
				shortSHA(st.PushedHead), st.PRNumber, st.Attempts)
		default:
			d.logf("export", "%s: %s (attempt %d) %s", row, st.State, st.Attempts, orDash(st.LastError+st.Refusal))
		}
	}
}

// after says how long after the row's webhook a decision came.
func (d *run) after(o *observed, at time.Time) string {
	if o.delivery == "" {
		return ""
	}
	return fmt.Sprintf(" %.1fs after its webhook", at.Sub(o.sentAt).Seconds())
}

func prsText(p *dispatch.PRState) string {
	if !p.Read {
		return "unread"
	}
	if p.Open+p.Merged+p.ClosedUnmerged == 0 {
		return "no PR"
	}
	return fmt.Sprintf("open %d, merged %d, closed unmerged %d", p.Open, p.Merged, p.ClosedUnmerged)
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func shortID(guid string) string {
	if len(guid) > 8 {
		return guid[:8]
	}
	return guid
}

// table prints every row as it ended, with its expected outcome.
func (d *run) table() {
	fmt.Fprintln(d.o.Out)
	// A row's facts are one line, its scenario and outcome the next, so
	// the table fits 120 columns.
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	took := "WEBHOOK->FREE"
	if !d.o.FlagsOn {
		took = "WEBHOOK->WOULD_FREE"
	}
	fmt.Fprintf(tw, "ROW\tCLAIM\tLIVE\tSTAGE\tHELD\tEXPORT\tPR\t%s\n", took)
	notes := []string{"    SCENARIO: OUTCOME"}
	for _, s := range scenarios {
		o := d.obs[s.issue]
		if o == nil {
			continue
		}
		v := o.view
		exp := "-"
		if v.Export != nil {
			exp = v.Export.State
		}
		took := "-"
		for _, f := range []*dispatch.FreeRecord{v.Freed, v.WouldFree} {
			if f != nil && o.delivery != "" {
				took = fmt.Sprintf("%.1fs", f.At.Sub(o.sentAt).Seconds())
			}
		}
		ok, want := s.expect(*o, d.o.FlagsOn, d.heads[s.issue])
		outcome := "ok: " + want
		if !ok {
			outcome = "MISSED: want " + want
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\t%s\t%s\t%s\n", rowName(s.issue), v.Claim, v.Live, v.Stage,
			joinOrDash(v.HeldPaths), exp, joinOrDash(sorted(o.ghPRs)), took)
		notes = append(notes, "    "+s.what+": "+outcome)
	}
	_ = tw.Flush()
	for i, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		fmt.Fprintln(d.o.Out, l)
		if i < len(notes) {
			fmt.Fprintln(d.o.Out, notes[i])
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// keep leaves everything running and says how to look at it by hand: the
// export lines give queenctl (doctor, claims, explain, claims watch) all it
// reads, as they are.
func (d *run) keep() {
	fmt.Fprintf(d.o.Out, "\nStill running (Ctrl-C stops it). GitHub and the export are the local SANDBOX:\n"+
		"  claims API       %s\n"+
		"  webhook          %s\n"+
		"  worker metrics   %s/metrics\n"+
		"  GitHub (sandbox) %s   git %s\n"+
		"  export (sandbox) %s\n\n"+
		"In another shell, from this checkout:\n",
		d.apiURL, d.hookURL, d.workURL, d.sb.GitHub.URL(), d.sb.Git.CloneURL(), d.sb.Export.URL)
	for _, l := range d.exports() {
		fmt.Fprintln(d.o.Out, "  "+l)
	}
	fmt.Fprintf(d.o.Out, "\nTry:\n"+
		"  go run ./cmd/queenctl doctor\n"+
		"  go run ./cmd/queenctl claims list --repo %s\n"+
		"  go run ./cmd/queenctl explain %s#9120\n"+
		"  go run ./cmd/queenctl claims watch --repo %s\n"+
		"  curl -s -H \"Authorization: Bearer $QUEEN_API_TOKEN\" $QUEEN_API_URL/v1/repos/%s/claims/9120\n",
		repo, repo, repo, repo)
	<-d.ctx.Done()
}

// exports are shell lines setting what queenctl reads to this demo's
// parts; the App's key is written to a file of the demo's directory.
func (d *run) exports() []string {
	env := d.env("", "")
	delete(env, "GITHUB_WEBHOOK_SECRET")
	env["QUEEN_API_URL"] = d.apiURL
	key := filepath.Join(d.dir, "github-app-key.pem")
	if err := os.WriteFile(key, []byte(env["GITHUB_APP_PRIVATE_KEY"]), 0o600); err == nil {
		delete(env, "GITHUB_APP_PRIVATE_KEY")
		env["GITHUB_APP_PRIVATE_KEY_FILE"] = key
	}
	var out []string
	for _, k := range []string{"QUEEN_API_URL", "QUEEN_API_TOKEN", "QUEEN_REDIS_URL", "GITHUB_APP_ID",
		"GITHUB_APP_PRIVATE_KEY_FILE", "GITHUB_APP_PRIVATE_KEY", "GITHUB_API_URL", "GITHUB_GIT_URL",
		"QUEEN_EXPORT_URL", "QUEEN_EXPORT_TOKEN", "QUEEN_EXPORT_REPO"} {
		if v, ok := env[k]; ok {
			out = append(out, "export "+k+"="+shellQuote(v))
		}
	}
	return out
}

// shellQuote is s as one POSIX shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// tally counts the rows freed and the would_free recorded.
func (d *run) tally() (freed, wouldFree int) {
	for _, o := range d.obs {
		if o.view.Freed != nil {
			freed++
		}
		if o.view.WouldFree != nil {
			wouldFree++
		}
	}
	return freed, wouldFree
}
