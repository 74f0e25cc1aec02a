package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/sandbox"
	"github.com/queen-app/queen-app/internal/testkit"
)

// anotherKey is an App private key GitHub does not know: a key of another
// App, or one deleted from this App's settings.
func anotherKey(t *testing.T) string {
	t.Helper()
	return testkit.RSAKeyPEM(t, 2048)
}

// doctor runs the built queenctl doctor with exactly env.
func doctor(t *testing.T, env map[string]string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "queenctl"), "doctor")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// doctorLine is the report's line of check name.
func doctorLine(t *testing.T, report, name string) string {
	t.Helper()
	for _, l := range strings.Split(report, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == name {
			return l
		}
	}
	t.Fatalf("no %s line in the report:\n%s", name, report)
	return ""
}

// The README's "check it works" step against a working deployment: the
// webhook running, GitHub having delivered to it, the export serving.
func TestDoctorPassesAgainstAWorkingDeploymentAndFailsOnAWrongAppKey(t *testing.T) {
	s := newStack(t, nil)
	s.webhook()
	s.gh.SetHook(s.hookURL, secret)
	number := s.gh.AddPR(repo, sandbox.PR{HeadRef: "queen-9111", HeadRepo: repo, State: "open"})
	eventually(t, 20*time.Second, "GitHub's delivery to the webhook answered 2xx", func() bool {
		d, err := s.gh.ReopenPR(repo, number)
		if err != nil {
			d, err = s.gh.ClosePR(repo, number, false)
		}
		return err == nil && d.StatusCode/100 == 2
	})
	env := mergedEnv(map[string]string{"QUEEN_API_URL": s.apiURL}, s.env, s.sb.ExportEnv())
	code, out, errOut := doctor(t, env)
	if code != 0 || errOut != "" {
		t.Fatalf("doctor on a working deployment: exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, name := range []string{"redis", "github_app", "webhook", "export", "claims_api"} {
		if l := doctorLine(t, out, name); !strings.HasPrefix(l, "ok ") {
			t.Errorf("%q, want ok", l)
		}
	}

	env["GITHUB_APP_PRIVATE_KEY"] = anotherKey(t)
	code, out, _ = doctor(t, env)
	l := doctorLine(t, out, "github_app")
	if code == 0 || !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "GITHUB_APP_ID") || !strings.Contains(l, "GITHUB_APP_PRIVATE_KEY_FILE") {
		t.Fatalf("a wrong App key: exit %d, github_app line %q; want non-zero and a FAIL naming the variables\n%s", code, l, out)
	}
	if strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("the report quotes the key:\n%s", out)
	}
}

// A wrong App key used to leave both /readyz at 200 while every delivery
// waited for an installation sync that could never succeed.
func TestReadyzFailsWhileGitHubRefusesTheAppKey(t *testing.T) {
	s := newStack(t, nil)
	s.env["GITHUB_APP_PRIVATE_KEY"] = anotherKey(t)
	hook := s.webhook()
	worker, workerURL := s.worker()
	for _, p := range []struct {
		proc *proc
		url  string
	}{{hook, s.apiURL}, {worker, workerURL}} {
		var ready map[string]any
		eventually(t, 30*time.Second, p.proc.name+"'s /readyz says github_app refused", func() bool {
			ready = nil
			code := apiJSON(t, "GET", p.url+"/readyz", "", nil, &ready)
			failed, _ := ready["failed"].(map[string]any)
			return code == http.StatusServiceUnavailable && failed["github_app"] == "refused" && failed["redis"] == nil
		})
		eventually(t, 30*time.Second, p.proc.name+"'s log names the variables", func() bool {
			log := p.proc.out.String()
			return strings.Contains(log, "GITHUB_APP_ID") && strings.Contains(log, "GITHUB_APP_PRIVATE_KEY_FILE")
		})
		if strings.Contains(p.proc.out.String(), "PRIVATE KEY-----") {
			t.Fatalf("%s logs the key", p.proc.name)
		}
	}
}

// A wrong webhook secret, seen as an operator does: the webhook's log line
// and its metric name the refusal, and doctor reads GitHub's recent
// deliveries and names the variable that differs.
func TestDoctorNamesAWrongWebhookSecret(t *testing.T) {
	s := newStack(t, nil)
	hook := s.webhook()
	s.gh.SetHook(s.hookURL, "the App's webhook secret, not the deployment's")
	number := s.gh.AddPR(repo, sandbox.PR{HeadRef: "queen-9112", HeadRepo: repo, State: "open"})
	d, err := s.gh.ClosePR(repo, number, false)
	if err != nil || d.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a delivery signed with another secret: %d, %v; want 401", d.StatusCode, err)
	}
	eventually(t, 10*time.Second, "the webhook's refusal names GITHUB_WEBHOOK_SECRET", func() bool {
		return strings.Contains(hook.out.String(), "GITHUB_WEBHOOK_SECRET")
	})
	resp, err := http.Get(s.apiURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if m := readAll(resp); !strings.Contains(m, `queen_webhook_signature_failures_total{reason="mismatch"} 1`+"\n") {
		t.Errorf("/metrics does not count the refusal by reason:\n%s", m)
	}

	env := mergedEnv(map[string]string{"QUEEN_API_URL": s.apiURL}, s.env, s.sb.ExportEnv())
	code, out, _ := doctor(t, env)
	l := doctorLine(t, out, "webhook")
	if code != 1 || !strings.HasPrefix(l, "FAIL") ||
		!strings.Contains(l, "the webhook refused them: GITHUB_WEBHOOK_SECRET differs from the App's webhook secret") {
		t.Fatalf("doctor after a 401: exit %d, webhook line %q; want 1 and a FAIL naming GITHUB_WEBHOOK_SECRET\n%s", code, l, out)
	}
	if strings.Contains(out, s.env["GITHUB_WEBHOOK_SECRET"]) {
		t.Fatalf("the report quotes the secret:\n%s", out)
	}
}
