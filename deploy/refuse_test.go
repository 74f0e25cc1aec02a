package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/config"
)

// binarySays is the line the worker's config gives for env (only the
// variables given, the rest unset): what the chart must say in the same words.
func binarySays(t *testing.T, env map[string]string, variable string) string {
	t.Helper()
	_, err := config.Load(config.Worker, func(k string) string { return env[k] })
	if err == nil {
		t.Fatalf("the binary takes %v", env)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if problem, ok := strings.CutPrefix(line, variable+": "); ok {
			return problem
		}
	}
	t.Fatalf("the binary's error %q names no %s", err, variable)
	return ""
}

// Settings the binaries refuse at start are refused at render, with the
// binary's words and the variable the value becomes: a release that renders
// is one that starts.
func TestChartRefusesWhatTheBinariesRefuseInTheirWords(t *testing.T) {
	base := inlineValues()
	export := with(with(with(base, "export.repo", "o/r"), "export.token", "export-token-0123456789"), "export.url", "https://x/")
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	notAKey := "-----BEGIN RSA PRIVATE KEY-----\nnot base64 at all!\n-----END RSA PRIVATE KEY-----\n"
	if err := os.WriteFile(keyFile, []byte(notAKey), 0o600); err != nil {
		t.Fatal(err)
	}
	pub := "-----BEGIN PUBLIC KEY-----\nMFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAK\n-----END PUBLIC KEY-----\n"
	pubFile := filepath.Join(t.TempDir(), "pub.pem")
	if err := os.WriteFile(pubFile, []byte(pub), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		vals     map[string]any
		variable string
		env      map[string]string
	}{
		{"http GitHub off loopback", with(base, "github.apiURL", "http://ghe.example.com/api/v3/"),
			"GITHUB_API_URL", map[string]string{"GITHUB_API_URL": "http://ghe.example.com/api/v3/"}},
		{"http git off loopback", with(base, "github.gitURL", "http://ghe.example.com/"),
			"GITHUB_GIT_URL", map[string]string{"GITHUB_GIT_URL": "http://ghe.example.com/"}},
		{"http export off loopback", with(export, "export.url", "http://export.queen.svc/queen/export"),
			"QUEEN_EXPORT_URL", map[string]string{"QUEEN_EXPORT_URL": "http://export.queen.svc/queen/export"}},
		{"base branch a..b", with(base, "settings.baseBranch", "a..b"),
			"QUEEN_BASE_BRANCH", map[string]string{"QUEEN_BASE_BRANCH": "a..b"}},
		{"base branch x.lock", with(base, "settings.baseBranch", "release/x.lock"),
			"QUEEN_BASE_BRANCH", map[string]string{"QUEEN_BASE_BRANCH": "release/x.lock"}},
		{"base branch with a space", with(base, "settings.baseBranch", "my branch"),
			"QUEEN_BASE_BRANCH", map[string]string{"QUEEN_BASE_BRANCH": "my branch"}},
		{"Redis user without a password", with(base, "redis.username", "queen"),
			"QUEEN_REDIS_URL", map[string]string{"QUEEN_REDIS_URL": "redis://queen@redis.queen.svc:6379/0"}},
		{"Redis URL user without a password", with(without(base, "redis.host"), "redis.url", "redis://queen@r:6379/0"),
			"QUEEN_REDIS_URL", map[string]string{"QUEEN_REDIS_URL": "redis://queen@r:6379/0"}},
		{"an inline key that is no key", with(base, "github.privateKey", notAKey),
			"GITHUB_APP_PRIVATE_KEY_FILE", map[string]string{"GITHUB_APP_PRIVATE_KEY_FILE": keyFile}},
		{"an inline public key", with(base, "github.privateKey", pub),
			"GITHUB_APP_PRIVATE_KEY_FILE", map[string]string{"GITHUB_APP_PRIVATE_KEY_FILE": pubFile}},
		{"an API token of two lines", with(base, "api.token", "api-token-0123456789\nmore"),
			"QUEEN_API_TOKEN", map[string]string{"QUEEN_API_TOKEN": "api-token-0123456789\nmore"}},
		{"an export token with a space", with(export, "export.token", "export token 0123456789"),
			"QUEEN_EXPORT_TOKEN", map[string]string{"QUEEN_EXPORT_TOKEN": "export token 0123456789"}},
	} {
		words := binarySays(t, tc.env, tc.variable)
		_, err := renderErr(t, tc.vals)
		if err == nil || !strings.Contains(err.Error(), "("+tc.variable+"): "+words) {
			t.Errorf("%s: render error %v; want the binary's %q naming %s", tc.name, err, words, tc.variable)
		}
	}
}

func TestChartTakesWhatTheBinariesTake(t *testing.T) {
	base := inlineValues()
	for name, vals := range map[string]map[string]any{
		"http on loopback":            with(base, "github.apiURL", "http://127.0.0.1:8080/api/v3/"),
		"http with allowInsecureURLs": with(with(base, "github.apiURL", "http://ghe.internal/api/v3/"), "flags.allowInsecureURLs", true),
		"a nested branch":             with(base, "settings.baseBranch", "release/2026.12"),
		"a Redis user with a password": with(with(base, "redis.username", "queen"), "redis.existingSecret",
			map[string]any{"name": "queen-app-redis"}),
		"the App's PEM key": with(base, "github.privateKey", testKeyPEM),
	} {
		if _, err := renderErr(t, vals); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// --set redis.existingSecret=null once rendered into a nil pointer error
// that named no value.
func TestANullExistingSecretIsNamed(t *testing.T) {
	for _, at := range []string{"github", "api", "export", "redis", "redis.sentinel"} {
		_, err := renderErr(t, with(inlineValues(), at+".existingSecret", nil))
		where := "/" + strings.ReplaceAll(at, ".", "/")
		if err == nil || !strings.Contains(err.Error(), "existingSecret") || !strings.Contains(err.Error(), "at '"+where) ||
			strings.Contains(err.Error(), "nil pointer") {
			t.Errorf("%s.existingSecret=null: %v; want the schema naming %s's existingSecret", at, err, where)
		}
	}
}
