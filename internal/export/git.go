package export

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/redact"
)

// DefaultGitTimeout bounds one git command.
const DefaultGitTimeout = 5 * time.Minute

// Git runs the git CLI against cached bare clones, one per repository,
// under Dir. Commands see no system or global config, no hooks, no
// terminal prompt and no credential helper; the token reaches git through
// the environment, never argv. One Git is safe for concurrent use: work on
// one repository is serialized, different repositories run in parallel.
// A cache directory belongs to one process.
type Git struct {
	Dir     string        // cache root
	URL     string        // remote base: URL + "owner/name.git", e.g. https://github.com/
	Timeout time.Duration // one git command at most

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewGit caches clones under dir and reaches repositories under baseURL.
func NewGit(dir, baseURL string) *Git {
	return &Git{Dir: dir, URL: baseURL, Timeout: DefaultGitTimeout}
}

// RemoteURL is where repo ("owner/name") is fetched from and pushed to.
func (g *Git) RemoteURL(repo string) string {
	return strings.TrimRight(g.URL, "/") + "/" + repo + ".git"
}

func (g *Git) lock(repo string) func() {
	g.mu.Lock()
	if g.locks == nil {
		g.locks = make(map[string]*sync.Mutex)
	}
	m := g.locks[repo]
	if m == nil {
		m = new(sync.Mutex)
		g.locks[repo] = m
	}
	g.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// repo is one task's hold on a cached clone: its private ref namespace and
// the credential for the remote.
type repo struct {
	g      *Git
	dir    string
	url    string
	token  string
	header string // the Authorization header value, as secret as the token
	ns     string // refs/queen-import/<task>/
}

// open locks repo, creates its bare clone when missing, and returns the
// hold with a release that deletes the task's private refs and unlocks.
func (g *Git) open(ctx context.Context, name, token string) (*repo, func(), error) {
	// One clone and one lock per repository, whatever its spelling.
	unlock := g.lock(ghrepo.Key(name))
	dir := filepath.Join(g.Dir, filepath.FromSlash(ghrepo.Key(name))+".git")
	var id [8]byte
	_, _ = rand.Read(id[:])
	r := &repo{
		g: g, dir: dir, url: g.RemoteURL(name), token: token,
		header: "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token)),
		ns:     importNS + hex.EncodeToString(id[:]) + "/",
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			unlock()
			return nil, nil, &Error{Op: "git cache", Err: err}
		}
		if _, err := r.git(ctx, false, "init", "--bare", "--quiet"); err != nil {
			unlock()
			return nil, nil, err
		}
	}
	// Under the lock no other task of this process holds private refs here,
	// so any left are a killed process's: clear them.
	r.deleteRefs(ctx, importNS)
	release := func() {
		// A fresh context: a cancelled task still leaves no private ref behind.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.deleteRefs(cctx, r.ns)
		unlock()
	}
	return r, release, nil
}

// importNS holds every task's private refs.
const importNS = "refs/queen-import/"

func (r *repo) deleteRefs(ctx context.Context, prefix string) {
	out, err := r.git(ctx, false, "for-each-ref", "--format=delete %(refname)", prefix)
	if err != nil || strings.TrimSpace(out) == "" {
		return
	}
	_, _ = r.gitIn(ctx, false, out, "update-ref", "--stdin")
}

// gitError is a failed git command; exitCode is -1 when git did not exit.
type gitError struct {
	exitCode int
	stderr   string
	timedOut bool
}

func (e *gitError) Error() string {
	if e.timedOut {
		return "timed out"
	}
	if e.stderr == "" {
		return fmt.Sprintf("exit status %d", e.exitCode)
	}
	return e.stderr
}

func (r *repo) git(ctx context.Context, remote bool, args ...string) (string, error) {
	return r.gitIn(ctx, remote, "", args...)
}

// gitIn runs git in the clone with stdin. remote gives it the credential.
func (r *repo) gitIn(ctx context.Context, remote bool, stdin string, args ...string) (string, error) {
	out, _, err := r.run(ctx, remote, stdin, args...)
	return out, err
}

// run returns stdout and stderr; a failure is an *Error wrapping a
// *gitError, retryable, its text scrubbed of the credential.
func (r *repo) run(ctx context.Context, remote bool, stdin string, args ...string) (string, string, error) {
	timeout := r.g.Timeout
	if timeout <= 0 {
		timeout = DefaultGitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	full := append([]string{
		"-c", "core.hooksPath=/dev/null",
		"-c", "credential.helper=",
		"-c", "protocol.ext.allow=never",
		"-c", "gc.auto=0",
		"-c", "maintenance.auto=false",
		"-c", "core.askPass=",
	}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = r.dir
	cmd.Env = r.env(remote)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if err == nil && !remote {
		return stdout.String(), stderr.String(), nil
	}
	// What a remote answered, git prints: scrubbed whole, before any cut.
	outText, errText := r.scrub(stdout.String()), r.scrub(stderr.String())
	if err == nil {
		return outText, errText, nil
	}
	op := "git " + args[0]
	ge := &gitError{exitCode: -1, stderr: lastLines(errText)}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.exitCode = ee.ExitCode()
	}
	if ctx.Err() != nil {
		ge.timedOut = true
	}
	return outText, errText, &Error{Op: op, Retryable: true, Err: ge}
}

// scrub removes the credential from git's output: the token, the header
// carrying it and its base64, whole or cut, and any credential's shape.
func (r *repo) scrub(s string) string {
	return redact.String(s, r.token, r.header, strings.TrimPrefix(r.header, "Basic "))
}

// env is the whole environment of a git command: nothing inherited but
// PATH, so no user config, askpass or credential reaches it. The credential
// goes in as a URL-scoped http.extraHeader through GIT_CONFIG_* variables.
func (r *repo) env(remote bool) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + r.g.Dir,
		"LC_ALL=C",
		"LANG=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_DIR=" + r.dir,
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	if remote && r.token != "" {
		env = append(env,
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http."+r.url+".extraHeader",
			"GIT_CONFIG_VALUE_0=Authorization: "+r.header,
		)
	}
	return env
}

// maxGitText caps the end of git's stderr kept in an error.
const maxGitText = 400

// lastLines keeps the end of git's stderr, where the reason is, on one
// line. It cuts: give it text already scrubbed.
func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > maxGitText {
		i := len(out) - maxGitText
		for i < len(out) && !utf8.RuneStart(out[i]) {
			i++
		}
		out = out[i:]
	}
	return out
}

