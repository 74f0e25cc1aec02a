package deploy

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/workerserver"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

type composeService struct {
	Image           string            `json:"image"`
	Command         []string          `json:"command"`
	EnvFile         string            `json:"env_file"`
	Environment     map[string]string `json:"environment"`
	Secrets         []string          `json:"secrets"`
	Volumes         []string          `json:"volumes"`
	Ports           []string          `json:"ports"`
	ReadOnly        bool              `json:"read_only"`
	Tmpfs           []string          `json:"tmpfs"`
	StopGracePeriod string            `json:"stop_grace_period"`
	Profiles        []string          `json:"profiles"`
	Restart         string            `json:"restart"`
	Build           struct {
		Context    string `json:"context"`
		Dockerfile string `json:"dockerfile"`
	} `json:"build"`
	Healthcheck struct {
		Test     []string `json:"test"`
		Interval string   `json:"interval"`
		Timeout  string   `json:"timeout"`
		Retries  int      `json:"retries"`
	} `json:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
}

type compose struct {
	Services map[string]composeService `json:"services"`
	Secrets  map[string]struct {
		File string `json:"file"`
	} `json:"secrets"`
	Volumes map[string]any `json:"volumes"`
}

func composeFile(t *testing.T) compose {
	t.Helper()
	var c compose
	if err := yaml.Unmarshal([]byte(readFile(t, "compose.yaml")), &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// envExample is deploy/queen-app.env.example: required (uncommented) and
// documented (commented, with the default) variables.
type envLine struct {
	value     string
	commented bool
}

func envExample(t *testing.T) map[string]envLine {
	t.Helper()
	out := map[string]envLine{}
	re := regexp.MustCompile(`^(#\s*)?([A-Z][A-Z0-9_]+)=(.*)$`)
	for _, l := range strings.Split(readFile(t, "queen-app.env.example"), "\n") {
		m := re.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if _, dup := out[m[2]]; dup {
			t.Errorf("queen-app.env.example lists %s twice", m[2])
		}
		out[m[2]] = envLine{value: m[3], commented: m[1] != ""}
	}
	return out
}

// codeVariables are the environment variables the code names: the string
// literals QUEEN_* and GITHUB_* of the non-test sources.
func codeVariables(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	re := regexp.MustCompile(`"((?:QUEEN|GITHUB)_[A-Z0-9_]+)"`)
	for _, root := range []string{"../internal", "../cmd"} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestEnvExampleListsEveryVariable(t *testing.T) {
	code := codeVariables(t)
	example := envExample(t)
	for v := range code {
		_, listed := example[v]
		switch {
		case v == "GITHUB_APP_PRIVATE_KEY":
			if listed {
				t.Errorf("queen-app.env.example sets %s: the key must be a file", v)
			}
		case !listed:
			t.Errorf("the code reads %s; queen-app.env.example does not list it", v)
		}
	}
	for v := range example {
		if !code[v] {
			t.Errorf("queen-app.env.example lists %s, which no binary reads", v)
		}
	}
}

// TestEnvExampleDefaultsAreTheDefaults: setting a variable to the value the
// example shows as its default changes nothing in any binary's config.
func TestEnvExampleDefaultsAreTheDefaults(t *testing.T) {
	c := composeFile(t)
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, []byte(testKeyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"QUEEN_REDIS_URL": "redis://127.0.0.1:6379/0", "GITHUB_APP_ID": testAppID,
		"GITHUB_APP_PRIVATE_KEY_FILE": keyFile, "GITHUB_WEBHOOK_SECRET": testWebhookSecret, "QUEEN_API_TOKEN": testAPIToken,
	}
	get := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	checked := 0
	for v, l := range envExample(t) {
		if !l.commented {
			continue
		}
		if set, ok := c.Services["webhook"].Environment[v]; ok { // set by compose for both
			if l.value != set {
				t.Errorf("queen-app.env.example shows %s=%s, compose.yaml sets %s", v, l.value, set)
			}
			continue
		}
		if l.value == "" {
			continue // no single default (derived, per binary or unset)
		}
		checked++
		env := map[string]string{v: l.value}
		for k, x := range base {
			env[k] = x
		}
		for _, role := range []config.Role{config.Webhook, config.Worker, config.CLI} {
			want, err := config.Load(role, get(base))
			if err != nil {
				t.Fatal(err)
			}
			got, err := config.Load(role, get(env))
			if err != nil {
				t.Errorf("%s=%s: %v", v, l.value, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%s is not the default: it changes the config of role %d", v, l.value, role)
			}
		}
		wo, err1 := workerOptions(get(base))
		go2, err2 := workerOptions(get(env))
		if err1 != nil || err2 != nil || !reflect.DeepEqual(wo, go2) {
			t.Errorf("%s=%s is not the worker's default (%v, %v)", v, l.value, err1, err2)
		}
	}
	if checked < 10 {
		t.Errorf("only %d defaults checked; the example should show each default", checked)
	}
}

// workerOptions are the worker's options as it runs: workerserver.Run takes a zero
// concurrency as DefaultConcurrency.
func workerOptions(getenv func(string) string) (workerserver.Options, error) {
	o, err := workerserver.OptionsFromEnv(getenv)
	if o.Concurrency == 0 {
		o.Concurrency = workerserver.DefaultConcurrency
	}
	return o, err
}

func TestComposeRunsThePairOnOneHost(t *testing.T) {
	c := composeFile(t)
	ch := queenChart(t)
	repo, _ := lookup(ch.Values, "image.repository").(string)
	wantImage := repo + ":" + ch.Metadata.AppVersion

	r, ok := c.Services["redis"]
	if !ok {
		t.Fatal("compose.yaml has no redis service")
	}
	cmd := strings.Join(r.Command, " ")
	for _, want := range []string{"--maxmemory-policy noeviction", "--appendonly yes"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis runs %q, want %s", cmd, want)
		}
	}
	if !hasVolume(c, r, "/data") {
		t.Error("redis keeps /data on no named volume: its AOF would not survive the container")
	}

	if _, err := os.Stat("queen-app.env.example"); err != nil {
		t.Fatal(err)
	}
	example := envExample(t)
	for _, name := range []string{"webhook", "worker"} {
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("compose.yaml has no %s service", name)
		}
		if s.Image != wantImage {
			t.Errorf("%s runs image %s, want the chart's %s", name, s.Image, wantImage)
		}
		if s.EnvFile != "queen-app.env" {
			t.Errorf("%s reads env_file %q, want queen-app.env (from queen-app.env.example)", name, s.EnvFile)
		}
		if !s.ReadOnly || !slices.Contains(s.Tmpfs, "/tmp") {
			t.Errorf("%s: want a read-only root with a /tmp tmpfs", name)
		}
		g, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil || g <= workerserver.ShutdownTimeout || g <= serve.ShutdownTimeout {
			t.Errorf("%s: stop_grace_period %q does not outlast the graceful shutdown", name, s.StopGracePeriod)
		}
		u, err := url.Parse(s.Environment["QUEEN_REDIS_URL"])
		if err != nil || u.Hostname() != "redis" {
			t.Errorf("%s: QUEEN_REDIS_URL %q is not the compose Redis", name, s.Environment["QUEEN_REDIS_URL"])
		}

		// The key and every credential the service needs: compose secret
		// files named by *_FILE variables, never environment values.
		want := []string{"GITHUB_APP_PRIVATE_KEY_FILE"}
		if name == "webhook" {
			want = append(want, "GITHUB_WEBHOOK_SECRET_FILE", "QUEEN_API_TOKEN_FILE")
		}
		for _, v := range want {
			if _, ok := s.Environment[v]; !ok {
				t.Errorf("%s: %s is not set", name, v)
			}
		}
		for _, v := range []string{"GITHUB_APP_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET", "QUEEN_API_TOKEN"} {
			if _, ok := s.Environment[v]; ok {
				t.Errorf("%s sets %s; the secret must be a file", name, v)
			}
			if l, ok := example[v]; ok && !l.commented {
				t.Errorf("queen-app.env.example asks for %s; compose.yaml mounts it as a file", v)
			}
		}
		env := map[string]string{}
		for v, l := range example {
			if !l.commented {
				env[v] = map[string]string{"GITHUB_APP_ID": testAppID}[v]
			}
		}
		dir := t.TempDir()
		for k, v := range s.Environment {
			env[k] = v
			if !strings.HasSuffix(k, "_FILE") {
				continue
			}
			secret := strings.TrimPrefix(v, "/run/secrets/")
			if _, ok := c.Secrets[secret]; !ok || secret == v || !slices.Contains(s.Secrets, secret) {
				t.Errorf("%s: %s %q is not a compose secret of the service", name, k, v)
				continue
			}
			content := testValueFor(secret) + "\n" // as echo or an editor leaves it
			if k == "GITHUB_APP_PRIVATE_KEY_FILE" {
				content = testKeyPEM
			}
			env[k] = filepath.Join(dir, secret)
			if err := os.WriteFile(env[k], []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		getenv := func(k string) string { return env[k] }
		role := map[string]config.Role{"webhook": config.Webhook, "worker": config.Worker}[name]
		cfg, err := config.Load(role, getenv)
		if err != nil {
			t.Fatalf("%s would not start: %v", name, err)
		}
		if name == "webhook" && (cfg.WebhookSecret != testValueFor("webhook-secret") || cfg.APIToken != testValueFor("api-token")) {
			t.Errorf("webhook: secret %q, token %q; want the mounted files' contents", cfg.WebhookSecret, cfg.APIToken)
		}
		var published []string
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			published = append(published, ":"+parts[len(parts)-1])
			if parts[len(parts)-1] != strings.TrimPrefix(config.DefaultListen, ":") && !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s beyond this host: only the webhook receiver is public", name, p)
			}
		}
		wantPorts := []string{cfg.APIListen}
		if name == "webhook" {
			wantPorts = append(wantPorts, cfg.Listen)
		}
		slices.Sort(published)
		slices.Sort(wantPorts)
		if !slices.Equal(published, wantPorts) {
			t.Errorf("%s publishes %v, the binary listens on %v", name, published, wantPorts)
		}
		if name == "worker" {
			o, err := workerserver.OptionsFromEnv(getenv)
			if err != nil {
				t.Fatal(err)
			}
			if !hasVolume(c, s, o.CacheDir) {
				t.Errorf("worker: its git cache %q is on no named volume", o.CacheDir)
			}
		}
	}
}

// hasVolume reports whether s mounts a named volume of c at dir.
func hasVolume(c compose, s composeService, dir string) bool {
	for _, v := range s.Volumes {
		name, at, _ := strings.Cut(v, ":")
		if _, ok := c.Volumes[name]; ok && strings.TrimSuffix(at, ":rw") == dir {
			return true
		}
	}
	return false
}

// TestComposeBuildsAndChecksReadiness: without the published image compose
// builds this tree's Dockerfile; each binary is healthy only while its
// /readyz answers 200 on the port it listens on, with the image's busybox
// wget; both start after Redis is healthy.
func TestComposeBuildsAndChecksReadiness(t *testing.T) {
	c := composeFile(t)
	if len(builtBinaries(t)) == 0 {
		t.Fatal("the Dockerfile builds nothing")
	}
	if !slices.ContainsFunc(finalStage(dockerfile(t)), func(in instruction) bool {
		return in.op == "FROM" && strings.Contains(in.args, "alpine")
	}) {
		t.Fatal("the image is not Alpine: busybox's wget may be missing for the healthcheck")
	}
	for _, name := range []string{"webhook", "worker"} {
		s := c.Services[name]
		if s.Build.Context != ".." || s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("%s: build %+v; want context .. and the repository's Dockerfile", name, s.Build)
		}
		if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		cfg, err := config.Load(map[string]config.Role{"webhook": config.Webhook, "worker": config.Worker}[name], func(k string) string {
			return map[string]string{"QUEEN_REDIS_URL": s.Environment["QUEEN_REDIS_URL"], "GITHUB_APP_ID": testAppID,
				"GITHUB_APP_PRIVATE_KEY": testKeyPEM, "GITHUB_WEBHOOK_SECRET": testWebhookSecret, "QUEEN_API_TOKEN": testAPIToken}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1" + cfg.APIListen + metrics.ReadyzPath}
		if !slices.Equal(s.Healthcheck.Test, want) {
			t.Errorf("%s: healthcheck %q; want %q", name, s.Healthcheck.Test, want)
		}
		if s.Healthcheck.Interval == "" || s.Healthcheck.Timeout == "" || s.Healthcheck.Retries == 0 {
			t.Errorf("%s: healthcheck without interval, timeout or retries: %+v", name, s.Healthcheck)
		}
		if s.DependsOn["redis"].Condition != "service_healthy" {
			t.Errorf("%s: starts without waiting for a healthy Redis: %+v", name, s.DependsOn)
		}
	}
}

// The ledger is created by a one-shot service run once, on the Redis the
// pair uses, and never by a routine `up`.
func TestComposeInitsTheLedgerOnlyWhenAsked(t *testing.T) {
	c := composeFile(t)
	s, ok := c.Services["ledger-init"]
	if !ok {
		t.Fatal("compose.yaml has no ledger-init service")
	}
	if !slices.Equal(s.Command, []string{"queenctl", "ledger", "init"}) || s.Restart != "no" {
		t.Errorf("ledger-init runs %q restart %q; want queenctl ledger init, once", s.Command, s.Restart)
	}
	if !slices.Equal(s.Profiles, []string{"init"}) {
		t.Errorf("ledger-init profiles %q: want only the init profile, so `up` never runs it", s.Profiles)
	}
	if got, want := s.Environment["QUEEN_REDIS_URL"], c.Services["webhook"].Environment["QUEEN_REDIS_URL"]; got != want {
		t.Errorf("ledger-init's Redis %q, the webhook's %q", got, want)
	}
	if s.DependsOn["redis"].Condition != "service_healthy" {
		t.Errorf("ledger-init starts without waiting for a healthy Redis: %+v", s.DependsOn)
	}
	if _, err := config.Load(config.LedgerTool, func(k string) string { return s.Environment[k] }); err != nil {
		t.Errorf("queenctl ledger init's configuration from compose: %v", err)
	}
}
