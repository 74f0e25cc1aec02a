package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/testkit"
)

// runEnv runs a built binary with exactly env (plus PATH and HOME), for
// one that is expected to stop at start, and returns its exit code, stdout
// and stderr.
func runEnv(t *testing.T, name string, env map[string]string) (int, string, string) {
	t.Helper()
	return runArgs(t, name, env)
}

// runArgs is runEnv with args on the command line.
func runArgs(t *testing.T, name string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// errorLines checks that stderr is only lines "name: VAR: problem" and
// returns the variables in order.
func errorLines(t *testing.T, name, stderr string) []string {
	t.Helper()
	var vars []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		rest, ok := strings.CutPrefix(l, name+": ")
		v, _, ok2 := strings.Cut(rest, ": ")
		if !ok || !ok2 || strings.ToUpper(v) != v {
			t.Errorf("%s: line %q does not name a variable", name, l)
			continue
		}
		vars = append(vars, v)
	}
	return vars
}

// A newcomer who sets nothing learns every missing variable in one run.
func TestNothingSetListsEveryMissingVariableAtOnce(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"webhook": {"QUEEN_REDIS_URL", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_FILE", "GITHUB_WEBHOOK_SECRET", "QUEEN_API_TOKEN"},
		// The worker's own variables are checked with config's.
		"worker": {"QUEEN_REDIS_URL", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_FILE", "QUEEN_WORKER_CONCURRENCY"},
	}
	for name, vars := range want {
		env := map[string]string{}
		if name == "worker" {
			env["QUEEN_WORKER_CONCURRENCY"] = "0"
		}
		code, out, errOut := runEnv(t, name, env)
		got := errorLines(t, name, errOut)
		if code != 2 || out != "" || strings.Join(got, " ") != strings.Join(vars, " ") {
			t.Errorf("%s with nothing set: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and a line for each of %v", name, code, out, errOut, vars)
		}
	}
}

// Malformed and missing values together: one line for each variable.
func TestEveryBadVariableIsOneLine(t *testing.T) {
	t.Parallel()
	code, _, errOut := runEnv(t, "webhook", map[string]string{
		"QUEEN_REDIS_URL":      "redis://127.0.0.1:1/0",
		"GITHUB_APP_ID":        "x",
		"QUEEN_LISTEN":         ":abc",
		"QUEEN_FREE_CLOSED_PR": "maybe",
		"QUEEN_API_TOKEN":      "short-token",
		"GITHUB_API_URL":       "http://ghe.example.com/api/v3/",
	})
	got := strings.Join(errorLines(t, "webhook", errOut), " ")
	want := "GITHUB_API_URL QUEEN_LISTEN QUEEN_FREE_CLOSED_PR QUEEN_API_TOKEN GITHUB_APP_ID GITHUB_APP_PRIVATE_KEY_FILE GITHUB_WEBHOOK_SECRET"
	if code != 2 || got != want {
		t.Errorf("exit %d, variables %q, want exit 2 and %q:\n%s", code, got, want, errOut)
	}
	if strings.Contains(errOut, "short-token") {
		t.Error("the error line holds the short token")
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The App key given twice, in a file and inline, is refused naming both.
func TestBothAppKeysAreRefusedAtStart(t *testing.T) {
	t.Parallel()
	key := testkit.RSAKeyPEM(t, 2048)
	for _, name := range []string{"webhook", "worker"} {
		code, _, errOut := runEnv(t, name, map[string]string{
			"QUEEN_REDIS_URL": "redis://127.0.0.1:1/0", "GITHUB_APP_ID": "1",
			"GITHUB_WEBHOOK_SECRET": secret, "QUEEN_API_TOKEN": apiToken,
			"GITHUB_APP_PRIVATE_KEY": key, "GITHUB_APP_PRIVATE_KEY_FILE": writeFile(t, "app.pem", key),
		})
		want := name + ": GITHUB_APP_PRIVATE_KEY_FILE: is set and so is GITHUB_APP_PRIVATE_KEY: give the key in one place\n"
		if code != 2 || errOut != want {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", name, code, errOut, want)
		}
		if strings.Contains(errOut, "PRIVATE KEY-----") {
			t.Errorf("%s: the error holds the key", name)
		}
	}
}

// The public half of the key pair, PEM or ssh, gets its own message.
func TestPublicKeyIsNamedAsSuch(t *testing.T) {
	t.Parallel()
	keys := map[string]string{
		"pem": testkit.PublicKeyPEM(t),
		"ssh": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 op@laptop\n",
	}
	for kind, key := range keys {
		code, _, errOut := runEnv(t, "worker", map[string]string{
			"QUEEN_REDIS_URL": "redis://127.0.0.1:1/0", "GITHUB_APP_ID": "1",
			"GITHUB_APP_PRIVATE_KEY_FILE": writeFile(t, "app.pub", key),
		})
		if code != 2 || strings.Count(errOut, "\n") != 1 ||
			!strings.HasPrefix(errOut, "worker: GITHUB_APP_PRIVATE_KEY_FILE: is a public key; ") || !strings.Contains(errOut, ".pem") {
			t.Errorf("%s public key: exit %d, stderr %q", kind, code, errOut)
		}
	}
}

// --help says how long a secret must be, and stars the export's token and
// repository only as required with QUEEN_EXPORT_URL.
func TestHelpStatesSecretMinimumAndConditionalVariables(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"webhook", "worker", "queenctl"} {
		_, out, _ := run(t, filepath.Join(bin, name), "--help")
		if !strings.Contains(out, "must be at least 16 characters") {
			t.Errorf("%s --help does not state the 16-character minimum of secrets", name)
		}
	}
	_, out, _ := run(t, filepath.Join(bin, "worker"), "--help")
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || (f[0] != "QUEEN_EXPORT_TOKEN" && f[0] != "QUEEN_EXPORT_REPO") {
			continue
		}
		if f[1] == "*" || !strings.HasSuffix(l, "; required with QUEEN_EXPORT_URL") {
			t.Errorf("worker --help: %q; want it unstarred and required with QUEEN_EXPORT_URL", l)
		}
	}
}
