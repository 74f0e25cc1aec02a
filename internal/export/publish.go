package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
)

// GitHub is what the publisher reads from and writes to GitHub. An error
// from a read means unknown: the publisher decides nothing on it.
type GitHub interface {
	// BranchHead is the commit at refs/heads/branch, "" when there is no such branch.
	BranchHead(ctx context.Context, repo, branch string) (string, error)
	// BranchPRs counts the pull requests whose head is branch of repo itself, in every state.
	BranchPRs(ctx context.Context, repo, branch string) (PRs, error)
	// Issue reads whether the issue is open, and its title.
	Issue(ctx context.Context, repo string, number int64) (IssueInfo, error)
	// CreatePR opens a pull request, never arming auto-merge. When GitHub
	// answers that one already exists it returns an error wrapping
	// ErrPRExists; when GitHub refuses it for good (an answer the same
	// request will get again until the branch changes), a *Refusal of kind
	// KindPRRefused with GitHub's words.
	CreatePR(ctx context.Context, repo string, pr NewPR) (int, error)
}

// IssueInfo is the state of an issue on GitHub.
type IssueInfo struct {
	Open  bool
	Title string
}

// NewPR is a pull request to open.
type NewPR struct {
	Base  string
	Head  string
	Title string
	Body  string
}

// Exporter serves bundles; *Client is one.
type Exporter interface {
	Bundle(ctx context.Context, issue int64) (*Bundle, error)
}

// Job is one accepted row to publish.
type Job struct {
	Repo       string // owner/name
	Issue      int64
	Verdict    string // review_state
	JudgedHead string
	OwnedPaths []string
}

// JobOf is the job of a dispatch row.
func JobOf(r *dispatch.Row) Job {
	j := Job{Repo: r.Repo, Issue: r.Issue, Verdict: r.ReviewWord(), OwnedPaths: r.OwnedPaths}
	if r.JudgedHead != nil {
		j.JudgedHead = *r.JudgedHead
	}
	return j
}

// Branch is the job's branch.
func (j Job) Branch() string { return dispatch.BranchOf(j.Issue) }

// State is where a job ended.
type State string

// States of an Outcome. already, pushed and superseded are final only when
// Push also returned an error (the PR could not be opened yet); the caller
// then records the error's state, keeping PushedHead.
const (
	StateAlready    State = "already"    // the branch was at the judged head
	StatePushed     State = "pushed"     // fast-forwarded to the judged head
	StateSuperseded State = "superseded" // an older attempt tagged and replaced
	StatePROpened   State = "pr_opened"  // branch at the judged head and its PR open
	StateHasPR      State = "has_pr"     // a PR already existed: nothing to do
	StateRefused    State = "refused"    // a permanent refusal, see Refusal
	StateDryRun     State = "dry_run"    // decided, nothing pushed or opened; see Would
)

// Outcome is what Push did or decided for one job.
type Outcome struct {
	State      State
	Push       State    // already, pushed or superseded: what happened to the branch
	Head       string   // the head published (or that would be)
	PushedHead string   // set when this call moved the branch
	PRNumber   int      // the PR opened or found
	Refusal    *Refusal // set for refused and has_pr
	Superseded string   // the replaced remote tip, kept as Tag
	Tag        string
	Would      string // dry run: "push", "supersede", "open_pr" or ""
}

// Record writes the outcome onto the row's export state; the caller counts attempts.
func (o Outcome) Record(s *dispatch.ExportState) {
	s.State = string(o.State)
	if o.PushedHead != "" {
		s.PushedHead = o.PushedHead
	}
	if o.PRNumber != 0 {
		s.PRNumber = o.PRNumber
	}
	s.Refusal = ""
	if o.Refusal != nil {
		s.Refusal = o.Refusal.Kind + ": " + o.Refusal.Reason
	}
}

// Publisher pushes accepted heads from the export to GitHub and opens their PRs.
type Publisher struct {
	GitHub GitHub
	Export Exporter
	Git    *Git
	// Token returns the installation token for repo's git over HTTPS; nil
	// sends none.
	Token  func(ctx context.Context, repo string) (string, error)
	Base   string // PR base and the branch checks diff against; "" is master
	DryRun bool
	Logger *slog.Logger
}

