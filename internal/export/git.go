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
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/redact"
)

// DefaultGitTimeout bounds one git command.
const DefaultGitTimeout = 5 * time.Minute

// The cache is bounded by git gc, not by a size cap with eviction: once a
// task's private refs are deleted everything it imported is unreachable,
// so gc --prune=now leaves the base's history alone, packed, while
// evicting a clone would fetch that whole history again. A task that
// leaves its clone holding more loose objects or packs than these collects
// it, under the repository's lock: git's own thresholds for gc --auto
// (gc.auto, gc.autoPackLimit). Each import is a pack (git keeps a bundle's
// pack whole), so the packs usually decide: the clone holds the base's
// history and at most the last 50 tasks' imports. BenchmarkCacheBound,
// 150 pushes of an 8 KiB file each: 395 KiB in 122 files, against 1,153
// KiB in 321 files never collected (0.34x), which grows with every push.
const (
	DefaultGCLoose = 6700
	DefaultGCPacks = 50
)

// gcTimeLeft is how much of a task's time, in git command timeouts, must
// remain for it to collect: a gc at its timeout still leaves the task one
// to record its outcome. A task short of it leaves the gc to the next.
const gcTimeLeft = 2

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
	GCLoose int           // collect a clone past this many loose objects; 0 is DefaultGCLoose
	GCPacks int           // or past this many packs; 0 is DefaultGCPacks

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
// hold with a release that deletes the task's private refs, collects the
// clone past its bound and unlocks. Release's error is only a failed gc.
func (g *Git) open(ctx context.Context, name, token string) (*repo, func() error, error) {
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
	// Under the lock no other task of this process holds private refs or
	// bundle files here, so any left are a killed process's: clear them.
	// Bundle files in the cache's root are older versions'.
	r.deleteRefs(ctx, importNS)
	removeAll(filepath.Join(dir, bundlePattern), filepath.Join(g.Dir, "bundle-*.bundle"))
	release := func() error {
		defer unlock()
		// A fresh context: a cancelled task still leaves no private ref behind.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.deleteRefs(cctx, r.ns)
		return r.collect(ctx)
	}
	return r, release, nil
}

// bundlePattern names a task's bundle file in its clone.
const bundlePattern = "queen-bundle-*.bundle"

func removeAll(patterns ...string) {
	for _, p := range patterns {
		files, _ := filepath.Glob(p)
		for _, f := range files {
			_ = os.Remove(f)
		}
	}
}

// collect runs git gc --prune=now when the clone holds more loose objects
// or packs than its bound. It runs only under the repository's lock: no
// task of this process is writing the clone, and the cache belongs to one
// process, so nothing unreachable is still in use.
func (r *repo) collect(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < gcTimeLeft*r.g.timeout() {
		return nil
	}
	out, err := r.git(ctx, false, "count-objects", "-v")
	if err != nil {
		return err
	}
	loose, packs := countObjects(out)
	if loose <= orDefault(r.g.GCLoose, DefaultGCLoose) && packs <= orDefault(r.g.GCPacks, DefaultGCPacks) {
		return nil
	}
	_, err = r.git(ctx, false, "gc", "--quiet", "--prune=now")
	return err
}

// countObjects reads git count-objects -v: the loose objects and the packs.
func countObjects(out string) (loose, packs int) {
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		switch k {
		case "count":
			loose = n
		case "packs":
			packs = n
		}
	}
	return loose, packs
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func (g *Git) timeout() time.Duration {
	if g.Timeout <= 0 {
		return DefaultGitTimeout
	}
	return g.Timeout
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

// gitError is a failed git command; exitCode is -1 when git did not exit
// (killed by a signal, or never started).
type gitError struct {
	exitCode int
	stderr   string
	status   string // how it ended: "exit status 128", "signal: killed"
	timedOut bool
}

func (e *gitError) Error() string {
	switch {
	case e.timedOut:
		return "timed out"
	case e.stderr != "":
		return e.stderr
	case e.status != "":
		return e.status
	}
	return fmt.Sprintf("exit status %d", e.exitCode)
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
	ctx, cancel := context.WithTimeout(ctx, r.g.timeout())
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
	ge.status = r.scrub(err.Error())
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
	f, err := os.CreateTemp(r.dir, bundlePattern)
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
		if !answered(err) {
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
	out, err := r.git(ctx, false, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head)
	files, conflict := conflicted(out, err)
	switch {
	case conflict:
		d.Conflict = conflictNote(files)
	case err != nil:
		// Not git's answer about the merge (a full disk, a git killed or too
		// old, a corrupt clone): an outage of our own, to retry.
		return nil, err
	case strings.Contains(out, "<<<<<<<"):
		d.Conflict = "conflict markers in the merge result"
	}
	return d, nil
}

// conflicted reads a failed git merge-tree --write-tree --name-only
// --no-messages. Only git's documented conflict answer is a conflict: exit
// status 1, the merged tree's id on the first line and the conflicted
// files after it (git-merge-tree(1), OUTPUT and EXIT STATUS). Any other
// status, a git that did not exit, or an exit 1 without that output (git
// 2.39 exits 1 on a name it cannot resolve) is not.
func conflicted(out string, err error) (files []string, ok bool) {
	var ge *gitError
	if !errors.As(err, &ge) || ge.exitCode != mergeConflictStatus || ge.timedOut {
		return nil, false
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || !objectID(lines[0]) {
		return nil, false
	}
	return lines[1:], true
}

// mergeConflictStatus is git merge-tree's exit status for a merge with conflicts.
const mergeConflictStatus = 1

// objectID reports whether s is a full object id, SHA-1 or SHA-256.
func objectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// conflictNote names the first conflicted files.
func conflictNote(files []string) string {
	if len(files) > 3 {
		files = append(files[:3:3], "…")
	}
	return strings.Join(files, ", ")
}

// notAncestor reports whether err is git merge-base --is-ancestor's "no"
// (git-merge-base(1)); any other failure is no answer.
func notAncestor(err error) bool {
	var ge *gitError
	return errors.As(err, &ge) && ge.exitCode == notAncestorStatus && !ge.timedOut
}

// notAncestorStatus is git merge-base --is-ancestor's exit status for "no".
const notAncestorStatus = 1

// answered reports whether git ran to its own answer: it exited, in time.
// A git killed (by the kernel, out of memory) or timed out said nothing
// about its input.
func answered(err error) bool {
	var ge *gitError
	return errors.As(err, &ge) && ge.exitCode >= 0 && !ge.timedOut
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
