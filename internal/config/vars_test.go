package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/testkit"
	"github.com/queen-app/queen-app/internal/workerserver"
)

// full is a configuration every role loads, export push included, with
// the key as a file.
func full(t *testing.T) map[string]string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(key, []byte(testkit.RSAKeyPEM(t, 1024)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hook, api := testkit.SelfSigned(t, dir, "hook", "localhost"), testkit.SelfSigned(t, dir, "api", "localhost")
	return map[string]string{
		"QUEEN_TLS_CERT_FILE":         hook.CertFile,
		"QUEEN_TLS_KEY_FILE":          hook.KeyFile,
		"QUEEN_API_TLS_CERT_FILE":     api.CertFile,
		"QUEEN_API_TLS_KEY_FILE":      api.KeyFile,
		"QUEEN_CA_FILE":               api.CertFile,
		"QUEEN_REDIS_URL":             "redis://:pw-redis-0123456789@127.0.0.1:6379/0",
		"GITHUB_APP_ID":               "42",
		"GITHUB_APP_PRIVATE_KEY_FILE": key,
		"GITHUB_WEBHOOK_SECRET":       "hook-secret-0123456789",
		"QUEEN_API_TOKEN":             "api-token-0123456789",
		"QUEEN_EXPORT_URL":            "https://export.example/queen/export",
		"QUEEN_EXPORT_TOKEN":          "export-token-0123456789",
		"QUEEN_EXPORT_REPO":           "hive/t27",
		"GITHUB_API_URL":              "https://ghe.example/api/v3/",
		"QUEEN_BASE_BRANCH":           "main",
	}
}

func without(m map[string]string, names ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !slices.Contains(names, k) {
			out[k] = v
		}
	}
	return out
}

// load loads role from m the way its binary does.
func load(role config.Role, m map[string]string, getenv func(string) string) (*config.Config, error) {
	if getenv == nil {
		getenv = func(k string) string { return m[k] }
	}
	if role == config.Deliveries {
		return config.LoadApp(getenv)
	}
	return config.Load(role, getenv)
}

var roles = []config.Role{config.Webhook, config.Worker, config.CLI, config.Deliveries, config.LedgerTool}

// The table is the list of what is read: every variable Load, LoadApp and
// the worker's options read is in it, and each of its variables is read.
func TestVarsAreExactlyWhatIsRead(t *testing.T) {
	read := map[string]bool{}
	env := full(t)
	pemData, _ := os.ReadFile(env["GITHUB_APP_PRIVATE_KEY_FILE"])
	withPEM := without(env, "GITHUB_APP_PRIVATE_KEY_FILE")
	withPEM["GITHUB_APP_PRIVATE_KEY"] = string(pemData)
	for _, m := range []map[string]string{env, withPEM} {
		getenv := func(k string) string { read[k] = true; return m[k] }
		for _, role := range roles {
			if _, err := load(role, m, getenv); err != nil {
				t.Fatalf("%v: %v", role, err)
			}
		}
		if _, err := workerserver.OptionsFromEnv(getenv); err != nil {
			t.Fatal(err)
		}
	}
	listed := map[string]bool{}
	for _, v := range config.Vars {
		if listed[v.Name] {
			t.Errorf("%s is listed twice", v.Name)
		}
		listed[v.Name] = true
		if !read[v.Name] {
			t.Errorf("%s is listed but nothing reads it", v.Name)
		}
	}
	var missing []string
	for name := range read {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("read but missing from config.Vars: %s", strings.Join(missing, ", "))
	}
}