// Push publishes one job: it reads the branch on GitHub, imports the
// export's bundle unless the branch is already at the judged head, applies
// the refusals in the publisher's order, pushes as a fast-forward or
// supersedes an older attempt, and opens the PR.
//
// A refusal is an Outcome with State refused (or has_pr), not an error. An
// error means nothing was decided: IsRetryable says whether to try again;
// the Outcome then still says what was done before it (a push whose PR
// could not be opened yet).
func (p *Publisher) Push(ctx context.Context, job Job) (Outcome, error) {
	if !ghrepo.Valid(job.Repo) {
		return Outcome{}, fmt.Errorf("export job: repo %q is not owner/name", job.Repo)
	}
	if job.Issue <= 0 {
		return Outcome{}, fmt.Errorf("export job %s: issue %d is not positive", job.Repo, job.Issue)
	}
	branch := job.Branch()
	log := p.logger().With("repo", job.Repo, "issue", job.Issue, "branch", branch)

	// Every GitHub read comes before any git work: one that failed is an
	// outage and decides nothing, neither a refusal nor a push.
	remoteHead, err := p.GitHub.BranchHead(ctx, job.Repo, branch)
	if err != nil {
		return Outcome{}, readError("github BranchHead", err)
	}
	prs, err := p.GitHub.BranchPRs(ctx, job.Repo, branch)
	if err != nil {
		return Outcome{}, readError("github BranchPRs", err)
	}
	issue, err := p.GitHub.Issue(ctx, job.Repo, job.Issue)
	if err != nil {
		return Outcome{}, readError("github Issue", err)
	}
	f := Facts{PRs: prs, IssueOpen: issue.Open, Verdict: job.Verdict, JudgedHead: job.JudgedHead, OwnedPaths: job.OwnedPaths}
	if r := Check(f); r != nil {
		return p.refused(log, job, r, prs), nil
	}

	already := remoteHead != "" && remoteHead == job.JudgedHead
	var bundle *Bundle
	if !already {
		bundle, err = p.Export.Bundle(ctx, job.Issue)
		switch {
		case errors.Is(err, ErrNoBundle):
			return p.refused(log, job, &Refusal{KindNoBundle, "the export has no bundle for " + branch}, prs), nil
		case errors.Is(err, ErrNothingAhead):
			return p.refused(log, job, &Refusal{KindNoCommits, "the export has nothing ahead of its base"}, prs), nil
		case err != nil:
			return Outcome{}, err
		}
	}

	var token string
	if p.Token != nil {
		if token, err = p.Token(ctx, job.Repo); err != nil {
			return Outcome{}, readError("installation token", err)
		}
	}
	out, err := p.gitWork(ctx, job, token, remoteHead, already, bundle, &f)
	if err != nil || out.State == StateRefused || out.State == StateDryRun {
		if out.Refusal != nil {
			log.Info("export refused", "kind", out.Refusal.Kind, "reason", out.Refusal.Reason)
		}
		return out, err
	}
	if out.PushedHead != "" {
		log.Info("export pushed", "state", out.Push, "head", out.PushedHead, "superseded", out.Superseded)
	}
	n, ref, err := p.openPR(ctx, job, issue.Title, out.Head, bundle)
	if err != nil {
		return out, err
	}
	if ref != nil {
		// The branch stays as pushed; the row is refused, not left pushed
		// for every sweep to spend a PR creation on.
		out.State, out.Refusal = StateRefused, ref
		log.Info("export refused", "kind", ref.Kind, "reason", ref.Reason)
		return out, nil
	}
	out.State, out.PRNumber = StatePROpened, n
	log.Info("export PR opened", "pr", n, "head", out.Head)
	return out, nil
}

