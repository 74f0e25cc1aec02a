package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/redisconn"
)

// keyPEM is a real RSA key: config parses the key it is given.
var keyPEM = func() string {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}()

// keyBody is a piece of the key's base64 body, to look for in errors.
var keyBody = strings.Split(keyPEM, "\n")[2]

// exportTok and redisPW are secrets long enough to be taken.
const (
	exportTok = "export-token-value-77ab"
	redisPW   = "redis-password-0123"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func base() map[string]string {
	return map[string]string{
		"QUEEN_REDIS_URL":        "redis://127.0.0.1:6379/0",
		"GITHUB_APP_ID":          "42",
		"GITHUB_APP_PRIVATE_KEY": keyPEM,
		"GITHUB_WEBHOOK_SECRET":  "s3cret-value-5e0c",
		"QUEEN_API_TOKEN":        "api-token-value-91d4",
	}
}

func TestDefaults(t *testing.T) {
	c, err := Load(Webhook, env(base()))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":8080" || c.APIListen != ":8081" || c.BaseBranch != "master" ||
		c.APIURL != "https://api.github.com/" || c.GraphQLURL != "https://api.github.com/graphql" ||
		c.GitURL != "https://github.com/" || c.ReevaluateDelay != 5*time.Second ||
		c.SweepInterval != 10*time.Minute || c.ExportSweepInterval != 5*time.Minute ||
		c.RedeliverInterval != 15*time.Minute || c.AuditMaxLen != 1_000_000 || c.APIMaxWatchers != 256 ||
		c.FreeClosedPR || c.ReleaseDeadClaims || c.ReviewFirst || c.ExportEnabled() {
		t.Fatalf("defaults differ from the design: %+v", c)
	}
}

func TestEachBadValueNamesItsVariable(t *testing.T) {
	cases := []struct {
		role     Role
		set      map[string]string
		unset    []string
		variable string
	}{
		{Webhook, nil, []string{"QUEEN_REDIS_URL"}, "QUEEN_REDIS_URL"},
		{Webhook, map[string]string{"QUEEN_REDIS_URL": "http://x"}, nil, "QUEEN_REDIS_URL"},
		{Worker, map[string]string{"QUEEN_REDIS_URL": "redis+sentinel://s1:26379,s2:26379"}, nil, "QUEEN_REDIS_URL"},
		{Worker, map[string]string{"QUEEN_REDIS_URL": "redis+cluster://n1:6379,n2:6379/1"}, nil, "QUEEN_REDIS_URL"},
		{Webhook, map[string]string{"QUEEN_REDIS_URL": "redis://h:6379,h2:6379"}, nil, "QUEEN_REDIS_URL"},
		{Webhook, map[string]string{"QUEEN_REDIS_URL": "redis+cluster://n1:x"}, nil, "QUEEN_REDIS_URL"},
		{Webhook, map[string]string{"QUEEN_REDIS_URL": "redis://h/db"}, nil, "QUEEN_REDIS_URL"},
		{Webhook, map[string]string{"QUEEN_REDIS_URL": "redis://redis-pw-value@h:6379"}, nil, "QUEEN_REDIS_URL"},
		{Webhook, map[string]string{"QUEEN_REDIS_URL": "redis://:redis-pw-value-0123@h:6379", "QUEEN_REDIS_PASSWORD": "redis-pw-value-0123"}, nil, "QUEEN_REDIS_PASSWORD"},
		{Worker, map[string]string{"QUEEN_REDIS_SENTINEL_PASSWORD": "redis-pw-value-0123"}, nil, "QUEEN_REDIS_SENTINEL_PASSWORD"},
		// queenctl needs no Redis, but a URL it is given must still be sound.
		{CLI, map[string]string{"QUEEN_REDIS_URL": "redis+sentinel://s1:26379"}, nil, "QUEEN_REDIS_URL"},
		{Webhook, nil, []string{"GITHUB_APP_ID"}, "GITHUB_APP_ID"},
		{Webhook, map[string]string{"GITHUB_APP_ID": "abc"}, nil, "GITHUB_APP_ID"},
		{Webhook, nil, []string{"GITHUB_APP_PRIVATE_KEY"}, "GITHUB_APP_PRIVATE_KEY_FILE"},
		{Webhook, map[string]string{"GITHUB_APP_PRIVATE_KEY": "not a key"}, nil, "GITHUB_APP_PRIVATE_KEY"},
		{Webhook, map[string]string{"GITHUB_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"}, nil, "GITHUB_APP_PRIVATE_KEY"},
		{Webhook, map[string]string{"GITHUB_API_URL": "https://user:pass@ghe.example/api/v3/"}, nil, "GITHUB_API_URL"},
		{Worker, map[string]string{"GITHUB_GIT_URL": "https://x-access-token:t@github.com/"}, nil, "GITHUB_GIT_URL"},
		{Webhook, map[string]string{"QUEEN_LISTEN": ":abc"}, nil, "QUEEN_LISTEN"},
		{Webhook, map[string]string{"QUEEN_API_LISTEN": "8081"}, nil, "QUEEN_API_LISTEN"},
		{Webhook, nil, []string{"GITHUB_WEBHOOK_SECRET"}, "GITHUB_WEBHOOK_SECRET"},
		{Webhook, map[string]string{"GITHUB_WEBHOOK_SECRET": "   "}, nil, "GITHUB_WEBHOOK_SECRET"},
		{Webhook, nil, []string{"QUEEN_API_TOKEN"}, "QUEEN_API_TOKEN"},
		{Webhook, map[string]string{"QUEEN_FREE_CLOSED_PR": "yes"}, nil, "QUEEN_FREE_CLOSED_PR"},
		{Webhook, map[string]string{"QUEEN_RELEASE_DEAD_CLAIMS": "enabled"}, nil, "QUEEN_RELEASE_DEAD_CLAIMS"},
		{Webhook, map[string]string{"QUEEN_REEVALUATE_DELAY": "5"}, nil, "QUEEN_REEVALUATE_DELAY"},
		{Webhook, map[string]string{"QUEEN_AUDIT_MAXLEN": "-1"}, nil, "QUEEN_AUDIT_MAXLEN"},
		{Webhook, map[string]string{"QUEEN_API_MAX_WATCHERS": "0"}, nil, "QUEEN_API_MAX_WATCHERS"},
		{Webhook, map[string]string{"GITHUB_API_URL": "ftp://x"}, nil, "GITHUB_API_URL"},
		{Worker, map[string]string{"QUEEN_EXPORT_URL": "https://export.example/queen/export", "QUEEN_EXPORT_REPO": "hive/t27"}, nil, "QUEEN_EXPORT_TOKEN"},
		{Worker, map[string]string{"QUEEN_EXPORT_URL": "https://e.example/x", "QUEEN_EXPORT_TOKEN": exportTok}, nil, "QUEEN_EXPORT_REPO"},
		{Worker, map[string]string{"QUEEN_EXPORT_REPO": "noslash"}, nil, "QUEEN_EXPORT_REPO"},
		{CLI, nil, []string{"QUEEN_API_TOKEN"}, "QUEEN_API_TOKEN"},
		// Secrets too short to resist guessing.
		{Webhook, map[string]string{"GITHUB_WEBHOOK_SECRET": "short-secret-15"}, nil, "GITHUB_WEBHOOK_SECRET"},
		{Webhook, map[string]string{"GITHUB_WEBHOOK_SECRET_PREVIOUS": "short-secret-15"}, nil, "GITHUB_WEBHOOK_SECRET_PREVIOUS"},
		{Webhook, map[string]string{"QUEEN_API_TOKEN": "short-token-15c"}, nil, "QUEEN_API_TOKEN"},
		{CLI, map[string]string{"QUEEN_API_TOKEN": "short-token-15c"}, nil, "QUEEN_API_TOKEN"},
		// A base branch git would refuse.
		{Worker, map[string]string{"QUEEN_BASE_BRANCH": "release..1"}, nil, "QUEEN_BASE_BRANCH"},
		{Worker, map[string]string{"QUEEN_BASE_BRANCH": "-master"}, nil, "QUEEN_BASE_BRANCH"},
		{Webhook, map[string]string{"QUEEN_BASE_BRANCH": "main branch"}, nil, "QUEEN_BASE_BRANCH"},
		// Plain http off loopback, without QUEEN_ALLOW_INSECURE_URLS.
		{Webhook, map[string]string{"GITHUB_API_URL": "http://ghe.example.com/api/v3/"}, nil, "GITHUB_API_URL"},
		{Worker, map[string]string{"GITHUB_GRAPHQL_URL": "http://ghe.example.com/api/graphql"}, nil, "GITHUB_GRAPHQL_URL"},
		{Worker, map[string]string{"GITHUB_GIT_URL": "http://10.0.0.7/"}, nil, "GITHUB_GIT_URL"},
		{Worker, map[string]string{"QUEEN_EXPORT_URL": "http://export.example/x", "QUEEN_EXPORT_TOKEN": exportTok, "QUEEN_EXPORT_REPO": "hive/t27"}, nil, "QUEEN_EXPORT_URL"},
		{Worker, map[string]string{"GITHUB_API_URL": "http://127.0.0.1.example.com/"}, nil, "GITHUB_API_URL"},
		{Worker, map[string]string{"GITHUB_API_URL": "http://localhost.example.com/"}, nil, "GITHUB_API_URL"},
		{Worker, map[string]string{"QUEEN_ALLOW_INSECURE_URLS": "sure"}, nil, "QUEEN_ALLOW_INSECURE_URLS"},
	}
	for _, tc := range cases {
		m := base()
		for k, v := range tc.set {
			m[k] = v
		}
		for _, k := range tc.unset {
			delete(m, k)
		}
		_, err := Load(tc.role, env(m))
		if err == nil {
			t.Errorf("%v %v: loaded, want an error naming %s", tc.set, tc.unset, tc.variable)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.variable+":") || strings.Contains(msg, "\n") {
			t.Errorf("%v %v: error %q, want one line starting with %s", tc.set, tc.unset, msg, tc.variable)
		}
		for _, secret := range []string{"s3cret-value-5e0c", "api-token-value-91d4", "short-secret-15", "short-token-15c", keyBody, "redis-pw-value", exportTok} {
			if strings.Contains(msg, secret) {
				t.Errorf("error %q leaks a secret", msg)
			}
		}
	}
}

func TestPlainHTTPOnlyOnLoopbackOrWhenAllowed(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:9999/", "http://127.8.0.1/", "http://[::1]:8080/", "http://localhost:8080/", "http://LOCALHOST/"} {
		m := base()
		m["GITHUB_API_URL"], m["GITHUB_GIT_URL"] = u, u
		m["QUEEN_EXPORT_URL"], m["QUEEN_EXPORT_TOKEN"], m["QUEEN_EXPORT_REPO"] = u+"export", exportTok, "hive/t27"
		if _, err := Load(Worker, env(m)); err != nil {
			t.Errorf("%s on loopback: %v", u, err)
		}
	}
	m := base()
	m["GITHUB_API_URL"], m["QUEEN_ALLOW_INSECURE_URLS"] = "http://ghe.example.com/api/v3/", "on"
	c, err := Load(Webhook, env(m))
	if err != nil {
		t.Fatalf("http:// with QUEEN_ALLOW_INSECURE_URLS=on: %v", err)
	}
	if c.APIURL != "http://ghe.example.com/api/v3/" || c.GraphQLURL != "http://ghe.example.com/api/graphql" {
		t.Fatalf("URLs %q %q", c.APIURL, c.GraphQLURL)
	}
	delete(m, "QUEEN_ALLOW_INSECURE_URLS")
	if _, err := LoadApp(env(m)); err == nil || !strings.HasPrefix(err.Error(), "GITHUB_API_URL:") {
		t.Fatalf("LoadApp with http:// off loopback: %v, want an error naming GITHUB_API_URL", err)
	}
}

