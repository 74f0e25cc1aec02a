package deploy

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
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
	{`^GET /app$`, "", ""},
	{`^GET /app/installations$`, "", ""},
	{`^GET /app/hook/deliveries$`, "", ""},
	{`^POST /app/hook/deliveries/\{\}/attempts$`, "", ""},
	{`^GET /installation/repositories$`, "metadata", "read"},
	{`^GET /repos/\{\}$`, "metadata", "read"}, // githubapp.MovedTo: a renamed repository's redirect
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
	for _, byFunc := range githubappCalls(t) {
		for c := range byFunc {
			calls[c] = true
		}
	}
	for c := range gitCalls(t) {
		calls[c] = true
	}
	return slices.Sorted(maps.Keys(calls))
}

// githubappCalls are the REST and GraphQL calls of internal/githubapp, by
// the function whose body makes them ("" outside any function).
func githubappCalls(t *testing.T) map[string]map[string]bool {
	t.Helper()
	restRe := regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) /`)
	gqlRe := regexp.MustCompile(`\b([a-zA-Z]+)\((?:\$|[a-zA-Z]+:\$)`)
	out := map[string]map[string]bool{}
	add := func(fn, call string) {
		if out[fn] == nil {
			out[fn] = map[string]bool{}
		}
		out[fn][call] = true
	}
	var inspect func(fn string) func(ast.Node) bool
	inspect = func(fn string) func(ast.Node) bool {
		return func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				if x.Body != nil {
					ast.Inspect(x.Body, inspect(x.Name.Name))
				}
				return false
			case *ast.BinaryExpr:
				if s := concat(x); restRe.MatchString(s) {
					add(fn, s)
					return false
				}
			case *ast.BasicLit:
				if x.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(x.Value)
				if restRe.MatchString(s) {
					add(fn, s)
				}
				for _, m := range gqlRe.FindAllStringSubmatch(s, -1) {
					if m[1] != "query" { // the operation, not a field
						add(fn, "graphql "+m[1])
					}
				}
			}
			return true
		}
	}
	for _, f := range parseDir(t, "../internal/githubapp") {
		ast.Inspect(f, inspect(""))
	}
	return out
}

// gitCalls are the git commands internal/export runs against GitHub.
func gitCalls(t *testing.T) map[string]bool {
	t.Helper()
	calls := map[string]bool{}
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
	return calls
}

// exportPushCode is the code of the export push: the package and the
// worker's files that run it (github.go is the publisher's GitHub).
var exportPushCode = []string{"internal/export/", "internal/worker/export", "internal/worker/github.go"}

// callsBeyondTheExportPush are the GitHub calls made by code other than
// the export push: those reachable, inside internal/githubapp, from a
// githubapp function or method the rest of the module calls. A method is
// known by its name (a package's own function, dispatch.Issue say, is not
// githubapp's Issue). Git runs only in the export push.
func callsBeyondTheExportPush(t *testing.T) []string {
	t.Helper()
	byFunc := githubappCalls(t)
	// The functions of githubapp, and which of them each one calls.
	callees := map[string]map[string]bool{}
	for _, f := range parseDir(t, "../internal/githubapp") {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				callees[fd.Name.Name] = map[string]bool{}
			}
		}
	}
	for _, f := range parseDir(t, "../internal/githubapp") {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					var name string
					switch fn := c.Fun.(type) {
					case *ast.Ident:
						name = fn.Name
					case *ast.SelectorExpr:
						name = fn.Sel.Name
					}
					if _, known := callees[name]; known {
						callees[fd.Name.Name][name] = true
					}
				}
				return true
			})
		}
	}
	// The githubapp functions the rest of the module calls, export push aside.
	used := map[string]bool{"": true} // calls outside any function: count them
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, "../"))
		if d.IsDir() {
			if p != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "internal/githubapp") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		for _, prefix := range exportPushCode {
			if strings.HasPrefix(rel, prefix) {
				return nil
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		pkgs := map[string]string{} // import name -> path
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			pkgs[name] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && pkgs[id.Name] != "" && !strings.HasSuffix(pkgs[id.Name], "/internal/githubapp") {
				return true // another package's function
			}
			if _, known := callees[sel.Sel.Name]; known {
				used[sel.Sel.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for grew := true; grew; {
		grew = false
		for fn := range used {
			for callee := range callees[fn] {
				if !used[callee] {
					used[callee], grew = true, true
				}
			}
		}
	}
	calls := map[string]bool{}
	for fn := range used {
		for c := range byFunc[fn] {
			calls[c] = true
		}
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

// The App's manifests: the whole App, and one for running without the
// export push (it reads pull requests and writes nothing).
const (
	manifestFile         = "github-app-manifest.json"
	readOnlyManifestFile = "github-app-manifest-readonly.json"
)

var manifestFiles = []string{manifestFile, readOnlyManifestFile}

func manifest(t *testing.T, name string) appManifest {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(readFile(t, name)))
	dec.DisallowUnknownFields()
	var m appManifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// permissionsFor is what calls need: each permission at the level of the
// strongest call needing it, and metadata read, which GitHub grants every
// App with a repository permission.
func permissionsFor(t *testing.T, calls []string) map[string]string {
	t.Helper()
	need := map[string]string{"metadata": "read"}
	for _, c := range calls {
		for _, row := range endpointPermissions {
			if regexp.MustCompile(row.call).MatchString(c) && row.perm != "" && need[row.perm] != "write" {
				need[row.perm] = row.level
			}
		}
	}
	return need
}

// TestManifestPermissionsAreWhatTheCodeCalls: exactly the permissions the
// App's calls need, each at the level the strongest call needs.
func TestManifestPermissionsAreWhatTheCodeCalls(t *testing.T) {
	calls := githubCalls(t)
	if len(calls) < 5 {
		t.Fatalf("found only %d GitHub calls in the code: %v", len(calls), calls)
	}
	used := make([]bool, len(endpointPermissions))
	for _, c := range calls {
		matched := false
		for i, row := range endpointPermissions {
			if regexp.MustCompile(row.call).MatchString(c) {
				matched, used[i] = true, true
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
	need := permissionsFor(t, calls)
	if got := manifest(t, manifestFile).DefaultPermissions; !maps.Equal(got, need) {
		t.Errorf("%s permissions %v, the code needs exactly %v (calls: %v)", manifestFile, got, need, calls)
	}
}

// TestReadOnlyManifestIsAllButTheExportPush: the smaller App holds exactly
// what everything but the export push calls, so an operator without the
// export gives queen-app no write permission and loses nothing else.
func TestReadOnlyManifestIsAllButTheExportPush(t *testing.T) {
	all, beyond := githubCalls(t), callsBeyondTheExportPush(t)
	var exportOnly []string
	for _, c := range all {
		if !slices.Contains(beyond, c) {
			exportOnly = append(exportOnly, c)
		}
	}
	// The export push opens PRs and pushes; the rest reads PR state.
	for _, c := range []string{"POST /repos/{}/{}/pulls", "git push"} {
		if !slices.Contains(exportOnly, c) {
			t.Errorf("%q is not found as the export push's alone (export only: %v)", c, exportOnly)
		}
	}
	if !slices.ContainsFunc(beyond, func(c string) bool { return strings.HasPrefix(c, "graphql pullRequests") }) {
		t.Errorf("the sweep's GraphQL read is not found beyond the export push: %v", beyond)
	}
	need := permissionsFor(t, beyond)
	if got := manifest(t, readOnlyManifestFile).DefaultPermissions; !maps.Equal(got, need) {
		t.Errorf("%s permissions %v; everything but the export push (%v) needs exactly %v", readOnlyManifestFile, got, exportOnly, need)
	}
	// Otherwise the same App: the same events, hook and redirect.
	full, ro := manifest(t, manifestFile), manifest(t, readOnlyManifestFile)
	full.DefaultPermissions, ro.DefaultPermissions, full.Description, ro.Description = nil, nil, "", ""
	if !reflect.DeepEqual(full, ro) {
		t.Errorf("%s differs from %s beyond permissions and description:\n%+v\n%+v", readOnlyManifestFile, manifestFile, ro, full)
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
	for _, name := range manifestFiles {
		got := slices.Sorted(slices.Values(manifest(t, name).DefaultEvents))
		if !slices.Equal(got, want) {
			t.Errorf("%s subscribes to %v, the webhook acts on %v (besides %v, sent to every App)",
				name, got, want, slices.Sorted(maps.Keys(deliveredToEveryApp)))
		}
	}
}

// eventPermissions is the permission GitHub requires of an App to
// subscribe to each event (docs.github.com, "Webhook events and payloads":
// "a GitHub App must have at least read-level access for the ...
// permission").
var eventPermissions = map[string]string{"pull_request": "pull_requests", "repository": "metadata"}

// TestManifestGrantsWhatEachEventNeeds: GitHub refuses a manifest whose
// events need a permission it does not grant.
func TestManifestGrantsWhatEachEventNeeds(t *testing.T) {
	for _, name := range manifestFiles {
		m := manifest(t, name)
		for _, e := range m.DefaultEvents {
			perm, ok := eventPermissions[e]
			if !ok {
				t.Errorf("%s subscribes to %s: add the permission GitHub requires for it to eventPermissions", name, e)
				continue
			}
			if lvl := m.DefaultPermissions[perm]; lvl != "read" && lvl != "write" {
				t.Errorf("%s subscribes to %s, which needs %s read; it grants %q", name, e, perm, lvl)
			}
		}
	}
}

func TestManifestHookPointsAtTheReceiver(t *testing.T) {
	for _, name := range manifestFiles {
		m := manifest(t, name)
		if !m.HookAttributes.Active || !strings.HasPrefix(m.HookAttributes.URL, "https://") ||
			!strings.HasSuffix(m.HookAttributes.URL, webhookserver.WebhookPath) {
			t.Errorf("%s: hook_attributes %+v: want an active https://HOST%s", name, m.HookAttributes, webhookserver.WebhookPath)
		}
		if m.Public {
			t.Errorf("%s registers a public App; queen-app is installed by its owner only", name)
		}
		if m.Name == "" || m.URL == "" || m.RedirectURL == "" {
			t.Errorf("%s: GitHub's manifest flow needs name, url and redirect_url", name)
		}
		// The README posts the manifest from an HTML attribute quoted with '.
		if strings.Contains(readFile(t, name), "'") {
			t.Errorf("%s holds a ', which ends the README's value='...' early", name)
		}
		// The README registers the App from this manifest, with its URL replaced.
		if !strings.Contains(readme(t), "deploy/"+name) {
			t.Errorf("the README does not name deploy/%s", name)
		}
	}
	if !strings.Contains(readme(t), "app-manifests/") {
		t.Error("the README does not walk through the manifest flow")
	}
}