// gitWork is the part under the repository's lock: base fetch, import,
// checks on the real diff, push.
func (p *Publisher) gitWork(ctx context.Context, job Job, token, remoteHead string, already bool, bundle *Bundle, f *Facts) (Outcome, error) {
	branch := job.Branch()
	base := p.base()
	r, release, err := p.Git.open(ctx, job.Repo, token)
	if err != nil {
		return Outcome{}, err
	}
	defer func() {
		if err := release(); err != nil {
			// The task's outcome stands; the next task collects again.
			p.logger().Warn("export cache not collected", "repo", job.Repo, "err", err)
		}
	}()
	baseRef := "refs/remotes/origin/" + base
	if err := r.fetch(ctx, "+refs/heads/"+base+":"+baseRef); err != nil {
		return Outcome{}, err
	}
	var head string
	if already {
		if err := r.fetch(ctx, "+refs/heads/"+branch+":"+r.ref(branch)); err != nil {
			return Outcome{}, err
		}
		if head, err = r.revParse(ctx, r.ref(branch)); err != nil {
			return Outcome{}, err
		}
		if head != remoteHead {
			return Outcome{}, &Error{Op: "git fetch", Retryable: true,
				Err: fmt.Errorf("%s moved from %s to %s while being read", branch, short(remoteHead), short(head))}
		}
	} else {
		var ref *Refusal
		head, ref, err = r.importBundle(ctx, bundle.Data, branch)
		if err != nil {
			return Outcome{}, err
		}
		if ref != nil {
			return Outcome{State: StateRefused, Refusal: ref}, nil
		}
	}
	f.Head = head
	if f.Diff, err = r.diff(ctx, baseRef, head); err != nil {
		return Outcome{}, err
	}
	if ref := Check(*f); ref != nil {
		return Outcome{State: StateRefused, Refusal: ref, Head: head}, nil
	}

	out := Outcome{Head: head}
	if already {
		out.State, out.Push = StateAlready, StateAlready
		if p.DryRun {
			out.State, out.Would = StateDryRun, "open_pr"
		}
		return out, nil
	}
	if p.DryRun {
		return p.dryRun(ctx, r, job, remoteHead, head, f)
	}

	res, err := r.push(ctx, r.ref(branch)+":refs/heads/"+branch)
	if err != nil {
		return Outcome{}, err
	}
	if res.ok {
		out.State, out.Push, out.PushedHead = StatePushed, StatePushed, head
		return out, nil
	}
	if !isNotFastForward(res.reason) {
		// The remote declined the push (a protected branch, a hook): not an
		// outage to wait out, a failure to record and back off from.
		return Outcome{}, &Error{Op: "git push", Err: fmt.Errorf("%s: the remote declined the push: %s", branch, res.reason)}
	}
	return p.supersede(ctx, r, job, head, f)
}

// supersede replaces a remote tip that is not an ancestor of head, when
// MaySupersede allows it: the old tip is kept as a tag first and the branch
// is replaced under a lease on the exact tip read.
func (p *Publisher) supersede(ctx context.Context, r *repo, job Job, head string, f *Facts) (Outcome, error) {
	branch := job.Branch()
	tip, ok, reason, err := p.mayReplace(ctx, r, job, head, f)
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		return Outcome{State: StateRefused, Head: head,
			Refusal: &Refusal{KindNotFastForward, fmt.Sprintf("%s is at %s, not an ancestor of %s: %s", branch, short(tip), short(head), reason)}}, nil
	}
	tag := "refs/tags/queen-superseded/" + strconv.FormatInt(job.Issue, 10) + "/" + short(tip)
	res, err := r.push(ctx, tip+":"+tag)
	if err != nil {
		return Outcome{}, err
	}
	if !res.ok && !alreadyExists(res.reason) {
		// Without the tag the branch is the only copy of that work: never
		// replace it. A remote that declines the tag will not change its
		// mind on a retry; a person has to look.
		return Outcome{}, &Error{Op: "git push", Err: fmt.Errorf("keeping %s as %s: %s", short(tip), tag, res.reason)}
	}
	res, err = r.push(ctx, r.ref(branch)+":refs/heads/"+branch, "--force-with-lease=refs/heads/"+branch+":"+tip)
	if err != nil {
		return Outcome{}, err
	}
	if !res.ok {
		return Outcome{}, &Error{Op: "git push", Retryable: true,
			Err: fmt.Errorf("%s: lease on %s refused (%s): %w", branch, short(tip), res.reason, ErrLeaseLost)}
	}
	return Outcome{State: StateSuperseded, Push: StateSuperseded, Head: head, PushedHead: head, Superseded: tip, Tag: tag}, nil
}

// mayReplace fetches the remote tip and applies MaySupersede to it.
func (p *Publisher) mayReplace(ctx context.Context, r *repo, job Job, head string, f *Facts) (tip string, ok bool, reason string, err error) {
	tipRef := r.ref("tip")
	if err = r.fetch(ctx, "+refs/heads/"+job.Branch()+":"+tipRef); err != nil {
		return "", false, "", err
	}
	if tip, err = r.revParse(ctx, tipRef); err != nil {
		return "", false, "", err
	}
	headTime, err := r.commitTime(ctx, head)
	if err != nil {
		return "", false, "", err
	}
	tipTime, err := r.commitTime(ctx, tip)
	if err != nil {
		return "", false, "", err
	}
	accepted := acceptedAt(f.Verdict, f.JudgedHead, head) == nil
	ok, reason = MaySupersede(accepted, f.PRs, headTime, tipTime)
	return tip, ok, reason, nil
}

