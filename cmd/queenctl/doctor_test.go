package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/sandbox"
	"github.com/queen-app/queen-app/internal/testkit"
)

// doctorEnv points every variable doctor reads at a sandbox, a private
// Redis and a claims API, and records one answered delivery.
func doctorEnv(t *testing.T) (*sandbox.Sandbox, *redistest.Server) {
	t.Helper()
	sb, err := sandbox.Start(sandbox.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	for k, v := range sb.GitHubEnv() {
		t.Setenv(k, v)
	}
	for k, v := range sb.ExportEnv() {
		t.Setenv(k, v)
	}
	t.Setenv("GITHUB_APP_PRIVATE_KEY_FILE", "")
	t.Setenv("QUEEN_ALLOW_INSECURE_URLS", "")
	r := redistest.Start(t)
	t.Setenv("QUEEN_REDIS_URL", r.URL())
	claimsServer(t)
	sb.GitHub.AddDelivery(sandbox.Delivery{GUID: "ping-1", DeliveredAt: time.Now().Add(-time.Minute), StatusCode: 200, Event: "ping"})
	return sb, r
}

// reportLines maps each check's name to its line.
func reportLines(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("report line %q: want WORD NAME REASON", l)
		}
		m[f[1]] = l
	}
	for _, c := range doctorChecks {
		if _, ok := m[c.name]; !ok {
			t.Fatalf("the report has no %s line:\n%s", c.name, out)
		}
	}
	return m
}

func TestDoctorAllOK(t *testing.T) {
	doctorEnv(t)
	code, out, errOut := ctl("doctor")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q, report:\n%s", code, errOut, out)
	}
	for name, l := range reportLines(t, out) {
		if !strings.HasPrefix(l, "ok ") {
			t.Errorf("%s: %q, want ok", name, l)
		}
	}
	if m := reportLines(t, out); !strings.Contains(m["github_app"], sandbox.AppSlug) || !strings.Contains(m["redis"], "noeviction") {
		t.Errorf("the lines say what they saw:\n%s", out)
	}
}

func wrongKey(t *testing.T) string {
	t.Helper()
	return testkit.RSAKeyPEM(t, 2048)
}

func TestDoctorFailsEachBrokenPartByName(t *testing.T) {
	sb, r := doctorEnv(t)
	t.Setenv("GITHUB_APP_PRIVATE_KEY", wrongKey(t))
	code, out, _ := ctl("doctor")
	m := reportLines(t, out)
	if code != 1 || !strings.HasPrefix(m["github_app"], "FAIL") ||
		!strings.Contains(m["github_app"], "GITHUB_APP_ID") || !strings.Contains(m["github_app"], "GITHUB_APP_PRIVATE_KEY_FILE") {
		t.Fatalf("a wrong App key: exit %d, report:\n%s\nwant exit 1 and a github_app FAIL naming the variables", code, out)
	}
	if !strings.HasPrefix(m["redis"], "ok") || !strings.HasPrefix(m["claims_api"], "ok") {
		t.Errorf("a wrong key fails only what needs it:\n%s", out)
	}

	t.Setenv("GITHUB_APP_PRIVATE_KEY", string(sb.GitHub.Key()))
	sb.GitHub.AddDelivery(sandbox.Delivery{GUID: "pr-9", DeliveredAt: time.Now(), StatusCode: 503, Event: "pull_request", Action: "closed"})
	t.Setenv("QUEEN_EXPORT_TOKEN", "not-the-export-token-0123")
	t.Setenv("QUEEN_API_TOKEN", "not-the-claims-token-0123")
	if err := r.Client().ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	code, out, _ = ctl("doctor")
	m = reportLines(t, out)
	for name, want := range map[string]string{
		"github_app": "ok", "redis": "FAIL", "webhook": "FAIL", "export": "FAIL", "claims_api": "FAIL",
	} {
		if !strings.HasPrefix(m[name], want+" ") {
			t.Errorf("%s: %q, want %s", name, m[name], want)
		}
	}
	for name, says := range map[string]string{
		"redis": "allkeys-lru", "webhook": "got 503", "export": "QUEEN_EXPORT_TOKEN", "claims_api": "QUEEN_API_TOKEN",
	} {
		if !strings.Contains(m[name], says) {
			t.Errorf("%s: %q does not say %q", name, m[name], says)
		}
	}
	if code != 1 || strings.Contains(out, "not-the-") {
		t.Errorf("exit %d (want 1); a token in the report?\n%s", code, out)
	}

	// Unreachable Redis, no export: the export line is skipped, not failed.
	r.Kill()
	t.Setenv("QUEEN_EXPORT_URL", "")
	code, out, _ = ctl("doctor")
	m = reportLines(t, out)
	if code != 1 || !strings.HasPrefix(m["redis"], "FAIL") || !strings.Contains(m["redis"], "QUEEN_REDIS_URL") ||
		!strings.HasPrefix(m["export"], "skip") {
		t.Errorf("Redis down, no export: exit %d\n%s", code, out)
	}
}

