// Package e2e runs the built binaries as processes against a private Redis,
// the local GitHub stand-in and real git over HTTP.
package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api/openapicheck"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// bin holds the binaries built once for the whole package.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "queen-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/webhook", "./cmd/worker", "./cmd/queenctl")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building the binaries failed: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one running binary.
type proc struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	out  *testkit.Buffer
	done chan struct{}
}

// start runs a binary with exactly env (plus PATH and HOME) and stops it
// at cleanup with SIGTERM. Before a webhook or a worker it runs queenctl
// ledger init on env's Redis, as a deployment does once before its first
// start (startBare does not).
func start(t testing.TB, name string, env map[string]string, args ...string) *proc {
	t.Helper()
	if (name == "webhook" || name == "worker") && env["QUEEN_REDIS_URL"] != "" {
		initLedger(t, env)
	}
	return startBare(t, name, env, args...)
}

// initLedger runs queenctl ledger init on env's Redis. A Redis that does
// not answer is left to the binary's own test: the error is only logged.
func initLedger(t testing.TB, env map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "queenctl"), "ledger", "init")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("queenctl ledger init before the binary: %v: %s", err, out)
	}
}

// startBare is start without the ledger's init.
func startBare(t testing.TB, name string, env map[string]string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &proc{t: t, name: name, cmd: cmd, out: &testkit.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", name, p.out.String())
		}
	})
	return p
}

// stop sends SIGTERM and waits for a graceful exit.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the process with SIGKILL, as a crash would.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exited reports whether the process has ended, and its exit code.
func (p *proc) exited() (bool, int) {
	select {
	case <-p.done:
		return true, p.cmd.ProcessState.ExitCode()
	default:
		return false, 0
	}
}

// freeAddr is an address for a binary about to listen (testkit.FreeAddr).
func freeAddr(t testing.TB) string {
	t.Helper()
	return testkit.FreeAddr(t)
}

// waitHTTP waits until url answers 200.
func waitHTTP(t testing.TB, p *proc, url string) {
	t.Helper()
	eventually(t, 20*time.Second, url+" answers 200", func() bool {
		if ok, code := p.exited(); ok {
			t.Fatalf("%s exited with %d:\n%s", p.name, code, p.out.String())
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// eventually polls cond until it holds or the limit passes. The limit only
// bounds a broken run; no test asserts how fast anything is.
func eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// deliver posts a signed webhook and returns the status code.
func deliver(t *testing.T, url, secret, event, delivery string, body []byte) int {
	t.Helper()
	code, err := post(url, secret, event, delivery, body)
	if err != nil {
		t.Fatalf("deliver %s: %v", delivery, err)
	}
	return code
}

// post is deliver for goroutines other than the test's: it returns the error.
func post(url, secret, event, delivery string, body []byte) (int, error) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// apiJSON calls the claims API and decodes the answer.
func apiJSON(t *testing.T, method, url, token string, body any, out any) int {
	t.Helper()
	var r io.Reader
	var sent []byte
	if body != nil {
		sent, _ = json.Marshal(body)
		r = bytes.NewReader(sent)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, url, r)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// The built webhook's claims API answers are held to docs/openapi.yaml too.
	if strings.HasPrefix(req.URL.Path, "/v1/") {
		x := openapicheck.Exchange{Request: req, RequestBody: sent, Status: resp.StatusCode, Header: resp.Header, Body: b}
		if err := openapicheck.Check(x); err != nil {
			t.Errorf("openapi: %s %s -> %d: %v", method, url, resp.StatusCode, err)
		}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// prPayload is a real pull_request payload from GitHub's docs, rewritten
// for repo, branch queen-<issue> and the given action.
func prPayload(t testing.TB, repo string, issue int64, number int, action string, merged bool, installation int64) []byte {
	t.Helper()
	raw := githubtest.Payload(t, "pull_request/closed.payload.json")
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(repo, "/")
	repoObj := p["repository"].(map[string]any)
	repoObj["full_name"], repoObj["name"] = repo, name
	repoObj["owner"].(map[string]any)["login"] = owner
	pr := p["pull_request"].(map[string]any)
	pr["number"] = number
	pr["merged"] = merged
	if merged {
		pr["merged_at"] = "2026-11-29T10:00:00Z"
	} else {
		pr["merged_at"] = nil
	}
	if action == "reopened" {
		pr["state"] = "open"
	}
	head := pr["head"].(map[string]any)
	head["ref"] = "queen-" + strconv.FormatInt(issue, 10)
	head["repo"] = repoObj
	pr["base"].(map[string]any)["repo"] = repoObj
	p["action"] = action
	p["number"] = number
	p["installation"] = map[string]any{"id": installation}
	out, _ := json.Marshal(p)
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
