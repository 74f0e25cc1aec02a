package contract_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/queen-app/queen-app/internal/contract"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/sandbox"
)

type delivery struct {
	header http.Header
	body   []byte
}

// hookSink is a webhook receiver keeping every delivery.
func hookSink(t *testing.T) (string, func() []delivery) {
	t.Helper()
	var mu sync.Mutex
	var got []delivery
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []delivery {
		mu.Lock()
		defer mu.Unlock()
		return append([]delivery(nil), got...)
	}
}

// hookSecret signs the sandbox's deliveries in these tests.
const hookSecret = "s3cret"

// sandboxHooks loads the published webhook schemas and starts a sandbox
// GitHub with installation 7 on hive/t27, its deliveries signed with
// hookSecret and kept by a hookSink.
func sandboxHooks(t *testing.T) (*contract.Webhooks, *sandbox.GitHub, func() []delivery) {
	t.Helper()
	hooks, err := contract.LoadWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	gh, err := sandbox.NewGitHub()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gh.Close)
	url, got := hookSink(t)
	gh.SetHook(url, hookSecret)
	gh.AddInstallation(7, "hive", "hive/t27")
	return hooks, gh, got
}

// TestContractSandboxWebhooksValidate: every webhook the sandbox signs
// validates against its event's published schema, headers included, and
// its signature is the HMAC of the body.
func TestContractSandboxWebhooksValidate(t *testing.T) {
	hooks, gh, got := sandboxHooks(t)
	merged := gh.AddPR("hive/t27", sandbox.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", State: "open"})
	closed := gh.AddPR("hive/t27", sandbox.PR{HeadRef: "queen-2", HeadRepo: "hive/t27", State: "open"})
	for _, f := range []func() (sandbox.Delivery, error){
		func() (sandbox.Delivery, error) { return gh.ClosePR("hive/t27", merged, true) },
		func() (sandbox.Delivery, error) { return gh.ClosePR("hive/t27", closed, false) },
		func() (sandbox.Delivery, error) { return gh.ReopenPR("hive/t27", closed) },
		func() (sandbox.Delivery, error) { return gh.MoveRepo("hive/t27", "hive/t28") },
		func() (sandbox.Delivery, error) { return gh.MoveRepo("hive/t28", "bees/t28") },
	} {
		if _, err := f(); err != nil {
			t.Fatal(err)
		}
	}
	ds := got()
	if len(ds) != 5 {
		t.Fatalf("deliveries = %d, want 5", len(ds))
	}
	for i, want := range []string{"renamed", "transferred"} {
		var p struct{ Action string }
		if d := ds[3+i]; d.header.Get("X-GitHub-Event") != "repository" || json.Unmarshal(d.body, &p) != nil || p.Action != want {
			t.Errorf("delivery %d: %s %s, want repository %s", 4+i, d.header.Get("X-GitHub-Event"), p.Action, want)
		}
	}
	for _, d := range ds {
		if err := hooks.Check(d.header, d.body); err != nil {
			t.Errorf("%v", err)
		}
		mac := hmac.New(sha256.New, []byte(hookSecret))
		mac.Write(d.body)
		if d.header.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			t.Errorf("delivery %s: signature is not the body's HMAC", d.header.Get("X-GitHub-Delivery"))
		}
	}
}

// fixtureDrift is where the example payloads, kept as GitHub sent them
// years ago (testdata/github-payloads/README.md), differ from today's
// schema: installation.created_at was epoch seconds, and repositories had
// no has_discussions. Each must still fail just so: a fixture that drifts
// further, or a schema that changes, shows here.
var fixtureDrift = map[string]string{
	"installation/created.payload.json":            `"/installation/created_at": value must be a string`,
	"installation/deleted.payload.json":            `"/installation/created_at": value must be a string`,
	"installation_repositories/added.payload.json": `"/installation/created_at": value must be a string`,
	"pull_request/synchronize.payload.json":        `"/pull_request/base/repo/has_discussions": property "has_discussions" is missing`,
}