// Branch names as git check-ref-format --branch decides them.
func TestValidBranchName(t *testing.T) {
	for _, ok := range []string{"master", "main", "release/1.2", "feature/x-y_z", "v1.0", "a.b/c.d", "queen-12", "ü"} {
		if !ValidBranchName(ok) {
			t.Errorf("%q refused, git accepts it", ok)
		}
	}
	for _, bad := range []string{"", "-x", "HEAD", "@", "a..b", "a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", `a\b`,
		"a\x01b", "a\x7fb", "/a", "a/", "a//b", ".a", "a/.b", "a.", "a.lock", "a/b.lock/c", "a@{b", "a/.", "."} {
		if ValidBranchName(bad) {
			t.Errorf("%q accepted, git refuses it", bad)
		}
	}
}

func TestWorkerNeedsNoSecretOrAPIToken(t *testing.T) {
	m := base()
	delete(m, "GITHUB_WEBHOOK_SECRET")
	delete(m, "QUEEN_API_TOKEN")
	if _, err := Load(Worker, env(m)); err != nil {
		t.Fatalf("worker refused without webhook secret and API token: %v", err)
	}
}

func TestFlagsAndKeyFile(t *testing.T) {
	key := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(key, []byte(keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	m := base()
	delete(m, "GITHUB_APP_PRIVATE_KEY")
	m["GITHUB_APP_PRIVATE_KEY_FILE"] = key
	m["QUEEN_FREE_CLOSED_PR"] = "on"
	m["QUEEN_RELEASE_DEAD_CLAIMS"] = "TRUE"
	m["QUEEN_REVIEW_FIRST"] = "1"
	c, err := Load(Webhook, env(m))
	if err != nil {
		t.Fatal(err)
	}
	if !c.FreeClosedPR || !c.ReleaseDeadClaims || !c.ReviewFirst || string(c.PrivateKey) != keyPEM {
		t.Fatalf("flags or key not read: %+v", c)
	}
	m["GITHUB_APP_PRIVATE_KEY_FILE"] = filepath.Join(t.TempDir(), "missing.pem")
	if _, err := Load(Webhook, env(m)); err == nil || !strings.HasPrefix(err.Error(), "GITHUB_APP_PRIVATE_KEY_FILE:") {
		t.Fatalf("missing key file: %v", err)
	}
}

// The two binaries run side by side on one host with their defaults.
func TestWorkerAndWebhookDefaultPortsDiffer(t *testing.T) {
	hook, err := Load(Webhook, env(base()))
	if err != nil {
		t.Fatal(err)
	}
	w, err := Load(Worker, env(base()))
	if err != nil {
		t.Fatal(err)
	}
	if hook.APIListen != ":8081" || w.APIListen != ":8082" || hook.Listen == w.APIListen {
		t.Fatalf("webhook API %q, worker %q: want :8081 and :8082", hook.APIListen, w.APIListen)
	}
}

func TestRedisTakesEachFormWithItsPasswords(t *testing.T) {
	cases := []struct {
		url, password, sentinelPassword string
		mode                            redisconn.Mode
		addrs                           []string
	}{
		{"rediss://redis.internal:6380/2", redisPW, "", redisconn.Single, []string{"redis.internal:6380"}},
		{"redis+sentinel://s1:26379,s2:26379,s3:26379/queen/1", redisPW, "sentinel-pw-0123456", redisconn.Sentinel, []string{"s1:26379", "s2:26379", "s3:26379"}},
		{"redis+cluster://n1:6379,n2:6379,n3:6379", " pw with spaces 0123 ", "", redisconn.Cluster, []string{"n1:6379", "n2:6379", "n3:6379"}},
	}
	for _, c := range cases {
		m := base()
		m["QUEEN_REDIS_URL"], m["QUEEN_REDIS_PASSWORD"], m["QUEEN_REDIS_SENTINEL_PASSWORD"] = c.url, c.password, c.sentinelPassword
		cfg, err := Load(Worker, env(m))
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		s, err := cfg.Redis()
		if err != nil {
			t.Fatalf("%s: Redis(): %v", c.url, err)
		}
		if s.Mode != c.mode || !reflect.DeepEqual(s.Addrs, c.addrs) || s.Password != c.password || s.SentinelPassword != c.sentinelPassword {
			t.Fatalf("%s: %+v", c.url, s)
		}
	}
}

// secretVars are every secret's variable and a value Load takes for it
// (the sentinel password with a Sentinel URL).
var secretVars = map[string]string{
	"GITHUB_WEBHOOK_SECRET":          "s3cret-value-5e0c",
	"GITHUB_WEBHOOK_SECRET_PREVIOUS": "old-secret-value-0a1b",
	"QUEEN_API_TOKEN":                "api-token-value-91d4",
	"QUEEN_EXPORT_TOKEN":             exportTok,
	"QUEEN_REDIS_PASSWORD":           redisPW,
	"QUEEN_REDIS_SENTINEL_PASSWORD":  "sentinel-pw-0123456",
}

func withSentinel(m map[string]string) map[string]string {
	m["QUEEN_REDIS_URL"] = "redis+sentinel://s1:26379,s2:26379/queen"
	return m
}

// Each secret comes from its *_FILE as it would from its variable, so the
// chart and compose mount secrets as files; a final line break is not part
// of it.
func TestEverySecretHasAFileVariant(t *testing.T) {
	dir := t.TempDir()
	for name, value := range secretVars {
		for _, content := range []string{value, value + "\n", value + "\r\n"} {
			m := withSentinel(base())
			delete(m, name)
			file := filepath.Join(dir, name)
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			m[name+"_FILE"] = file
			c, err := Load(Webhook, env(m))
			if err != nil {
				t.Fatalf("%s_FILE holding %q: %v", name, content, err)
			}
			got := map[string]string{
				"GITHUB_WEBHOOK_SECRET": c.WebhookSecret, "GITHUB_WEBHOOK_SECRET_PREVIOUS": c.WebhookSecretPrev,
				"QUEEN_API_TOKEN": c.APIToken, "QUEEN_EXPORT_TOKEN": c.ExportToken,
				"QUEEN_REDIS_PASSWORD": c.RedisPassword, "QUEEN_REDIS_SENTINEL_PASSWORD": c.RedisSentinelPassword,
			}[name]
			if got != value {
				t.Errorf("%s_FILE holding %q: read %q, want %q", name, content, got, value)
			}
			if !slices.Contains(c.Secrets(), value) {
				t.Errorf("%s_FILE: Secrets() %q lacks its value", name, c.Secrets())
			}
		}
	}
}

// A *_FILE that cannot stand is refused naming it: set beside its
// variable, unreadable, empty, too large, or holding a short secret.
func TestSecretFileErrorsNameTheFileVariable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty, big, short := write("empty", "\n"), write("big", strings.Repeat("x", 1<<20)), write("short", "short-secret-15\n")
	for name, value := range secretVars {
		good := write(name, value)
		for what, set := range map[string]map[string]string{
			"both":        {name: value, name + "_FILE": good},
			"missing":     {name + "_FILE": filepath.Join(dir, "missing")},
			"empty":       {name + "_FILE": empty},
			"too large":   {name + "_FILE": big},
			"short":       {name + "_FILE": short},
			"a directory": {name + "_FILE": dir},
		} {
			if what == "missing" && name == "GITHUB_WEBHOOK_SECRET_PREVIOUS" {
				continue // below
			}
			m := withSentinel(base())
			delete(m, name)
			for k, v := range set {
				m[k] = v
			}
			_, err := Load(Webhook, env(m))
			if err == nil || !strings.HasPrefix(err.Error(), name+"_FILE:") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s_FILE %s: %v, want one line naming %s_FILE", name, what, err, name)
				continue
			}
			if strings.Contains(err.Error(), value) || strings.Contains(err.Error(), "short-secret-15") {
				t.Errorf("%s_FILE %s: error %q holds the secret", name, what, err)
			}
		}
	}
}

