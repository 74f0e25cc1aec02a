package gittest

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Remote is a bare repository served over smart HTTP by git http-backend,
// answering 401 to any request without the token (as a Basic password or a
// Bearer header).
type Remote struct {
	Repo  string // owner/name
	Dir   string // the bare repository
	URL   string // git base URL: URL + Repo + ".git" is the repository
	Token string
	// Work is a clone with master checked out, pushing with the token.
	Work *Work

	env      []string
	pushes   atomic.Int64
	mu       sync.Mutex
	onPush   func(n int)
	requests []string
	echo     int // >= 0: answer every request quoting its credential; see EchoCredential
}

// NewRemote serves a new repository "queen/t27" whose master has one
// commit, and stops it when the test ends.
func NewRemote(t testing.TB, token string) *Remote {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is required: ", err)
	}
	root := t.TempDir()
	r := &Remote{Repo: "queen/t27", Token: token, echo: -1}
	r.Dir = filepath.Join(root, "queen", "t27.git")
	env := newWork(t, root).env
	r.env = env
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=master"},
		{"config", "http.receivepack", "true"},
		{"config", "receive.denyNonFastForwards", "false"},
	} {
		if _, err := runGit(r.Dir, env, args...); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"HOME=" + root,
		},
		InheritEnv: []string{"PATH"},
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !authorized(req, token) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "token required", http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		hook, echo := r.onPush, r.echo
		r.mu.Unlock()
		if echo >= 0 {
			echoCredential(w, req, echo)
			return
		}
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/git-receive-pack") {
			n := int(r.pushes.Add(1))
			if hook != nil {
				hook(n)
			}
		}
		backend.ServeHTTP(w, req)
	}))
	setTimeouts(srv.Config)
	srv.Start()
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/"

	r.Work = r.Clone(t)
	r.Work.Commit(t, "master", map[string]string{"README.md": "# t27\n"}, "Initial commit")
	r.Work.Push(t, "master")
	return r
}

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
func (r *Remote) RefuseRefs(t testing.TB, prefix string) {
	t.Helper()
	hook := filepath.Join(r.Dir, "hooks", "pre-receive")
	if prefix == "" {
		if err := os.Remove(hook); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	script := "#!/bin/sh\n" +
		"while read old new ref; do\n" +
		"  case \"$ref\" in\n" +
		"    " + shellQuote(prefix) + "*) echo \"$ref is protected\" >&2; exit 1;;\n" +
		"  esac\n" +
		"done\n" +
		"exit 0\n"
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func setTimeouts(s *http.Server) {
	s.ReadHeaderTimeout = 10 * time.Second
	s.ReadTimeout = 2 * time.Minute
	s.WriteTimeout = 5 * time.Minute
	s.IdleTimeout = time.Minute
}

func authorized(req *http.Request, token string) bool {
	if token == "" {
		return true
	}
	if _, pass, ok := req.BasicAuth(); ok {
		return subtle.ConstantTimeCompare([]byte(pass), []byte(token)) == 1
	}
	return subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte("Bearer "+token)) == 1
}

// CloneURL is the repository's URL.
func (r *Remote) CloneURL() string { return r.URL + r.Repo + ".git" }

// Clone is a new work clone of the repository (an empty one gets master
// on its first commit), with origin reachable using the token.
func (r *Remote) Clone(t testing.TB) *Work {
	t.Helper()
	w := newWork(t, t.TempDir())
	w.Git(t, "init", "--quiet", "--initial-branch=master")
	w.Git(t, "config", "http.extraHeader", "Authorization: "+basicAuth(r.Token))
	w.Git(t, "remote", "add", "origin", r.CloneURL())
	w.Git(t, "fetch", "--quiet", "origin")
	if w.Rev(t, "refs/remotes/origin/master") != "" {
		w.Git(t, "checkout", "--quiet", "-B", "master", "origin/master")
	}
	return w
}

// Ref is the commit refs/heads/name (or the full ref name) points at on
// the remote, "" when there is none.
func (r *Remote) Ref(t testing.TB, name string) string {
	t.Helper()
	if !strings.HasPrefix(name, "refs/") {
		name = "refs/heads/" + name
	}
	out, err := runGit(r.Dir, r.env, "rev-parse", "--verify", "--quiet", name)
	if err != nil {
		return ""
	}
	return out
}

// Refs lists every ref of the remote under prefix (e.g. "refs/heads/").
func (r *Remote) Refs(t testing.TB, prefix string) map[string]string {
	t.Helper()
	out, err := runGit(r.Dir, r.env, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, sha, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs
}

// Tags lists the remote's tag names (without refs/tags/), sorted.
func (r *Remote) Tags(t testing.TB) []string {
	t.Helper()
	out, err := runGit(r.Dir, r.env, "for-each-ref", "--format=%(refname:strip=2)", "refs/tags/")
	if err != nil {
		t.Fatal(err)
	}
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// SetRef moves a ref on the remote directly, as someone else's push would.
func (r *Remote) SetRef(t testing.TB, name, sha string) {
	t.Helper()
	if !strings.HasPrefix(name, "refs/") {
		name = "refs/heads/" + name
	}
	if _, err := runGit(r.Dir, r.env, "update-ref", name, sha); err != nil {
		t.Fatal(err)
	}
}

// Pushes counts the receive-pack exchanges served (pushes that reached the
// remote; git rejects some pushes before sending anything).
func (r *Remote) Pushes() int { return int(r.pushes.Load()) }

// OnPush runs fn, with the push's number, before each push is served; nil
// removes it.
func (r *Remote) OnPush(fn func(n int)) {
	r.mu.Lock()
	r.onPush = fn
	r.mu.Unlock()
}
