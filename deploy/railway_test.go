package deploy

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/version"
)

// railwayVariables are the variables docs/railway.md sets on service: the
// fenced block whose first line is "# SERVICE variables".
func railwayVariables(t *testing.T, doc, service string) map[string]string {
	t.Helper()
	blocks := regexp.MustCompile("(?s)```sh\n# "+service+" variables\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/railway.md: %d blocks of %s variables, want 1", len(blocks), service)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(blocks[0][1]), "\n") {
		name, value, ok := strings.Cut(l, "=")
		if !ok || !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(name) {
			t.Fatalf("docs/railway.md, %s variables: %q is not NAME=value", service, l)
		}
		out[name] = value
	}
	return out
}

// TestRailwayPageIsComposeInRailwaysTerms: each service of docs/railway.md
// sets the variables compose sets for it (a compose secret file's *_FILE as
// the value itself, Railway having no secret files), config accepts them
// together, and the page's ports, paths, commands and image are the ones
// the binaries and the release use.
func TestRailwayPageIsComposeInRailwaysTerms(t *testing.T) {
	doc := readFile(t, "../docs/railway.md")
	c := composeFile(t)
	example := envExample(t)
	accepted := map[string]bool{}
	for _, v := range config.Vars {
		accepted[v.Name] = true
	}
	imageEnv := map[string]string{}
	for _, in := range finalStage(dockerfile(t)) {
		if k, v, ok := strings.Cut(in.args, "="); in.op == "ENV" && ok {
			imageEnv[k] = v
		}
	}
	redisURL := "redis://default:" + strings.Repeat("p", 32) + "@redis.railway.internal:6379"
	for _, name := range []string{"webhook", "worker"} {
		role := map[string]config.Role{"webhook": config.Webhook, "worker": config.Worker}[name]
		vars := railwayVariables(t, doc, name)

		// What compose sets, in Railway's form.
		want := []string{}
		for k, v := range c.Services[name].Environment {
			if imageEnv[k] == v {
				continue // the image sets it already
			}
			want = append(want, strings.TrimSuffix(k, "_FILE"))
		}
		for k, l := range example {
			if !l.commented {
				want = append(want, k) // asked for by queen-app.env
			}
		}
		var got []string
		for k := range vars {
			if k != "PORT" {
				got = append(got, k)
			}
		}
		slices.Sort(want)
		want = slices.Compact(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("docs/railway.md sets %v on %s; compose.yaml and queen-app.env give it %v", got, name, want)
		}

		// config takes them, the Railway references resolved as Railway would.
		env := map[string]string{}
		for k, v := range vars {
			if !accepted[k] && k != "PORT" {
				t.Errorf("docs/railway.md sets %s on %s, a variable config does not know", k, name)
			}
			switch {
			case v == "${{Redis.REDIS_URL}}":
				v = redisURL
			case k == "GITHUB_APP_PRIVATE_KEY":
				v = testKeyPEM
			case k == "GITHUB_APP_ID":
				v = testAppID
			case strings.HasPrefix(v, "<"):
				v = testValueFor(strings.ToLower(k))
			}
			env[k] = v
		}
		cfg, err := config.Load(role, func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s with docs/railway.md's variables would not start: %v", name, err)
		}
		if cfg.RedisURL != redisURL || string(cfg.PrivateKey) != testKeyPEM {
			t.Errorf("%s: Redis %q, key %q; want Railway's REDIS_URL and the PEM", name, cfg.RedisURL, cfg.PrivateKey)
		}
		// Railway's healthcheck asks PORT; /readyz is on the API listener.
		if p := ":" + vars["PORT"]; p != cfg.APIListen {
			t.Errorf("%s: PORT=%s for the healthcheck, but /readyz is served on %s", name, vars["PORT"], cfg.APIListen)
		}
		if !strings.Contains(doc, "| Custom Start Command | `webhook` | `worker` |") || !slices.Contains(builtBinaries(t), name) {
			t.Errorf("docs/railway.md does not start %s with the image's binary", name)
		}
		if name == "webhook" {
			if p := strings.TrimPrefix(cfg.Listen, ":"); !strings.Contains(doc, "a domain on port **"+p+"**") {
				t.Errorf("docs/railway.md's public domain is not on QUEEN_LISTEN's port %s", p)
			}
			if !strings.Contains(doc, "RAILWAY_PRIVATE_DOMAIN}}"+cfg.APIListen+"`") {
				t.Errorf("docs/railway.md's private URL for the Queen is not on QUEEN_API_LISTEN %s", cfg.APIListen)
			}
		}
	}
	if !strings.Contains(doc, "| Healthcheck Path | `"+metrics.ReadyzPath+"` | `"+metrics.ReadyzPath+"` |") {
		t.Errorf("docs/railway.md's healthcheck path is not %s", metrics.ReadyzPath)
	}
	if img := "`ghcr.io/queen-app/queen-app:" + version.Version + "`"; !strings.Contains(doc, img) {
		t.Errorf("docs/railway.md does not deploy %s", img)
	}
	if !strings.Contains(readFile(t, "../README.md"), "(docs/railway.md)") {
		t.Error("README does not link docs/railway.md")
	}
}
