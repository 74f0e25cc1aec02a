package deploy

import (
	"encoding/json"
	"go/ast"
	"go/token"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/ghevents"
	"github.com/queen-app/queen-app/internal/webhookserver"
)

// endpointPermissions is GitHub's documentation of what each call the App
// makes needs (REST "Permissions required for GitHub Apps"; GraphQL needs the
// permission of what it reads). Every call found in internal/githubapp must
// match one row, and every row must match a call: a row nothing uses is a
// permission the App would hold for nothing.
var endpointPermissions = []struct {
	call  string // a regexp over the call as the code names it, {} standing for a variable part
	perm  string // "" for calls made with the App JWT, which need no installation permission
	level string
}{
	{`^GET /app/installations$`, "", ""},
	{`^GET /app/hook/deliveries$`, "", ""},
	{`^POST /app/hook/deliveries/\{\}/attempts$`, "", ""},
	{`^GET /installation/repositories$`, "metadata", "read"},
	{`^GET /repos/\{\}/\{\}/pulls\?head=`, "pull_requests", "read"},
	{`^POST /repos/\{\}/\{\}/pulls$`, "pull_requests", "write"},
	{`^GET /repos/\{\}/\{\}/git/ref/heads/`, "contents", "read"},
	{`^GET /repos/\{\}/\{\}/issues/\{\}$`, "issues", "read"},
	{`^graphql repository$`, "metadata", "read"},
	{`^graphql pullRequests$`, "pull_requests", "read"},
	// git over HTTPS with the installation token (internal/export).
	{`^git fetch$`, "contents", "read"},
	{`^git push$`, "contents", "write"},
}

// githubCalls are the calls the code makes, read from its source:
//   - internal/githubapp names each REST call as "METHOD /path" (its error
//     context), built from literals and variables;
//   - its GraphQL query text names the fields it reads, as `field(`;
//   - internal/export runs git with argument lists starting "fetch"/"push".
func githubCalls(t *testing.T) []string {
	t.Helper()
	calls := map[string]bool{}
	restRe := regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) /`)
	gqlRe := regexp.MustCompile(`\b([a-zA-Z]+)\((?:\$|[a-zA-Z]+:\$)`)
	for _, f := range parseDir(t, "../internal/githubapp") {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				if s := concat(x); restRe.MatchString(s) {
					calls[s] = true
					return false
				}
			case *ast.BasicLit:
				if x.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(x.Value)
				if restRe.MatchString(s) {
					calls[s] = true
				}
				for _, m := range gqlRe.FindAllStringSubmatch(s, -1) {
					if m[1] != "query" { // the operation, not a field
						calls["graphql "+m[1]] = true
					}
				}
			}
			return true
		})
	}
	for _, f := range parseDir(t, "../internal/export") {
		ast.Inspect(f, func(n ast.Node) bool {
			var args []ast.Expr
			switch x := n.(type) {
			case *ast.CompositeLit:
				args = x.Elts
			case *ast.CallExpr:
				args = x.Args
			}
			for _, a := range args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); s == "fetch" || s == "push" {
						calls["git "+s] = true
					}
				}
			}
			return true
		})
	}
	return slices.Sorted(maps.Keys(calls))
}

// concat renders a + chain of strings, a non-literal operand as {}.
func concat(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			return concat(x.X) + concat(x.Y)
		}
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, _ := strconv.Unquote(x.Value)
			return s
		}
	}
	return "{}"
}

type appManifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	Description    string `json:"description"`
	Public         bool   `json:"public"`
	HookAttributes struct {
		URL    string `json:"url"`
		Active bool   `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

func manifest(t *testing.T) appManifest {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(readFile(t, "github-app-manifest.json")))
	dec.DisallowUnknownFields()
	var m appManifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("github-app-manifest.json: %v", err)
	}
	return m
}

// TestManifestPermissionsAreWhatTheCodeCalls: exactly the permissions the
// App's calls need, each at the level the strongest call needs.
func TestManifestPermissionsAreWhatTheCodeCalls(t *testing.T) {
	calls := githubCalls(t)
	if len(calls) < 5 {
		t.Fatalf("found only %d GitHub calls in the code: %v", len(calls), calls)
	}
	need := map[string]string{}
	used := make([]bool, len(endpointPermissions))
	for _, c := range calls {
		matched := false
		for i, row := range endpointPermissions {
			if !regexp.MustCompile(row.call).MatchString(c) {
				continue
			}
			matched, used[i] = true, true
			if row.perm != "" && need[row.perm] != "write" {
				need[row.perm] = row.level
			}
		}
		if !matched {
			t.Errorf("the code calls %q: add the permission it needs to endpointPermissions and the manifest", c)
		}
	}
	for i, ok := range used {
		if !ok {
			t.Errorf("no call matches %q any more: drop its row (and its permission if nothing else needs it)", endpointPermissions[i].call)
		}
	}
	// GitHub grants metadata read to every App with a repository permission.
	need["metadata"] = "read"
	got := manifest(t).DefaultPermissions
	if !maps.Equal(got, need) {
		t.Errorf("manifest permissions %v, the code needs exactly %v (calls: %v)", got, need, calls)
	}
}

// deliveredToEveryApp are events GitHub sends without a subscription: ping
// when the hook is created, installation and installation_repositories to
// every App.
var deliveredToEveryApp = map[string]bool{"ping": true, "installation": true, "installation_repositories": true}

// handledEvents are the X-GitHub-Event values internal/ghevents switches on.
func handledEvents(t *testing.T) []string {
	t.Helper()
	out := ghevents.Events()
	if len(out) == 0 {
		t.Fatal("ghevents acts on no event")
	}
	return out
}

func TestManifestSubscribesToWhatTheCodeHandles(t *testing.T) {
	var want []string
	for _, e := range handledEvents(t) {
		if !deliveredToEveryApp[e] {
			want = append(want, e)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(manifest(t).DefaultEvents))
	if !slices.Equal(got, want) {
		t.Errorf("manifest subscribes to %v, the webhook acts on %v (besides %v, sent to every App)",
			got, want, slices.Sorted(maps.Keys(deliveredToEveryApp)))
	}
}

func TestManifestHookPointsAtTheReceiver(t *testing.T) {
	m := manifest(t)
	if !m.HookAttributes.Active || !strings.HasPrefix(m.HookAttributes.URL, "https://") ||
		!strings.HasSuffix(m.HookAttributes.URL, webhookserver.WebhookPath) {
		t.Errorf("hook_attributes %+v: want an active https://HOST%s", m.HookAttributes, webhookserver.WebhookPath)
	}
	if m.Public {
		t.Error("the manifest registers a public App; queen-app is installed by its owner only")
	}
	if m.Name == "" || m.URL == "" || m.RedirectURL == "" {
		t.Error("the manifest needs name, url and redirect_url for GitHub's manifest flow")
	}
	// The README posts the manifest from an HTML attribute quoted with '.
	if strings.Contains(readFile(t, "github-app-manifest.json"), "'") {
		t.Error("github-app-manifest.json holds a ', which ends the README's value='...' early")
	}
	// The README registers the App from this manifest, with its URL replaced.
	if !strings.Contains(readme(t), "deploy/github-app-manifest.json") || !strings.Contains(readme(t), "app-manifests/") {
		t.Error("the README does not walk through the manifest flow with deploy/github-app-manifest.json")
	}
}