func (r *repo) ref(name string) string { return r.ns + name }

// fetch fetches refspecs from the remote.
func (r *repo) fetch(ctx context.Context, refspecs ...string) error {
	args := append([]string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", r.url}, refspecs...)
	_, err := r.git(ctx, true, args...)
	return err
}

func (r *repo) revParse(ctx context.Context, ref string) (string, error) {
	out, err := r.git(ctx, false, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	return strings.TrimSpace(out), err
}

// commitTime is the committer time of sha, in Unix seconds.
func (r *repo) commitTime(ctx context.Context, sha string) (int64, error) {
	out, err := r.git(ctx, false, "show", "-s", "--format=%ct", sha)
	if err != nil {
		return 0, err
	}
	var t int64
	if _, err := fmt.Sscan(strings.TrimSpace(out), &t); err != nil {
		return 0, &Error{Op: "git show", Err: fmt.Errorf("committer time of %s: %q", short(sha), out)}
	}
	return t, nil
}

// importBundle verifies the bundle against the clone (whose base history
// must already be fetched) and fetches branch from it into a private ref.
// A bundle git rejects is a Refusal; anything else an error.
func (r *repo) importBundle(ctx context.Context, data []byte, branch string) (string, *Refusal, error) {
	f, err := os.CreateTemp(r.g.Dir, "bundle-*.bundle")
	if err != nil {
		return "", nil, &Error{Op: "bundle file", Retryable: true, Err: err}
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", nil, &Error{Op: "bundle file", Retryable: true, Err: err}
	}
	if err := f.Close(); err != nil {
		return "", nil, &Error{Op: "bundle file", Retryable: true, Err: err}
	}
	if _, err := r.git(ctx, false, "bundle", "verify", "--quiet", f.Name()); err != nil {
		if timedOut(err) {
			return "", nil, err
		}
		return "", &Refusal{KindBadBundle, "git bundle verify: " + gitStderr(err)}, nil
	}
	heads, err := r.git(ctx, false, "bundle", "list-heads", f.Name(), "refs/heads/"+branch)
	if err != nil {
		return "", nil, err
	}
	if strings.TrimSpace(heads) == "" {
		return "", &Refusal{KindBadBundle, "the bundle holds no refs/heads/" + branch}, nil
	}
	if _, err := r.git(ctx, false, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", f.Name(),
		"refs/heads/"+branch+":"+r.ref(branch)); err != nil {
		return "", nil, err
	}
	head, err := r.revParse(ctx, r.ref(branch))
	return head, nil, err
}

// diff reads the branch head against base.
func (r *repo) diff(ctx context.Context, base, head string) (*Diff, error) {
	count, err := r.git(ctx, false, "rev-list", "--count", base+".."+head)
	if err != nil {
		return nil, err
	}
	d := &Diff{}
	if _, err := fmt.Sscan(strings.TrimSpace(count), &d.Commits); err != nil {
		return nil, &Error{Op: "git rev-list", Err: fmt.Errorf("count %q", count)}
	}
	names, err := r.git(ctx, false, "diff", "--name-only", "-z", "--no-renames", base+"..."+head)
	if err != nil {
		return nil, err
	}
	for _, n := range strings.Split(names, "\x00") {
		if n != "" {
			d.Files = append(d.Files, n)
		}
	}
	out, stderr, err := r.run(ctx, false, "", "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head)
	switch {
	case err != nil && timedOut(err):
		return nil, err
	case err != nil:
		// Exit 1 is a conflict; a fatal error (unrelated histories) cannot
		// merge either.
		d.Conflict = conflictNote(out, stderr)
	case strings.Contains(out, "<<<<<<<"):
		d.Conflict = "conflict markers in the merge result"
	}
	return d, nil
}

func conflictNote(out, stderr string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 1 {
		files := lines[1:]
		if len(files) > 3 {
			files = append(files[:3], "…")
		}
		return strings.Join(files, ", ")
	}
	if s := redact.Line(lastLines(stderr), MaxErrorText); s != "" {
		return s
	}
	return "git merge-tree could not merge"
}

func timedOut(err error) bool {
	var ge *gitError
	return errors.As(err, &ge) && ge.timedOut
}

func gitStderr(err error) string {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.Error()
	}
	return err.Error()
}

// pushResult is git push --porcelain's answer for one ref.
type pushResult struct {
	ok     bool
	reason string // the bracketed summary, e.g. "rejected (non-fast-forward)"
}

// push runs git push --porcelain of refspec and returns the status of the
// one ref pushed. A transport failure is an error; a ref the remote or git
// rejected is a pushResult.
func (r *repo) push(ctx context.Context, refspec string, opts ...string) (pushResult, error) {
	full := append(append([]string{"push", "--porcelain", "--no-verify"}, opts...), r.url, refspec)
	out, _, err := r.run(ctx, true, "", full...)
	for _, line := range strings.Split(out, "\n") {
		// flag \t from:to \t summary (reason)
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || len(parts[0]) != 1 || !strings.Contains(parts[1], ":") {
			continue
		}
		switch parts[0] {
		case " ", "+", "*", "=", "-":
			return pushResult{ok: true, reason: parts[2]}, nil
		case "!":
			return pushResult{reason: strings.Trim(parts[2], "[] ")}, nil
		}
	}
	if err != nil {
		return pushResult{}, err
	}
	return pushResult{}, &Error{Op: "git push", Retryable: true, Err: errors.New("no status for the pushed ref")}
}

func isNotFastForward(reason string) bool {
	return strings.Contains(reason, "non-fast-forward") || strings.Contains(reason, "fetch first")
}
