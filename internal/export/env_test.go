package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/gittest"
	"github.com/queen-app/queen-app/internal/redact"
	"github.com/queen-app/queen-app/internal/testkit"
)

const (
	gitToken    = "ghs_gitTOKEN0123456789"
	exportToken = "exp_exportTOKEN0123456789"
)

// fakeGitHub reads branch heads from the real remote and keeps PRs and
// issues in memory, recording CreatePR calls.
type fakeGitHub struct {
	t      testing.TB
	remote *gittest.Remote

	mu       sync.Mutex
	prs      map[string]PRs
	prErr    error
	headErr  error
	issueErr error
	// onCreate runs in CreatePR, under the lock; an error it returns is CreatePR's.
	onCreate func(g *fakeGitHub) error
	closed   map[int64]bool
	titles   map[int64]string
	created  []NewPR
	nextPR   int
}

func (g *fakeGitHub) BranchHead(_ context.Context, repo, branch string) (string, error) {
	if repo != g.remote.Repo {
		return "", fmt.Errorf("no repo %s", repo)
	}
	g.mu.Lock()
	err := g.headErr
	g.mu.Unlock()
	if err != nil {
		return "", err
	}
	return g.remote.Ref(g.t, branch), nil
}

func (g *fakeGitHub) BranchPRs(_ context.Context, _, branch string) (PRs, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prErr != nil {
		return PRs{}, g.prErr
	}
	return g.prs[branch], nil
}

func (g *fakeGitHub) Issue(_ context.Context, _ string, n int64) (IssueInfo, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.issueErr != nil {
		return IssueInfo{}, g.issueErr
	}
	return IssueInfo{Open: !g.closed[n], Title: g.titles[n]}, nil
}

func (g *fakeGitHub) CreatePR(_ context.Context, _ string, pr NewPR) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.onCreate != nil {
		if err := g.onCreate(g); err != nil {
			return 0, err
		}
	}
	if p := g.prs[pr.Head]; p.Open > 0 {
		return 0, fmt.Errorf("422 validation failed: %w", ErrPRExists)
	}
	if g.remote.Ref(g.t, pr.Head) == "" {
		return 0, fmt.Errorf("422: head %s does not exist", pr.Head)
	}
	g.nextPR++
	n := 100 + g.nextPR
	g.created = append(g.created, pr)
	g.prs[pr.Head] = PRs{Open: 1, Numbers: []int{n}}
	return n, nil
}

// set changes the fake under its lock.
func (g *fakeGitHub) set(fn func(g *fakeGitHub)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(g)
}

func (g *fakeGitHub) createdPRs() []NewPR {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]NewPR(nil), g.created...)
}

// env is a remote standing in for GitHub's git, the export's checkout (a
// clone of the remote), the export API on it, and a publisher.
type env struct {
	remote *gittest.Remote
	work   *gittest.Work
	export *gittest.Export
	client *Client
	gh     *fakeGitHub
	pub    *Publisher
	cache  string
	logs   *testkit.Buffer
}

func newEnv(t testing.TB) *env {
	t.Helper()
	remote := gittest.NewRemote(t, gitToken)
	work := remote.Clone(t)
	exp := gittest.NewExport(t, exportToken, work)
	client, err := NewClient(exp.URL, exportToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	client.Backoff, client.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
	gh := &fakeGitHub{t: t, remote: remote, prs: map[string]PRs{}, closed: map[int64]bool{}, titles: map[int64]string{}}
	cache := t.TempDir()
	logs := &testkit.Buffer{}
	e := &env{remote: remote, work: work, export: exp, client: client, gh: gh, cache: cache, logs: logs}
	e.pub = &Publisher{
		GitHub: gh,
		Export: client,
		Git:    NewGit(cache, remote.URL),
		Token:  func(context.Context, string) (string, error) { return gitToken, nil },
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}
	return e
}

// branch makes the export's queen-<issue> with one commit per file set,
// starting from origin/master, and returns its head.
func (e *env) branch(t testing.TB, issue int64, commits ...map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("queen-%d", issue)
	e.work.Branch(t, name, "origin/master")
	var head string
	for i, files := range commits {
		head = e.work.Commit(t, name, files, fmt.Sprintf("bee work %d on #%d", i+1, issue))
	}
	return head
}

func (e *env) job(issue int64, judged string, owned ...string) Job {
	return Job{Repo: e.remote.Repo, Issue: issue, Verdict: "accept", JudgedHead: judged, OwnedPaths: owned}
}

// cloned reports whether the publisher made its cached clone of the
// repository: any git work at all does.
func (e *env) cloned(t testing.TB) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(e.cache, filepath.FromSlash(e.remote.Repo)+".git"))
	return err == nil
}

// importRefs lists the private refs left in the cache for repo.
func (e *env) importRefs(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(e.cache, filepath.FromSlash(e.remote.Repo)+".git")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return "" // never cloned: nothing can be left
	}
	cmd := exec.Command("git", "--git-dir="+dir, "for-each-ref", "refs/queen-import/")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("for-each-ref in the cache: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func mustRetryable(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("want a retryable error, got none")
	}
	if !IsRetryable(err) {
		t.Fatalf("want a retryable error, got %v", err)
	}
}

var errUnread = errors.New("502 from GitHub")

// leak is the longest start or end (at least redact.MinPart long) of a
// secret that s holds, or "": what a copy cut before it was scrubbed leaves.
func leak(s string, secrets ...string) string {
	for _, sec := range secrets {
		for n := len(sec); n >= redact.MinPart; n-- {
			if strings.Contains(s, sec[:n]) {
				return sec[:n]
			}
			if strings.Contains(s, sec[len(sec)-n:]) {
				return sec[len(sec)-n:]
			}
		}
	}
	return ""
}