// dryRun answers what a real run would do, from the clone alone.
func (p *Publisher) dryRun(ctx context.Context, r *repo, job Job, remoteHead, head string, f *Facts) (Outcome, error) {
	out := Outcome{State: StateDryRun, Head: head, Would: "push"}
	if remoteHead == "" {
		return out, nil
	}
	tip, ok, reason, err := p.mayReplace(ctx, r, job, head, f)
	if err != nil {
		return Outcome{}, err
	}
	_, err = r.git(ctx, false, "merge-base", "--is-ancestor", tip, head)
	if err == nil {
		return out, nil
	}
	if !notAncestor(err) {
		return Outcome{}, err // no answer from git: decides nothing
	}
	if !ok {
		return Outcome{State: StateRefused, Head: head,
			Refusal: &Refusal{KindNotFastForward, fmt.Sprintf("%s is at %s, not an ancestor of %s: %s", job.Branch(), short(tip), short(head), reason)}}, nil
	}
	out.Would, out.Superseded = "supersede", tip
	return out, nil
}

// openPR opens the branch's PR: its number, or GitHub's lasting refusal.
func (p *Publisher) openPR(ctx context.Context, job Job, title, head string, bundle *Bundle) (int, *Refusal, error) {
	body := fmt.Sprintf("Closes #%d\n\nPublished by queen-app from the Queen's export: branch %s at %s, the head the Queen accepted.",
		job.Issue, job.Branch(), head)
	if bundle != nil && bundle.Base != "" {
		body += fmt.Sprintf(" The export built it on %s.", bundle.Base)
	}
	body += "\n"
	pr := NewPR{Base: p.base(), Head: job.Branch(), Title: Title(title, job.Issue), Body: body}
	n, err := p.GitHub.CreatePR(ctx, job.Repo, pr)
	var ref *Refusal
	switch {
	case errors.Is(err, ErrPRExists):
		n, err = p.existingPR(ctx, job)
		return n, nil, err
	case errors.As(err, &ref) && ref.Kind == KindPRRefused:
		return 0, ref, nil
	case err != nil:
		return 0, nil, readError("github CreatePR", err)
	}
	return n, nil, nil
}

// existingPR is the number of the open PR GitHub says the branch has. A
// list that failed, or that shows none open yet (GitHub's lists lag its
// writes), is an outage: the PR's number is never guessed.
func (p *Publisher) existingPR(ctx context.Context, job Job) (int, error) {
	prs, err := p.GitHub.BranchPRs(ctx, job.Repo, job.Branch())
	if err != nil {
		return 0, readError("github BranchPRs", err)
	}
	if prs.Open == 0 || len(prs.Numbers) == 0 {
		return 0, &Error{Op: "github BranchPRs", Retryable: true,
			Err: fmt.Errorf("GitHub says %s has a pull request, but none is listed open yet", job.Branch())}
	}
	// Before CreatePR the branch had none: the newest is the one opened meanwhile.
	return slices.Max(prs.Numbers), nil
}

func (p *Publisher) refused(log *slog.Logger, job Job, r *Refusal, prs PRs) Outcome {
	if r.Kind == KindHasPR {
		out := Outcome{State: StateHasPR, Refusal: r}
		// The PR that stopped the push, never an earlier attempt's.
		if mine := (dispatch.Attempt{JudgedHead: job.JudgedHead}).Publishing(prs); len(mine.Numbers) > 0 {
			out.PRNumber = mine.Numbers[0]
		}
		log.Info("export has PR", "pr", out.PRNumber)
		return out
	}
	log.Info("export refused", "kind", r.Kind, "reason", r.Reason)
	return Outcome{State: StateRefused, Refusal: r}
}

func (p *Publisher) base() string {
	if p.Base == "" {
		return "master"
	}
	return p.Base
}

func (p *Publisher) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}

// readError wraps a failed GitHub read or write: retryable unless the
// implementation already said otherwise.
func readError(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, Retryable: true, Err: err}
}

func alreadyExists(reason string) bool {
	return strings.Contains(reason, "already exists") || strings.Contains(reason, "up to date")
}
