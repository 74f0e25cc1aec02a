package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

const viewerToken = "view-7c1e55b0a9d3"

type uiEnv struct {
	url   string
	clock *testkit.Clock
	logs  *testkit.Buffer
	srv   *httptest.Server
}

// newUI serves the API (unchecked: /ui is not part of docs/openapi.yaml)
// with the viewer token and a queue UI that names its mode.
func newUI(t *testing.T, tls bool) *uiEnv {
	t.Helper()
	c := testkit.NewClock(t0)
	e := &uiEnv{clock: c, logs: &testkit.Buffer{}}
	queues := func(mode string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "queues "+mode+" "+r.URL.Path) })
	}
	h, err := api.New(api.Config{Ledger: ledger.New(redistest.Start(t).Client(), ledger.Options{Now: c.Now}),
		Token: token, ViewerToken: viewerToken, Now: c.Now, Queues: queues("full"), QueuesReadOnly: queues("read-only"),
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if tls {
		e.srv = httptest.NewTLSServer(h)
	} else {
		e.srv = httptest.NewServer(h)
	}
	t.Cleanup(e.srv.Close)
	e.url = e.srv.URL
	return e
}

// browser is a client with a cookie jar that does not follow redirects.
func (e *uiEnv) browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	c := e.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func do(t *testing.T, c *http.Client, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if method == http.MethodPost && body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func signIn(t *testing.T, c *http.Client, base, tok string) *http.Response {
	t.Helper()
	resp, _ := do(t, c, "POST", base+"/ui/sign-in", url.Values{"token": {tok}}.Encode())
	return resp
}

func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", api.SessionCookie, resp.Header["Set-Cookie"])
	return nil
}

// Without a session /ui/ is the sign-in form; the API token signs in with
// an HttpOnly, SameSite=Strict cookie that expires, and the page it opens
// runs only its own script. The session reads /v1 and never writes;
// signing out ends it, the copied cookie included.
func TestUISignInReadsAndSignOutEndsIt(t *testing.T) {
	e := newUI(t, false)
	b := e.browser(t)
	resp, body := do(t, b, "GET", e.url+"/ui/", "")
	if resp.StatusCode != 200 || !strings.Contains(body, `action="/ui/sign-in"`) || strings.Contains(body, "app.js") {
		t.Fatalf("/ui/ without a session: %d %s", resp.StatusCode, body)
	}
	if r, _ := do(t, b, "GET", e.url+"/v1/claims", ""); r.StatusCode != 401 {
		t.Fatalf("/v1/claims without a session: %d", r.StatusCode)
	}
	resp = signIn(t, b, e.url, token)
	c := sessionCookie(t, resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("sign-in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.MaxAge != int(api.SessionTTL/time.Second) ||
		!c.Expires.Equal(t0.Add(api.SessionTTL).Truncate(time.Second)) {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over http, expiring in %v", c, api.SessionTTL)
	}
	resp, body = do(t, b, "GET", e.url+"/ui/", "")
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.Contains(body, `<script src="/ui/static/app.js"`) ||
		!strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("the page: %d CSP %q", resp.StatusCode, csp)
	}
	if inline := regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).FindString(body); inline != "" || strings.Contains(body, " on") && regexp.MustCompile(`\son[a-z]+=`).MatchString(body) {
		t.Fatalf("inline script in the page: %q", inline)
	}
	if r, _ := do(t, b, "GET", e.url+"/ui/static/app.js", ""); r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("app.js: %d %q", r.StatusCode, r.Header.Get("Content-Type"))
	}
	if r, _ := do(t, b, "GET", e.url+"/v1/claims", ""); r.StatusCode != 200 {
		t.Fatalf("/v1/claims with the session: %d", r.StatusCode)
	}
	// Even the API token's session only reads: no page can write for it.
	if r, body := do(t, b, "PUT", e.url+"/v1/repos/hive/t27/dispatches/1", `{"started": true}`, "Content-Type", "application/json"); r.StatusCode != 403 {
		t.Fatalf("a write with the session: %d %s, want 403", r.StatusCode, body)
	}
	if r, _ := do(t, b, "GET", e.url+"/ui/queues/", ""); !strings.Contains(readBody(t, b, e.url+"/ui/queues/"), "queues full /ui/queues/") || r.StatusCode != 200 {
		t.Fatalf("the operator's queue UI: %d", r.StatusCode)
	}

	resp, _ = do(t, b, "POST", e.url+"/ui/sign-out", "")
	if out := sessionCookie(t, resp); out.MaxAge >= 0 || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d, cookie %+v, want it removed", resp.StatusCode, out)
	}
	if _, body := do(t, b, "GET", e.url+"/ui/", ""); !strings.Contains(body, `action="/ui/sign-in"`) {
		t.Fatal("after sign-out /ui/ is not the sign-in form")
	}
	// The cookie copied before the sign-out is refused too.
	if r, _ := do(t, e.srv.Client(), "GET", e.url+"/v1/claims", "", "Cookie", c.Name+"="+c.Value); r.StatusCode != 401 {
		t.Fatalf("the signed-out cookie: %d, want 401", r.StatusCode)
	}
	if r, _ := do(t, b, "GET", e.url+"/ui/queues/", ""); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("queue UI signed out: %d, want a redirect to the sign-in", r.StatusCode)
	}
}