// Every binary refuses every short secret it is given, used or not: its
// logger masks them all, and a one-character webhook secret in the
// worker's environment masked that character in each of its lines.
func TestEveryRoleRefusesEveryShortSecret(t *testing.T) {
	for _, role := range []Role{Webhook, Worker, CLI} {
		for name := range secretVars {
			m := withSentinel(base())
			m[name] = "short-secret-15"
			_, err := Load(role, env(m))
			if err == nil || !strings.HasPrefix(err.Error(), name+": must be at least 16 characters") {
				t.Errorf("%v with a 15-character %s: %v, want an error naming it", role, name, err)
			}
		}
		m := base()
		m["QUEEN_REDIS_URL"] = "redis://:short-pw@127.0.0.1:6379/0"
		if _, err := Load(role, env(m)); err == nil || !strings.HasPrefix(err.Error(), "QUEEN_REDIS_URL: its password must be at least 16") ||
			strings.Contains(err.Error(), "short-pw") {
			t.Errorf("%v with a short password in QUEEN_REDIS_URL: %v", role, err)
		}
	}
}

// The chart mounts the previous webhook secret, an optional key of its
// Secret, only while rotating: a file that is not there is no previous
// secret, where any other missing secret file stops the binary.
func TestAnAbsentPreviousSecretFileIsNoPreviousSecret(t *testing.T) {
	m := base()
	m["GITHUB_WEBHOOK_SECRET_PREVIOUS_FILE"] = filepath.Join(t.TempDir(), "webhook-secret-previous")
	c, err := Load(Webhook, env(m))
	if err != nil || c.WebhookSecretPrev != "" {
		t.Fatalf("absent previous secret file: %v, previous %q; want it unset", err, c.WebhookSecretPrev)
	}
}

// A token an HTTP header cannot carry is refused at start, naming its
// variable and never echoing the value.
func TestTokensThatNoHeaderCanCarryAreRefused(t *testing.T) {
	for _, tc := range []struct {
		role Role
		name string
	}{{Webhook, "QUEEN_API_TOKEN"}, {CLI, "QUEEN_API_TOKEN"}, {Worker, "QUEEN_EXPORT_TOKEN"}} {
		for _, bad := range []string{"first-line-of-token\nsecond-line", "token with a space-0123", "tokén-0123456789abc", "nul\x00-in-the-token-0123"} {
			m := withSentinel(base())
			m[tc.name] = bad
			if tc.name == "QUEEN_EXPORT_TOKEN" {
				m["QUEEN_EXPORT_URL"] = "https://export.example.com"
				m["QUEEN_EXPORT_REPO"] = "hive/export"
			}
			_, err := Load(tc.role, env(m))
			if err == nil || !strings.Contains(err.Error(), tc.name+": must be one line of visible ASCII") || strings.Contains(err.Error(), bad) {
				t.Errorf("%v with %s %q: %v, want refused naming the variable", tc.role, tc.name, bad, err)
			}
		}
	}
}
