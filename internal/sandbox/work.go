package sandbox

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Epoch is the committer time of the first commit a Work makes; each
// further commit is one minute later unless CommitAt names its time, so
// the same scenario makes the same commits.
var Epoch = time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)

// Work is a non-bare repository to make commits in.
type Work struct {
	Dir string

	mu    sync.Mutex
	clock time.Time
	env   []string
}

// OpenWork is a Work over the directory dir (created when missing), with
// no repository made yet: InitWork and Remote.Clone make one.
func OpenWork(dir string) (*Work, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Work{Dir: dir, clock: Epoch, env: gitEnv()}, nil
}

// InitWork is a new repository in dir whose master has one commit.
func InitWork(dir string) (*Work, error) {
	w, err := OpenWork(dir)
	if err != nil {
		return nil, err
	}
	if _, err := w.Git("init", "--quiet", "--initial-branch=master"); err != nil {
		return nil, err
	}
	if _, err := w.Commit("master", map[string]string{"README.md": "# test\n"}, "Initial commit"); err != nil {
		return nil, err
	}
	return w, nil
}

// gitEnv is the whole environment of every git the sandbox runs: no user
// or system configuration, no prompt, a fixed identity.
func gitEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		// HOME names no directory, so git finds no user ignore or
		// attributes file; GIT_CONFIG_GLOBAL covers the configuration.
		"HOME=" + os.DevNull,
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_AUTHOR_NAME=Bee",
		"GIT_AUTHOR_EMAIL=bee@example.com",
		"GIT_COMMITTER_NAME=Bee",
		"GIT_COMMITTER_EMAIL=bee@example.com",
	}
}

// Git runs git in the work tree and returns its trimmed stdout; an error
// carries git's stderr.
func (w *Work) Git(args ...string) (string, error) {
	return runGit(w.Dir, w.env, args...)
}

func runGit(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", &GitError{Args: args, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return strings.TrimSpace(stdout.String()), nil
}

// GitError is a git command that failed.
type GitError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *GitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}

// Branch points branch at from (a ref or commit), creating or moving it.
func (w *Work) Branch(branch, from string) error {
	_, err := w.Git("branch", "--force", branch, from)
	return err
}

// Commit writes files on branch (created from HEAD when missing) and
// commits them; an empty content deletes the file. It returns the commit.
func (w *Work) Commit(branch string, files map[string]string, msg string) (string, error) {
	w.mu.Lock()
	when := w.clock
	w.clock = w.clock.Add(time.Minute)
	w.mu.Unlock()
	return w.CommitAt(branch, files, msg, when)
}

// CommitAt is Commit with the author and committer time when.
func (w *Work) CommitAt(branch string, files map[string]string, msg string, when time.Time) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if when.After(w.clock) {
		w.clock = when.Add(time.Minute)
	}
	var err error
	if _, e := w.Git("rev-parse", "--verify", "--quiet", "refs/heads/"+branch); e != nil {
		if _, e := w.Git("rev-parse", "--verify", "--quiet", "HEAD"); e != nil {
			_, err = w.Git("checkout", "--quiet", "--orphan", branch)
		} else {
			_, err = w.Git("checkout", "--quiet", "-b", branch)
		}
	} else {
		_, err = w.Git("checkout", "--quiet", branch)
	}
	if err != nil {
		return "", err
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
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			return "", err
		}
	}
	if _, err := w.Git("add", "--all"); err != nil {
		return "", err
	}
	date := when.UTC().Format(time.RFC3339)
	env := append(append([]string(nil), w.env...), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	if _, err := runGit(w.Dir, env, "-c", "commit.gpgsign=false", "commit", "--quiet", "--allow-empty", "-m", msg); err != nil {
		return "", err
	}
	return w.Git("rev-parse", "HEAD")
}

// Rev is the commit ref names, "" when it names none.
func (w *Work) Rev(ref string) string {
	out, err := w.Git("rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

// Push pushes refspecs to origin.
func (w *Work) Push(refspecs ...string) error {
	_, err := w.Git(append([]string{"push", "--quiet", "origin"}, refspecs...)...)
	return err
}

// BasicAuth is the Authorization header git sends for token, as GitHub's
// git takes an installation token: user x-access-token, the token as the
// password.
func BasicAuth(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}