// TestContractPayloadFixturesValidate: the example payloads tests build
// deliveries from (testdata/github-payloads) match the published schema of
// their event, but for the drift above; push, an event the app ignores,
// has none vendored.
func TestContractPayloadFixturesValidate(t *testing.T) {
	hooks, err := contract.LoadWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	root := githubtest.PayloadsDir(t)
	files, err := filepath.Glob(filepath.Join(root, "*", "*.json"))
	if err != nil || len(files) < 8 {
		t.Fatalf("payload fixtures: %d files, %v", len(files), err)
	}
	for _, f := range files {
		event := filepath.Base(filepath.Dir(f))
		name := event + "/" + filepath.Base(f)
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		err = hooks.CheckBody(event, body)
		switch drift, ok := fixtureDrift[name]; {
		case event == "push":
			if !errors.Is(err, contract.ErrNoSchema) {
				t.Errorf("%s: %v, want no vendored schema", name, err)
			}
		case ok:
			if err == nil || !strings.Contains(err.Error(), drift) {
				t.Errorf("%s: %v, want only the known drift %s", name, err, drift)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestContractWebhookCheckRefusesBrokenDeliveries shows the webhook check
// is not vacuous: a delivery the sandbox signed passes, and the same
// delivery fails without a required field, with a wrongly typed one, and
// without each header GitHub sends.
func TestContractWebhookCheckRefusesBrokenDeliveries(t *testing.T) {
	hooks, gh, got := sandboxHooks(t)
	n := gh.AddPR("hive/t27", sandbox.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", State: "open"})
	if _, err := gh.ClosePR("hive/t27", n, true); err != nil {
		t.Fatal(err)
	}
	d := got()[0]
	if err := hooks.Check(d.header, d.body); err != nil {
		t.Fatalf("the unbroken delivery fails: %v", err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(d.body, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	bodies := map[string][]byte{
		"no number":       edit(func(m map[string]any) { delete(m, "number") }),
		"number a string": edit(func(m map[string]any) { m["number"] = "7" }),
		"no head":         edit(func(m map[string]any) { delete(m["pull_request"].(map[string]any), "head") }),
	}
	for name, b := range bodies {
		if err := hooks.Check(d.header, b); err == nil {
			t.Errorf("%s: the broken body passed", name)
		}
	}
	for _, h := range []string{"X-GitHub-Event", "X-GitHub-Delivery", "X-Hub-Signature-256", "X-GitHub-Hook-ID",
		"X-GitHub-Hook-Installation-Target-ID", "X-GitHub-Hook-Installation-Target-Type", "User-Agent"} {
		broken := d.header.Clone()
		broken.Del(h)
		if err := hooks.Check(broken, d.body); err == nil {
			t.Errorf("without %s: the delivery passed", h)
		}
	}
}

// gitRef is a documented answer of GET /repos/{owner}/{repo}/git/ref/{ref}.
const gitRef = `{"ref":"refs/heads/queen-5","node_id":"MDM6UmVmcmVmcy9oZWFkcy9xdWVlbi01",` +
	`"url":"https://api.github.com/repos/hive/t27/git/refs/heads/queen-5",` +
	`"object":{"type":"commit","sha":"cccccccccccccccccccccccccccccccccccccccc","url":"https://api.github.com/repos/hive/t27/git/commits/cccccccccccccccccccccccccccccccccccccccc"}}`

// TestContractRESTCheckRefusesBrokenRequestsAndAnswers shows the REST
// checks are not vacuous: well-formed exchanges pass, and each broken
// one (an undocumented path, query parameter, value or body; an answer
// without a required field, with a wrong type, an undocumented status, a
// redirect without Location, no x-ratelimit-* or a 403 that is no rate
// limit) is refused.
func TestContractRESTCheckRefusesBrokenRequestsAndAnswers(t *testing.T) {
	spec, err := contract.LoadREST()
	if err != nil {
		t.Fatal(err)
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	list := sandbox.Exchange{Method: "GET", Path: "/repos/hive/t27/pulls", RawQuery: "head=hive%3Aqueen-5&per_page=100&state=all"}
	create := sandbox.Exchange{Method: "POST", Path: "/repos/hive/t27/pulls", Header: jsonHeader,
		Body: []byte(`{"title":"Fix","head":"queen-5","base":"master","body":"Closes #5"}`)}
	answerHeader := http.Header{"Content-Type": {"application/json"}, "X-Ratelimit-Limit": {"5000"},
		"X-Ratelimit-Remaining": {"4999"}, "X-Ratelimit-Used": {"1"}, "X-Ratelimit-Reset": {"1798000000"},
		"X-Ratelimit-Resource": {"core"}}
	ref := sandbox.Exchange{Method: "GET", Path: "/repos/hive/t27/git/ref/heads/queen-5",
		Status: 200, RespHeader: answerHeader, RespBody: []byte(gitRef)}
	for _, e := range []sandbox.Exchange{list, create, ref} {
		if err := spec.CheckRequest(e); err != nil {
			t.Fatalf("a good request fails: %v", err)
		}
	}
	if err := spec.CheckResponse(ref); err != nil {
		t.Fatalf("a good answer fails: %v", err)
	}

	requests := map[string]sandbox.Exchange{
		"undocumented path":   {Method: "GET", Path: "/repos/hive/t27/pullz"},
		"undocumented method": {Method: "DELETE", Path: "/repos/hive/t27/pulls"},
		"undocumented query":  {Method: "GET", Path: list.Path, RawQuery: list.RawQuery + "&branch=queen-5"},
		"bad enum value":      {Method: "GET", Path: list.Path, RawQuery: "state=merged"},
		"bad integer":         {Method: "GET", Path: list.Path, RawQuery: "per_page=many"},
		"body without head":   {Method: "POST", Path: create.Path, Header: jsonHeader, Body: []byte(`{"title":"Fix","base":"master"}`)},
		"body wrong type":     {Method: "POST", Path: create.Path, Header: jsonHeader, Body: []byte(`{"title":"Fix","head":"queen-5","base":"master","draft":"yes"}`)},
	}
	for name, e := range requests {
		if err := spec.CheckRequest(e); err == nil {
			t.Errorf("request %s: passed", name)
		}
	}
	answers := map[string]sandbox.Exchange{
		"no object":            withBody(ref, strings.Replace(gitRef, `"object"`, `"target"`, 1)),
		"sha not a string":     withBody(ref, strings.Replace(gitRef, `"sha":"cccccccccccccccccccccccccccccccccccccccc"`, `"sha":7`, 1)),
		"undocumented 418":     withStatus(ref, 418),
		"301 without Location": withStatus(ref, 301),
		"no x-ratelimit-*":     withHeader(ref, "X-Ratelimit-Remaining", ""),
		"403 not a limit":      withStatus(withBody(ref, `{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`), 403),
		"not JSON":             withBody(ref, "ref: heads/queen-5"),
		"success as a error":   withStatus(withBody(ref, `{"message":"Not Found"}`), 200),
	}
	for name, e := range answers {
		if err := spec.CheckResponse(e); err == nil {
			t.Errorf("answer %s: passed", name)
		}
	}
}

func withBody(e sandbox.Exchange, body string) sandbox.Exchange {
	e.RespBody = []byte(body)
	return e
}

func withHeader(e sandbox.Exchange, name, value string) sandbox.Exchange {
	e.RespHeader = e.RespHeader.Clone()
	if value == "" {
		e.RespHeader.Del(name)
	} else {
		e.RespHeader.Set(name, value)
	}
	return e
}

func withStatus(e sandbox.Exchange, status int) sandbox.Exchange {
	e.Status = status
	return e
}

// TestContractEverySandboxRouteIsDocumented: each REST route the sandbox
// serves is an operation of the vendored description, so tools/contract's
// list and the sandbox stay in step (GraphQL is the schema's).
func TestContractEverySandboxRouteIsDocumented(t *testing.T) {
	spec, err := contract.LoadREST()
	if err != nil {
		t.Fatal(err)
	}
	routes := []string{sandbox.RouteApp, sandbox.RouteMint, sandbox.RouteInstallations, sandbox.RouteRepos,
		sandbox.RouteListPulls, sandbox.RouteCreatePull, sandbox.RouteDeliveries, sandbox.RouteRedeliver,
		sandbox.RouteBranch, sandbox.RouteRef, sandbox.RouteIssue, sandbox.RouteRepo}
	sample := strings.NewReplacer("{owner}", "hive", "{repo}", "t27", "{id}", "7", "{number}", "5",
		"{branch...}", "queen-5")
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		e := sandbox.Exchange{Method: method, Path: sample.Replace(path)}
		if _, err := spec.Operation(e); err != nil {
			t.Errorf("sandbox route %s: %v", r, err)
		}
	}
}