// A variable marked required stops its role naming it when unset; every
// other variable may be left out.
func TestRequiredColumnIsWhatLoadRefuses(t *testing.T) {
	env := full(t)
	for _, role := range roles {
		if _, err := load(role, env, nil); err != nil {
			t.Fatalf("%v with everything set: %v", role, err)
		}
		for _, v := range config.Vars {
			_, err := load(role, without(env, v.Name), nil)
			var bad *config.Error
			switch {
			case v.RequiredBy(role) && (!errors.As(err, &bad) || bad.Var != v.Name):
				t.Errorf("%v without %s: %v; the table says it is required", role, v.Name, err)
			case !v.RequiredBy(role) && err != nil:
				t.Errorf("%v without %s: %v; the table says it is optional", role, v.Name, err)
			}
			if v.RequiredWith != "" {
				if _, err := load(role, without(env, v.Name, v.RequiredWith), nil); err != nil {
					t.Errorf("%v without %s and %s: %v; it is required only with %s", role, v.Name, v.RequiredWith, err, v.RequiredWith)
				}
			}
		}
	}
}

// Setting a variable to the default the help shows changes nothing.
func TestDefaultsAreTheEffectiveOnes(t *testing.T) {
	env := full(t)
	for _, role := range roles {
		for _, v := range config.Vars {
			def := v.DefaultFor(role)
			if def == "" {
				continue
			}
			if strings.HasPrefix(v.Name, "QUEEN_WORKER_") {
				continue // worker options: below
			}
			unset, err1 := load(role, without(env, v.Name), nil)
			m := without(env, v.Name)
			m[v.Name] = def
			set, err2 := load(role, m, nil)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(unset, set) {
				t.Errorf("%v: %s=%s is not what an unset %s loads (%v, %v)", role, v.Name, def, v.Name, err1, err2)
			}
		}
	}
	for _, v := range config.Vars {
		if v.Name == "QUEEN_WORKER_CONCURRENCY" && v.Default != strconv.Itoa(workerserver.DefaultConcurrency) {
			t.Errorf("QUEEN_WORKER_CONCURRENCY default %s, the worker's is %d", v.Default, workerserver.DefaultConcurrency)
		}
	}
}

func TestEachVarNamesItsReaders(t *testing.T) {
	names := map[string]bool{}
	for _, v := range config.Vars {
		names[v.Name] = true
	}
	for _, v := range config.Vars {
		if len(v.Roles) == 0 || v.Meaning == "" {
			t.Errorf("%s: no role reads it or no meaning", v.Name)
		}
		for _, r := range v.Required {
			if !slices.Contains(v.Roles, r) {
				t.Errorf("%s: required by %v, which does not read it", v.Name, r)
			}
		}
		if v.RequiredWith != "" && !names[v.RequiredWith] {
			t.Errorf("%s: required with %s, which is not a variable", v.Name, v.RequiredWith)
		}
	}
}

func TestWriteVarsMarksRequiredAndShowsDefaults(t *testing.T) {
	var b strings.Builder
	if err := config.WriteVars(&b, config.Worker); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		f := strings.Fields(l)
		lines[f[0]] = strings.Join(f, " ")
	}
	for name, want := range map[string]string{
		"QUEEN_REDIS_URL":    "QUEEN_REDIS_URL * the Redis holding the queue",
		"QUEEN_API_LISTEN":   "default :8082",
		"QUEEN_EXPORT_TOKEN": "QUEEN_EXPORT_TOKEN bearer token of the export API; at least 16 characters, in every binary given it; required with QUEEN_EXPORT_URL",
	} {
		if !strings.Contains(lines[name], want) {
			t.Errorf("%s: %q, want it to contain %q", name, lines[name], want)
		}
	}
	if _, ok := lines["GITHUB_WEBHOOK_SECRET"]; ok {
		t.Error("the worker's list shows the webhook secret, which it does not read")
	}
}

func TestSecretsNameEverySecretValue(t *testing.T) {
	env := full(t)
	c, err := config.Load(config.Worker, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Secrets(), " ")
	for _, s := range []string{"pw-redis-0123456789", "api-token-0123456789", "export-token-0123456789", "hook-secret-0123456789"} {
		if !strings.Contains(got, s) {
			t.Errorf("Secrets() %q lacks %s", got, s)
		}
	}
}
