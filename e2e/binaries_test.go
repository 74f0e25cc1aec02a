package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/version"
)

// run runs a built binary with only PATH and HOME set and returns its
// exit code, stdout and stderr.
func run(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s %v: %v", path, args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

var binaryRoles = map[string][]config.Role{
	"webhook":  {config.Webhook},
	"worker":   {config.Worker},
	"queenctl": {config.CLI, config.Deliveries},
}

// Each binary answers -h and --help with no variable set: what it does,
// every variable it reads with the required ones starred, an example.
func TestBinariesExplainThemselves(t *testing.T) {
	t.Parallel()
	for name, roles := range binaryRoles {
		for _, flag := range []string{"-h", "--help"} {
			code, out, errOut := run(t, filepath.Join(bin, name), flag)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: "+name+" ") ||
				!strings.Contains(out, "\nExample:\n") {
				t.Errorf("%s %s: exit %d, stderr %q, stdout:\n%s", name, flag, code, errOut, out)
				continue
			}
			lines := map[string]string{}
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) > 1 {
					lines[f[0]] = l
				}
			}
			for _, role := range roles {
				for _, v := range config.VarsOf(role) {
					l, ok := lines[v.Name]
					switch {
					case !ok:
						t.Errorf("%s %s does not list %s", name, flag, v.Name)
					case v.Starred(role) != strings.Contains(l, " * "):
						t.Errorf("%s %s: %q; always required by %v: %t", name, flag, l, role, v.Starred(role))
					}
				}
			}
		}
	}
}

// The defaults the help shows: the webhook on :8080 and :8081, the worker's
// health on :8082, so both run side by side on one host.
func TestBinariesShowTheirDefaultPorts(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"webhook": {"QUEEN_LISTEN", "default :8080", "QUEEN_API_LISTEN", "default :8081"},
		"worker":  {"QUEEN_API_LISTEN", "default :8082"},
	}
	for name, pairs := range want {
		_, out, _ := run(t, filepath.Join(bin, name), "--help")
		for i := 0; i < len(pairs); i += 2 {
			re := regexp.MustCompile(`(?m)^  ` + pairs[i] + ` .*; ` + pairs[i+1] + `$`)
			if !re.MatchString(out) {
				t.Errorf("%s --help: no line %s ... %s in\n%s", name, pairs[i], pairs[i+1], out)
			}
		}
	}
	if _, out, _ := run(t, filepath.Join(bin, "worker"), "--help"); strings.Contains(out, "QUEEN_LISTEN ") {
		t.Error("the worker's help lists QUEEN_LISTEN, which only the webhook reads")
	}
}

var versionLine = regexp.MustCompile(`^(\S+) (\S+) \(commit (\S+), (go\S+)\)\n$`)

func TestBinariesSayWhichBuildTheyAre(t *testing.T) {
	t.Parallel()
	for name := range binaryRoles {
		code, out, errOut := run(t, filepath.Join(bin, name), "--version")
		m := versionLine.FindStringSubmatch(out)
		if code != 0 || errOut != "" || m == nil || m[1] != name || m[2] != version.Version || m[4] != version.Get().GoVersion {
			t.Errorf("%s --version: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
	}
	// A release build names its version and commit with -ldflags.
	dir := t.TempDir()
	pkg := "github.com/queen-app/queen-app/internal/version"
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"-ldflags", "-X "+pkg+".Version=9.8.7 -X "+pkg+".Commit=0123abcd", "./cmd/webhook")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags: %v\n%s", err, out)
	}
	_, out, _ := run(t, filepath.Join(dir, "webhook"), "--version")
	if want := fmt.Sprintf("webhook 9.8.7 (commit 0123abcd, %s)\n", version.Get().GoVersion); out != want {
		t.Errorf("--version of the -ldflags build: %q, want %q", out, want)
	}
}

// /metrics of both binaries names the build, as --version does.
func TestMetricsCarryBuildInfo(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, nil)
	f.both()
	_, out, _ := run(t, filepath.Join(bin, "webhook"), "--version")
	m := versionLine.FindStringSubmatch(out)
	want := fmt.Sprintf(`queen_build_info{commit=%q,goversion=%q,version=%q} 1`, m[3], m[4], m[2])
	for name, url := range map[string]string{"webhook": f.apiURL, "worker": f.workerURL} {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(readAll(resp), want+"\n") {
			t.Errorf("%s /metrics lacks %s", name, want)
		}
	}
}

// Every line either binary writes, go-redis's and asynq's included, is a
// JSON object, and no secret is in any.
func TestLogsAreJSONLinesWithoutSecrets(t *testing.T) {
	t.Parallel()
	f := newFreeStack(t, nil)
	hook := f.webhook()
	work := f.startWorker(nil)
	f.acceptRow(7)
	f.closedPR(7, 70, false)
	id := f.deliverPR(7, 70, "closed", false, "d-logs")
	f.waitDone(id)
	// Redis goes away: go-redis and asynq have something to say.
	f.redis.Kill()
	eventually(t, frLimit, "go-redis logs a failed dial", func() bool {
		_, _ = http.Get(f.apiURL + "/readyz")
		_, _ = http.Get(f.workerURL + "/readyz")
		return strings.Contains(hook.out.String(), `"component":"go-redis"`) &&
			strings.Contains(work.out.String(), `"component":"go-redis"`)
	})
	f.redis.Restart()
	hook.stop()
	work.stop()
	for _, p := range []*proc{hook, work} {
		out := p.out.String()
		for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			var obj map[string]any
			if err := json.Unmarshal([]byte(l), &obj); err != nil {
				t.Errorf("%s line %d is not JSON: %q", p.name, i+1, l)
			}
		}
		for _, s := range []string{secret, apiToken, exToken, strings.Split(string(f.gh.Key()), "\n")[1]} {
			if strings.Contains(out, s) {
				t.Errorf("%s logged a secret", p.name)
			}
		}
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
