// Package gittest serves real git repositories over smart HTTP (git
// http-backend behind a token check) and a fake of the Queen's export API
// built on real bundles, for tests of code that fetches and pushes.
package gittest

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Epoch is the committer time of the first commit a Work makes; each
// further commit is one minute later unless CommitAt names its time.
var Epoch = time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)

// Work is a non-bare repository to make commits in.
type Work struct {
	Dir string

	mu    sync.Mutex
	clock time.Time
	env   []string
}

// NewWork is an empty repository whose master has one commit.
func NewWork(t testing.TB) *Work {
	t.Helper()
	w := newWork(t, t.TempDir())
	w.Git(t, "init", "--quiet", "--initial-branch=master")
	w.Commit(t, "master", map[string]string{"README.md": "# test\n"}, "Initial commit")
	return w
}

func newWork(t testing.TB, dir string) *Work {
	home := t.TempDir()
	return &Work{
		Dir:   dir,
		clock: Epoch,
		env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"LC_ALL=C",
			"GIT_TERMINAL_PROMPT=0",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=Bee",
			"GIT_AUTHOR_EMAIL=bee@example.com",
			"GIT_COMMITTER_NAME=Bee",
			"GIT_COMMITTER_EMAIL=bee@example.com",
		},
	}
}

// Git runs git in the work tree and returns its trimmed stdout; a failure
// fails the test.
func (w *Work) Git(t testing.TB, args ...string) string {
	t.Helper()
	out, err := w.TryGit(args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TryGit runs git and returns its error with stderr.
func (w *Work) TryGit(args ...string) (string, error) {
	return runGit(w.Dir, w.env, args...)
}

func runGit(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", &gitErr{err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return strings.TrimSpace(stdout.String()), nil
}

type gitErr struct {
	err    error
	stderr string
}

func (e *gitErr) Error() string { return e.err.Error() + ": " + e.stderr }

// Branch points branch at from (a ref or commit), creating or moving it.
func (w *Work) Branch(t testing.TB, branch, from string) {
	t.Helper()
	w.Git(t, "branch", "--force", branch, from)
}

// Commit writes files on branch (created from HEAD when missing) and
// commits them; an empty content deletes the file. It returns the commit.
func (w *Work) Commit(t testing.TB, branch string, files map[string]string, msg string) string {
	t.Helper()
	w.mu.Lock()
	when := w.clock
	w.clock = w.clock.Add(time.Minute)
	w.mu.Unlock()
	return w.CommitAt(t, branch, files, msg, when)
}

// CommitAt is Commit with the author and committer time when.
func (w *Work) CommitAt(t testing.TB, branch string, files map[string]string, msg string, when time.Time) string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if when.After(w.clock) {
		w.clock = when.Add(time.Minute)
	}
	if _, err := w.TryGit("rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err != nil {
		if _, err := w.TryGit("rev-parse", "--verify", "--quiet", "HEAD"); err != nil {
			w.Git(t, "checkout", "--quiet", "--orphan", branch)
		} else {
			w.Git(t, "checkout", "--quiet", "-b", branch)
		}
	} else {
		w.Git(t, "checkout", "--quiet", branch)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(w.Dir, filepath.FromSlash(name))
		if files[name] == "" {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.Git(t, "add", "--all")
	date := when.UTC().Format(time.RFC3339)
	cmd := []string{"-c", "commit.gpgsign=false", "commit", "--quiet", "--allow-empty", "-m", msg}
	env := append(append([]string(nil), w.env...), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	if _, err := runGit(w.Dir, env, cmd...); err != nil {
		t.Fatalf("git commit on %s: %v", branch, err)
	}
	return w.Git(t, "rev-parse", "HEAD")
}

// Rev is the commit ref names, "" when it names none.
func (w *Work) Rev(t testing.TB, ref string) string {
	t.Helper()
	out, err := w.TryGit("rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

// Push pushes refspecs to origin and fails the test when git refuses.
func (w *Work) Push(t testing.TB, refspecs ...string) {
	t.Helper()
	w.Git(t, append([]string{"push", "--quiet", "origin"}, refspecs...)...)
}

// basicAuth is the value of an Authorization header git sends for token.
func basicAuth(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}