func readBody(t *testing.T, c *http.Client, url string) string {
	_, b := do(t, c, "GET", url, "")
	return b
}

// A session ends at SessionTTL; under TLS its cookie is Secure.
func TestUISessionExpiresAndIsSecureUnderTLS(t *testing.T) {
	e := newUI(t, true)
	b := e.browser(t)
	c := sessionCookie(t, signIn(t, b, e.url, viewerToken))
	if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie under TLS %+v, want Secure, HttpOnly, SameSite=Strict", c)
	}
	cookie := "Cookie"
	raw := c.Name + "=" + c.Value
	if r, _ := do(t, e.srv.Client(), "GET", e.url+"/v1/claims", "", cookie, raw); r.StatusCode != 200 {
		t.Fatalf("fresh session: %d", r.StatusCode)
	}
	e.clock.Add(api.SessionTTL)
	if r, _ := do(t, e.srv.Client(), "GET", e.url+"/v1/claims", "", cookie, raw); r.StatusCode != 401 {
		t.Fatalf("session past its expiry: %d, want 401", r.StatusCode)
	}
	// A tampered cookie (the viewer made operator) is refused.
	forged := strings.Replace(raw, "=viewer.", "=operator.", 1)
	if r, _ := do(t, e.srv.Client(), "GET", e.url+"/ui/queues/", "", cookie, forged); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("a forged cookie on the queue UI: %d, want the sign-in", r.StatusCode)
	}
}

// QUEEN_UI_TOKEN reads every GET /v1/* and the page; a write with it is a
// 403 that writes nothing; its queue UI is the read-only one.
func TestUIViewerTokenOnlyReads(t *testing.T) {
	e := newUI(t, false)
	hc := e.srv.Client()
	bearer := "Bearer " + viewerToken
	if r, _ := do(t, hc, "GET", e.url+"/v1/claims", "", "Authorization", bearer); r.StatusCode != 200 {
		t.Fatalf("GET with the viewer token: %d", r.StatusCode)
	}
	for _, w := range []struct{ method, path string }{
		{"PUT", "/v1/repos/hive/t27/dispatches/1"}, {"DELETE", "/v1/repos/hive/t27/dispatches/1"},
		{"POST", "/v1/repos/hive/t27/claims/1/free"}, {"POST", "/v1/repos/hive/t27/claims/1/keep"},
		{"POST", "/v1/repos/hive/t27/exports/1/push"},
	} {
		r, body := do(t, hc, w.method, e.url+w.path, `{"started": true}`, "Authorization", bearer, "Content-Type", "application/json")
		if r.StatusCode != 403 || !strings.Contains(body, "QUEEN_API_TOKEN") && !strings.Contains(body, "API token") {
			t.Fatalf("%s %s with the viewer token: %d %s, want 403", w.method, w.path, r.StatusCode, body)
		}
	}
	if r, _ := do(t, hc, "GET", e.url+"/v1/repos/hive/t27/claims/1", "", "Authorization", "Bearer "+token); r.StatusCode != 404 {
		t.Fatalf("the viewer's refused PUT wrote the row: %d", r.StatusCode)
	}
	if r, _ := do(t, hc, "PUT", e.url+"/v1/repos/hive/t27/dispatches/1", `{"started": true}`, "Authorization", "Bearer "+token, "Content-Type", "application/json"); r.StatusCode != 200 {
		t.Fatalf("the API token's write: %d", r.StatusCode)
	}
	b := e.browser(t)
	signIn(t, b, e.url, viewerToken)
	if body := readBody(t, b, e.url+"/ui/queues/"); body != "queues read-only /ui/queues/" {
		t.Fatalf("the viewer's queue UI: %q", body)
	}
	if body := readBody(t, b, e.url+"/ui/"); !strings.Contains(body, "app.js") {
		t.Fatal("the viewer does not get the page")
	}
}

// Wrong tokens at the sign-in count with the API's guard: after
// AuthFailures, 429 with Retry-After at the sign-in and at /v1 alike; the
// right token still signs in.
func TestUISignInSharesTheGuard(t *testing.T) {
	e := newUI(t, false)
	b := e.browser(t)
	for i := 0; i < api.AuthFailures; i++ {
		if r := signIn(t, b, e.url, "wrong-token-marker-"+strconv.Itoa(i)); r.StatusCode != 401 {
			t.Fatalf("wrong sign-in %d: %d, want 401", i, r.StatusCode)
		}
	}
	if r := signIn(t, b, e.url, "wrong-token-marker"); r.StatusCode != 429 || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("sign-in after %d wrong: %d Retry-After %q, want 429 and 1", api.AuthFailures, r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r, _ := do(t, b, "GET", e.url+"/v1/claims", "", "Authorization", "Bearer wrong-token-marker"); r.StatusCode != 429 {
		t.Fatalf("a wrong bearer from that address: %d, want 429", r.StatusCode)
	}
	if r := signIn(t, b, e.url, token); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token at the sign-in during the wait: %d", r.StatusCode)
	}
	if strings.Contains(e.logs.String(), "wrong-token-marker") || !strings.Contains(e.logs.String(), `"at":"sign-in"`) {
		t.Fatalf("log: want the refusal logged at the sign-in, never the token:\n%s", e.logs.String())
	}
}
