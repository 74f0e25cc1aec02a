package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/redistest"
)

// A port in use stops either binary with exit 2 and one line naming the
// variable of the address, before anything waits on Redis.
func TestPortInUseNamesItsVariable(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, c := range []struct{ name, variable string }{
		{"webhook", "QUEEN_LISTEN"}, {"webhook", "QUEEN_API_LISTEN"}, {"worker", "QUEEN_API_LISTEN"},
	} {
		env := mergedEnv(s.env, map[string]string{
			"QUEEN_REDIS_URL": "redis://" + freeAddr(t) + "/0", // nobody: the port is checked first
			c.variable:        addr,
		})
		code, _, errOut := runEnv(t, c.name, env)
		want := c.name + ": " + c.variable + ": " + addr + " is in use by another process\n"
		if code != 2 || errOut != want {
			t.Errorf("%s with %s in use: exit %d, stderr %q; want exit 2 and %q", c.name, c.variable, code, errOut, want)
		}
	}
}

// readyz is /readyz's status code and its failed checks.
func readyz(t *testing.T, base string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Failed map[string]string `json:"failed"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Failed
}

// Redis refusing the password, or not there, at start: both binaries
// listen at once, /healthz answers 200 (the liveness probe keeps them),
// /readyz 503 naming redis, the claims API 503 to an authenticated caller
// (401 to any other), and the log names QUEEN_REDIS_PASSWORD when Redis
// refuses it. A password fixed on Redis's side needs no restart.
func TestRedisRefusingOrAbsentAtStartKeepsProbesAnswering(t *testing.T) {
	t.Parallel()
	locked := redistest.StartWith(t, redistest.Options{Password: "right-password-0123"})
	cases := []struct {
		what, url, password, inLog, word string
		fix                              func()
	}{
		{"wrong password", locked.URL(), "wrong-password-4567", "check QUEEN_REDIS_PASSWORD", "refused", func() {
			if err := locked.Client().ConfigSet(context.Background(), "requirepass", "wrong-password-4567").Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"unreachable", "redis://" + freeAddr(t) + "/0", "", "connection refused", "unavailable", nil},
	}
	for _, c := range cases {
		s := newStack(t, map[string]string{"QUEEN_REDIS_URL": c.url, "QUEEN_REDIS_PASSWORD": c.password})
		workerAPI := freeAddr(t)
		workerEnv := map[string]string{}
		for k, v := range s.env {
			workerEnv[k] = v
		}
		workerEnv["QUEEN_API_LISTEN"] = workerAPI
		hook := start(t, "webhook", s.env)
		work := start(t, "worker", workerEnv)
		for _, p := range []struct {
			proc *proc
			base string
		}{{hook, s.apiURL}, {work, "http://" + workerAPI}} {
			waitHTTP(t, p.proc, p.base+"/healthz")
			code, failed := readyz(t, p.base)
			if code != http.StatusServiceUnavailable || failed["redis"] != c.word || failed["ledger"] != "starting" {
				t.Errorf("%s: %s /readyz %d %v; want 503 with redis %s, and the ledger starting", c.what, p.proc.name, code, failed, c.word)
			}
			eventually(t, 20*time.Second, p.proc.name+" logs "+c.inLog, func() bool {
				return strings.Contains(p.proc.out.String(), c.inLog)
			})
			if strings.Contains(p.proc.out.String(), "right-password-0123") || c.password != "" && strings.Contains(p.proc.out.String(), c.password) {
				t.Errorf("%s: %s logged a password", c.what, p.proc.name)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, s.apiURL+"/v1/claims", nil)
		req.Header.Set("Authorization", "Bearer "+apiToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: an authenticated /v1/claims got %d, want 503 with Retry-After", c.what, resp.StatusCode)
		}
		if resp, err := http.Get(s.apiURL + "/v1/claims"); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: /v1/claims without a token: %v %v, want 401 first", c.what, resp, err)
		}
		if c.fix == nil {
			continue
		}
		c.fix()
		// The ledger's init before the binaries was refused too: the
		// operator runs it now, and both serve without a restart.
		if code, out, errOut := runArgs(t, "queenctl", s.env, "ledger", "init"); code != 0 {
			t.Fatalf("queenctl ledger init with the password right: exit %d: %s%s", code, out, errOut)
		}
		for _, base := range []string{s.apiURL, "http://" + workerAPI} {
			eventually(t, 60*time.Second, base+" /readyz 200 once the password is right", func() bool {
				code, _ := readyz(t, base)
				return code == http.StatusOK
			})
		}
	}
}

// A redis+cluster:// URL naming a node without cluster mode can never
// work: both binaries say so naming QUEEN_REDIS_URL and exit 2, where
// retrying would only hide it.
func TestClusterURLAtOneNodeExits2(t *testing.T) {
	t.Parallel()
	s := newStack(t, map[string]string{"QUEEN_REDIS_URL": "redis+cluster://" + redistest.Start(t).Addr})
	for _, name := range []string{"webhook", "worker"} {
		p := start(t, name, mergedEnv(s.env, map[string]string{"QUEEN_API_LISTEN": freeAddr(t)}))
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still runs with a Cluster URL at one node", name)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(p.out.String()), "\n") {
			if !strings.HasPrefix(l, "{") { // the JSON log is on stdout
				lines = append(lines, l)
			}
		}
		if code := p.cmd.ProcessState.ExitCode(); code != 2 || len(lines) != 1 ||
			!strings.HasPrefix(lines[0], name+": QUEEN_REDIS_URL: names a Redis Cluster, but ") {
			t.Errorf("%s: exit %d, lines %q; want exit 2 and one line naming QUEEN_REDIS_URL", name, code, lines)
		}
	}
}