func TestDoctorSaysNoDeliveriesAndRefusesBadConfig(t *testing.T) {
	doctorEnv(t)
	t.Setenv("GITHUB_APP_ID", "x")
	code, out, errOut := ctl("doctor")
	if code != 2 || out != "" || errOut != "queenctl: doctor: GITHUB_APP_ID: must be a positive whole number\n" {
		t.Fatalf("a bad App id: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if w, d := judgeDeliveries(nil); w != checkFail || !strings.Contains(d, "no delivery") {
		t.Fatalf("no deliveries: %s %s", w, d)
	}
	if code, out, _ := ctl("doctor", "--help"); code != 0 || !strings.Contains(out, "github_app") {
		t.Fatalf("doctor --help: exit %d\n%s", code, out)
	}
}

// GitHub's deliveries refused 401 name the secret: a FAIL while the latest
// is refused, a note once the latest is answered again.
func TestDoctorNamesTheWebhookSecretOn401(t *testing.T) {
	now := time.Now()
	at := func(min int, code int) githubapp.Delivery {
		return githubapp.Delivery{GUID: fmt.Sprintf("d-%d", min), DeliveredAt: now.Add(-time.Duration(min) * time.Minute),
			StatusCode: code, Event: "pull_request"}
	}
	const says = "the webhook refused them: GITHUB_WEBHOOK_SECRET differs from the App's webhook secret"
	w, d := judgeDeliveries([]githubapp.Delivery{at(1, 401), at(2, 401), at(3, 202)})
	if w != checkFail || !strings.Contains(d, says) || !strings.Contains(d, "2 of the latest 3") {
		t.Errorf("the latest refused 401: %s %s", w, d)
	}
	w, d = judgeDeliveries([]githubapp.Delivery{at(1, 202), at(2, 401)})
	if w != checkOK || !strings.Contains(d, "1 got 401: GITHUB_WEBHOOK_SECRET differed") {
		t.Errorf("an earlier 401, the latest answered: %s %s", w, d)
	}
	w, d = judgeDeliveries([]githubapp.Delivery{at(1, 503)})
	if w != checkFail || strings.Contains(d, "GITHUB_WEBHOOK_SECRET") {
		t.Errorf("a 503 is no secret's fault: %s %s", w, d)
	}
}

// Run as a process, doctor's Redis line is all it says of Redis: no
// go-redis pool lines on stderr while Redis is down, and a refused
// password names QUEEN_REDIS_PASSWORD, as the webhook's log does.
func TestDoctorProcessRedisDownAndRefused(t *testing.T) {
	bin := buildQueenctl(t)
	doctorEnv(t)
	locked := redistest.StartWith(t, redistest.Options{Password: "the-right-password-0123"})
	down := redistest.Start(t)
	down.Kill()
	for _, c := range []struct {
		name, url, says string
	}{
		{"down", down.URL(), "does not answer"},
		{"wrong password", locked.URL(), "QUEEN_REDIS_PASSWORD"},
	} {
		cmd := exec.Command(bin, "doctor")
		cmd.Env = append(os.Environ(), "QUEEN_REDIS_URL="+c.url)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		m := reportLines(t, stdout.String())
		if !strings.HasPrefix(m["redis"], "FAIL") || !strings.Contains(m["redis"], c.says) {
			t.Errorf("%s: %q, want a FAIL saying %q", c.name, m["redis"], c.says)
		}
		if stderr.Len() != 0 {
			t.Errorf("%s: stderr holds more than the report:\n%s", c.name, stderr.String())
		}
	}
}
