package export

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queen-app/queen-app/internal/dispatch"
)

// Refusal kinds. The first eight are the publisher's checks in its order
// (docs/export.md); the rest are decided while importing or pushing.
const (
	KindHasPR          = "has-pr" // not a refusal: the branch already has a PR
	KindIssueNotOpen   = "issue-not-open"
	KindNotAccepted    = "not-accepted"
	KindNoCommits      = "no-commits"
	KindWorkflow       = "workflow"
	KindTooLarge       = "too-large"
	KindConflicts      = "conflicts"
	KindBoundary       = "boundary"
	KindNoBundle       = "no-bundle"
	KindBadBundle      = "bad-bundle"
	KindNotFastForward = "not-fast-forward"
	KindPRRefused      = "pr-refused" // GitHub refused the PR for good; its words
)

// Limits of a publishable branch.
const (
	MaxCommits = 20
	MaxFiles   = 25
)

// Refusal is a permanent decision not to publish, with its kind and reason.
type Refusal struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

func (r *Refusal) Error() string { return "refused (" + r.Kind + "): " + r.Reason }

// PRs is a read of the pull requests whose head is the branch, in every
// state, from githubapp.Summarize: the PRs listed with their heads, and
// counted. Check counts them for the judged head (dispatch.Attempt).
type PRs = dispatch.PRState

// Facts are what the checks read. The GitHub facts are read before any
// check runs (a read that failed is an outage, never a Facts); the git
// facts come in stages: a check whose input is not known yet passes, so
// Check can run after each stage and answer the first refusal in order.
type Facts struct {
	PRs        PRs
	IssueOpen  bool
	Verdict    string
	JudgedHead string
	Head       string // the head to publish; "" until imported
	Diff       *Diff  // nil until read from git
	OwnedPaths []string
}

// Diff is the branch against the base.
type Diff struct {
	Commits  int      // rev-list --count base..head
	Files    []string // diff --name-only base...head
	Conflict string   // non-empty: merge-tree found conflicts; what it said
}

// Check answers the first refusal in the publisher's order, or nil: a PR
// of the attempt (open, or at the judged head in any state), the issue not
// open, the accepted-head gate, no commits or no diff, a workflow path, too
// large, conflicts with the base, a write outside the Boundary.
//
// A closed or merged PR at another head (an earlier attempt's, as on a
// re-dispatched issue) neither stops the push nor is reopened: the attempt
// gets a PR of its own. A read that does not list its PRs (no heads known)
// counts every PR, as any could be the attempt's.
func Check(f Facts) *Refusal {
	if p := (dispatch.Attempt{JudgedHead: f.JudgedHead}).Publishing(f.PRs); p.Any() {
		return &Refusal{KindHasPR, fmt.Sprintf("the branch already has a pull request (%s)", prList(p))}
	}
	if !f.IssueOpen {
		return &Refusal{KindIssueNotOpen, "the issue is not open"}
	}
	if r := acceptedAt(f.Verdict, f.JudgedHead, f.Head); r != nil {
		return r
	}
	d := f.Diff
	if d == nil {
		return nil
	}
	if d.Commits <= 0 {
		return &Refusal{KindNoCommits, "no commits ahead of the base"}
	}
	if len(d.Files) == 0 {
		return &Refusal{KindNoCommits, "no diff against the base"}
	}
	for _, p := range d.Files {
		if strings.HasPrefix(p, ".github/workflows/") {
			return &Refusal{KindWorkflow, "changes " + p + ": workflows move the census and the gate ledger, so a person publishes them"}
		}
	}
	if d.Commits > MaxCommits || len(d.Files) > MaxFiles {
		return &Refusal{KindTooLarge, fmt.Sprintf("%d commits and %d files; at most %d and %d", d.Commits, len(d.Files), MaxCommits, MaxFiles)}
	}
	if d.Conflict != "" {
		return &Refusal{KindConflicts, "conflicts with the base: " + d.Conflict}
	}
	if strays := Strays(f.OwnedPaths, d.Files); len(strays) > 0 {
		shown := strays
		if len(shown) > 3 {
			shown = shown[:3]
		}
		return &Refusal{KindBoundary, fmt.Sprintf("wrote outside its boundary: %s (%d in all)", strings.Join(shown, ", "), len(strays))}
	}
	return nil
}

