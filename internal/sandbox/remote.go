package sandbox

import (
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// RemoteConfig says what a Remote serves and to whom.
type RemoteConfig struct {
	Repo string // owner/name: the repository is served at URL + Repo + ".git"
	// Token is the sandbox's own credential, which Work pushes with; ""
	// with Accept nil serves everyone.
	Token string
	// Accept, when set, also admits a request whose Basic password it
	// accepts: GitHub's git takes the App's live installation tokens.
	Accept func(token string) bool
}

// Remote is a bare repository served over smart HTTP by git http-backend,
// answering 401 to a request without an admitted credential (a Basic
// password, or a Bearer header with Token).
type Remote struct {
	Repo  string // owner/name
	Dir   string // the bare repository
	URL   string // git base URL, with the trailing slash
	Token string
	// Work is a clone with master checked out, pushing with Token.
	Work *Work

	srv    *server
	accept func(string) bool
	env    []string
	pushes atomic.Int64
	mu     sync.Mutex
	onPush func(n int)
	echo   int // >= 0: answer every request quoting its credential; see EchoCredential
}

// NewRemote makes c.Repo under dir (which it owns from then on) with one
// commit on master, and serves it on a loopback port until Close.
func NewRemote(dir string, c RemoteConfig) (*Remote, error) {
	if !ghrepo.Valid(c.Repo) {
		return nil, fmt.Errorf("sandbox: remote: repo %q is not owner/name", c.Repo)
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("sandbox: git is required: %w", err)
	}
	root := filepath.Join(dir, "repos")
	r := &Remote{Repo: c.Repo, Token: c.Token, accept: c.Accept, env: gitEnv(), echo: -1,
		Dir: filepath.Join(root, filepath.FromSlash(c.Repo)+".git")}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=master"},
		{"config", "http.receivepack", "true"},
		{"config", "receive.denyNonFastForwards", "false"},
	} {
		if _, err := runGit(r.Dir, r.env, args...); err != nil {
			return nil, err
		}
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
			"HOME=" + os.DevNull,
		},
		InheritEnv: []string{"PATH"},
		// The client sees what went wrong; the host's terminal gets nothing.
		Logger: log.New(io.Discard, "", 0),
		Stderr: io.Discard,
	}
	r.srv, err = listen(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		echo := r.echo
		r.mu.Unlock()
		if echo >= 0 {
			echoCredential(w, req, echo)
			return
		}
		if !r.authorized(req) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "token required", http.StatusUnauthorized)
			return
		}
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/git-receive-pack") {
			n := int(r.pushes.Add(1))
			r.mu.Lock()
			hook := r.onPush
			r.mu.Unlock()
			if hook != nil {
				hook(n)
			}
		}
		backend.ServeHTTP(w, req)
	}))
	if err != nil {
		return nil, fmt.Errorf("sandbox: remote: %w", err)
	}
	r.URL = r.srv.URL + "/"
	if r.Work, err = r.Clone(filepath.Join(dir, "work")); err != nil {
		r.Close()
		return nil, err
	}
	name := c.Repo[strings.IndexByte(c.Repo, '/')+1:]
	if _, err = r.Work.Commit("master", map[string]string{"README.md": "# " + name + "\n"}, "Initial commit"); err == nil {
		err = r.Work.Push("master")
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Close stops serving the repository.
func (r *Remote) Close() { r.srv.Close() }

// EchoCredential makes the remote answer every request 403 with a
// text/plain body quoting the request's Authorization header and the
// password it carries, followed on the same line by pad filler characters
// (a misconfigured proxy does this); git prints such a body as "remote:"
// lines on its stderr. pad < 0 turns it off.
func (r *Remote) EchoCredential(pad int) {
	r.mu.Lock()
	r.echo = pad
	r.mu.Unlock()
}

func echoCredential(w http.ResponseWriter, req *http.Request, pad int) {
	_, pass, _ := req.BasicAuth()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "refused: Authorization %q (password %s) may not read this repository %s\n",
		req.Header.Get("Authorization"), pass, strings.Repeat("~", pad))
}

// RefuseRefs installs a pre-receive hook that declines any push updating a
// ref whose name starts with prefix (e.g. "refs/tags/queen-superseded/"),
// as a protection rule on GitHub would; "" removes it.
func (r *Remote) RefuseRefs(prefix string) error {
	hook := filepath.Join(r.Dir, "hooks", "pre-receive")
	if prefix == "" {
		if err := os.Remove(hook); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	script := "#!/bin/sh\n" +
		"while read old new ref; do\n" +
		"  case \"$ref\" in\n" +
		"    " + shellQuote(prefix) + "*) echo \"$ref is protected\" >&2; exit 1;;\n" +
		"  esac\n" +
		"done\n" +
		"exit 0\n"
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		return err
	}
	return os.WriteFile(hook, []byte(script), 0o755)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (r *Remote) authorized(req *http.Request) bool {
	if r.Token == "" && r.accept == nil {
		return true
	}
	if _, pass, ok := req.BasicAuth(); ok {
		if r.Token != "" && subtle.ConstantTimeCompare([]byte(pass), []byte(r.Token)) == 1 {
			return true
		}
		return r.accept != nil && r.accept(pass)
	}
	return r.Token != "" && subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte("Bearer "+r.Token)) == 1
}

// CloneURL is the repository's URL.
func (r *Remote) CloneURL() string { return r.URL + r.Repo + ".git" }

// Clone is a new work clone of the repository in dir (an empty repository
// gets master on its first commit), reaching origin with Token.
func (r *Remote) Clone(dir string) (*Work, error) {
	w, err := OpenWork(dir)
	if err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=master"},
		{"config", "http.extraHeader", "Authorization: " + BasicAuth(r.Token)},
		{"remote", "add", "origin", r.CloneURL()},
		{"fetch", "--quiet", "origin"},
	} {
		if _, err := w.Git(args...); err != nil {
			return nil, err
		}
	}
	if w.Rev("refs/remotes/origin/master") != "" {
		if _, err := w.Git("checkout", "--quiet", "-B", "master", "origin/master"); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Ref is the commit refs/heads/name (or the full ref name) points at,
// "" when there is none.
func (r *Remote) Ref(name string) string {
	if !strings.HasPrefix(name, "refs/") {
		name = "refs/heads/" + name
	}
	out, err := runGit(r.Dir, r.env, "rev-parse", "--verify", "--quiet", name)
	if err != nil {
		return ""
	}
	return out
}

// Refs lists every ref under prefix (e.g. "refs/heads/") with its commit.
func (r *Remote) Refs(prefix string) (map[string]string, error) {
	out, err := runGit(r.Dir, r.env, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, sha, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs, nil
}

// Tags lists the tag names (without refs/tags/), sorted.
func (r *Remote) Tags() ([]string, error) {
	out, err := runGit(r.Dir, r.env, "for-each-ref", "--format=%(refname:strip=2)", "refs/tags/")
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}

// SetRef moves a ref directly, as someone else's push would.
func (r *Remote) SetRef(name, sha string) error {
	if !strings.HasPrefix(name, "refs/") {
		name = "refs/heads/" + name
	}
	_, err := runGit(r.Dir, r.env, "update-ref", name, sha)
	return err
}

// Pushes counts the receive-pack exchanges served (pushes that reached the
// remote; git refuses some pushes before sending anything).
func (r *Remote) Pushes() int { return int(r.pushes.Load()) }

// OnPush runs fn, with the push's number, before each push is served; nil
// removes it.
func (r *Remote) OnPush(fn func(n int)) {
	r.mu.Lock()
	r.onPush = fn
	r.mu.Unlock()
}