func acceptedAt(verdict, judged, head string) *Refusal {
	switch {
	case verdict == "":
		return &Refusal{KindNotAccepted, "the Queen has no verdict on it"}
	case verdict != "accept":
		return &Refusal{KindNotAccepted, "the Queen's verdict is " + verdict}
	case !dispatch.ValidHead(judged):
		return &Refusal{KindNotAccepted, "accepted, but the row names no head it was judged at"}
	case head != "" && head != judged:
		return &Refusal{KindNotAccepted, fmt.Sprintf("accepted at %s, but the export has %s", short(judged), short(head))}
	}
	return nil
}

func prList(p PRs) string {
	var parts []string
	for _, n := range p.Numbers {
		parts = append(parts, "#"+strconv.Itoa(n))
	}
	s := fmt.Sprintf("%d open, %d merged, %d closed", p.Open, p.Merged, p.ClosedUnmerged)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// short is the first 12 characters of a commit id.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// NormalizePath strips leading "./" and "/" and trailing "/" the way the
// Queen's Boundary parser does (docs/export.md).
func NormalizePath(p string) string {
	for {
		switch {
		case strings.HasPrefix(p, "./"):
			p = p[2:]
		case strings.HasPrefix(p, "/"):
			p = p[1:]
		default:
			return strings.TrimRight(p, "/")
		}
	}
}

// Contains reports whether owned holds path by path component:
// "rings/SR-00" holds "rings/SR-00/Foo.swift" but "docs" does not hold
// "docsite/x".
func Contains(owned, path string) bool {
	owned, path = NormalizePath(owned), NormalizePath(path)
	if owned == "" {
		return false
	}
	return path == owned || strings.HasPrefix(path, owned+"/")
}

// Strays are the files held by no path of owned. Empty owned (or only empty
// entries) means the row has no Boundary and nothing is checked.
func Strays(owned, files []string) []string {
	var paths []string
	for _, o := range owned {
		if NormalizePath(o) != "" {
			paths = append(paths, o)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	var out []string
next:
	for _, f := range files {
		for _, o := range paths {
			if Contains(o, f) {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

// MaxTitle is the longest PR title, in characters.
const MaxTitle = 120

// Title is the PR title: the issue title trimmed and cut to 120
// characters, or "Work on #N" when it is empty.
func Title(issueTitle string, issue int64) string {
	t := strings.Join(strings.Fields(issueTitle), " ")
	if t == "" {
		return "Work on #" + strconv.FormatInt(issue, 10)
	}
	if utf8.RuneCountInString(t) <= MaxTitle {
		return t
	}
	n := 0
	for i := range t {
		if n == MaxTitle {
			return strings.TrimSpace(t[:i])
		}
		n++
	}
	return t
}

// MaySupersede decides whether a remote tip that is not an ancestor of the
// exported head may be replaced (docs/export.md): the
// exported head is the accepted one, no PR is open and the exported commit
// is strictly newer than the remote tip. prs is a list that was read: an
// unread one never gets this far.
func MaySupersede(accepted bool, prs PRs, exportTime, tipTime int64) (bool, string) {
	switch {
	case !accepted:
		return false, "the exported head is not the accepted head"
	case prs.Open > 0:
		return false, "a pull request is open on the branch"
	case exportTime <= tipTime:
		return false, fmt.Sprintf("the remote tip (committed %d) is not older than the export (committed %d)", tipTime, exportTime)
	}
	return true, ""
}
