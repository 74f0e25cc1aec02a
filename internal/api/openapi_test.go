package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/queen-app/queen-app/docs"
	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/api/openapicheck"
)

// The claim view of docs/api.md's first sample, as the server writes it.
const sampleView = `"repo":"hive/t27","issue":9111,"claim":"rejected","claims_issue":true,"live":true,` +
	`"stage":"send_back","holds_files":true,"held_paths":["bootstrap/src/compiler.rs"],` +
	`"held_until":"2026-10-10T21:50:00Z","send_back_claim":"free","accept_claim":null,"freed":null,` +
	`"would_free":{"at":"2026-10-10T20:00:00Z","rule":"send_back_claim","evidence":"send_backs 1 < ceiling 2"},` +
	`"prs":null,"export":null,"version":1`

// The check every API test's exchanges go through fails on answers and
// requests docs/openapi.yaml does not describe, naming the place, and
// passes the ones it does.
func TestOpenAPICheckFailsOnWhatIsNotDescribed(t *testing.T) {
	const put = "/v1/repos/hive/t27/dispatches/9111"
	claim := func(view string) string { return `{` + view + `,"outcome":"would_free"}` }
	sse := []string{"Content-Type", "text/event-stream", "Cache-Control", "no-cache", "X-Accel-Buffering", "no"}
	change := func(id, entryID, view string) string {
		return "id: " + id + "\nevent: change\ndata: " + `{"entry":{"id":"` + entryID + `","at":"2026-10-10T20:00:00Z","repo":"hive/t27",` +
			`"issue":9111,"version":1,"action":"upsert","source":{"kind":"api"},"outcome":{"live":true}},` +
			`"claim":{` + view + `,"kept":null,"explain":[],"history":[]}}` + "\n\n"
	}
	reset := `{"after":"1-0","oldest":"5-0","reason":"trimmed"}`
	type answer struct {
		code   int
		header []string
		body   string
	}
	for _, tc := range []struct {
		name         string
		method, path string
		hdr          []string // request headers beside the token and Content-Type
		body         string
		answer       answer
		want         string // in the reported error; "" is none reported
	}{
		{"described", "PUT", put, nil, `{"started": true}`, answer{200, nil, claim(sampleView)}, ""},
		{"described error", "PUT", put, nil, `{"strated": true}`,
			answer{400, nil, `{"error":"strated: unknown field","field":"strated"}`}, ""},
		{"a field of the wrong type", "PUT", put, nil, `{}`,
			answer{200, nil, claim(strings.Replace(sampleView, `"version":1`, `"version":"1"`, 1))}, "version"},
		{"a required field missing", "PUT", put, nil, `{}`,
			answer{200, nil, claim(strings.Replace(sampleView, `"live":true,`, ``, 1))}, "live"},
		{"a field not described", "PUT", put, nil, `{}`,
			answer{200, nil, claim(sampleView + `,"surprise":1`)}, "surprise"},
		{"null where never served", "PUT", put, nil, `{}`,
			answer{200, nil, claim(strings.Replace(sampleView, `"held_paths":["bootstrap/src/compiler.rs"]`, `"held_paths":null`, 1))}, "held_paths"},
		{"a word outside its enum", "PUT", put, nil, `{}`,
			answer{200, nil, claim(strings.Replace(sampleView, `"claim":"rejected"`, `"claim":"Rejected"`, 1))}, "claim"},
		{"a nested field of the wrong type", "PUT", put, nil, `{}`,
			answer{200, nil, claim(strings.Replace(sampleView, `"prs":null`, `"prs":{"read":true,"open":0,"merged":0,"closed_unmerged":1,"earlier":["24"]}`, 1))}, "earlier"},
		{"a date that is none", "PUT", put, nil, `{}`,
			answer{200, nil, claim(strings.Replace(sampleView, `"2026-10-10T21:50:00Z"`, `"tonight"`, 1))}, "held_until"},
		{"the outcome missing", "PUT", put, nil, `{}`, answer{200, nil, `{` + sampleView + `}`}, "outcome"},
		{"a status not described", "PUT", put, nil, `{}`, answer{201, nil, claim(sampleView)}, "201"},
		{"an error without its text", "PUT", put, nil, `{}`, answer{409, nil, `{"field":"version"}`}, "error"},
		{"not JSON", "PUT", put, nil, `{}`, answer{200, []string{"Content-Type", "text/plain"}, "ok"}, "text/plain"},
		{"a 401 without WWW-Authenticate", "GET", "/v1/claims", []string{"Authorization", ""}, "",
			answer{401, nil, `{"error":"no token"}`}, "WWW-Authenticate"},
		{"an unknown field taken", "PUT", put, nil, `{"strated": true}`, answer{200, nil, claim(sampleView)}, "strated"},
		{"a bad path parameter taken", "PUT", "/v1/repos/hive/t27/dispatches/0", nil, `{}`, answer{200, nil, claim(sampleView)}, "issue"},
		{"a bad query parameter taken", "GET", "/v1/claims?limit=1001", nil, "",
			answer{200, nil, `{"claims":[],"next_cursor":""}`}, "limit"},
		{"a bad header taken", "GET", "/v1/claims", []string{api.SourceHeader, "a b"}, "",
			answer{200, nil, `{"claims":[],"next_cursor":""}`}, api.SourceHeader},
		{"no token taken", "GET", "/v1/claims", []string{"Authorization", ""}, "",
			answer{200, nil, `{"claims":[],"next_cursor":""}`}, "security"},
		{"a described stream", "GET", "/v1/events", nil, "", answer{200, sse, "retry: 1000\n\n" + change("1-0", "1-0", sampleView) +
			": ping\n\n" + "event: reset\ndata: " + reset + "\n\n" + "id: 2-0\nevent: cha"}, ""},
		{"a stream without its headers", "GET", "/v1/events", nil, "", answer{200, []string{"Content-Type", "text/event-stream"}, "retry: 1000\n\n"}, "Cache-Control"},
		{"a change event of the wrong shape", "GET", "/v1/events", nil, "",
			answer{200, sse, "retry: 1000\n\n" + change("1-0", "1-0", strings.Replace(sampleView, `"live":true,`, ``, 1))}, "live"},
		{"a change event under another id", "GET", "/v1/events", nil, "",
			answer{200, sse, "retry: 1000\n\n" + change("2-0", "1-0", sampleView)}, "entry's id"},
		{"an event not described", "GET", "/v1/events", nil, "",
			answer{200, sse, "retry: 1000\n\nid: 1-0\nevent: delete\ndata: {}\n\n"}, `event "delete"`},
		{"a change whose first data line is no JSON", "GET", "/v1/events", nil, "",
			answer{200, sse, "retry: 1000\n\n" + strings.Replace(change("1-0", "1-0", sampleView), "data: ", "data: {broken\ndata: ", 1)}, "change data"},
		{"a change without an id", "GET", "/v1/events", nil, "",
			answer{200, sse, "retry: 1000\n\nevent: change\ndata: {}\n\n"}, `event "change"`},
		{"a query parameter not listed, taken", "GET", "/v1/claims?bogus=1", nil, "",
			answer{200, nil, `{"claims":[],"next_cursor":""}`}, "bogus"},
		{"a query parameter given twice, taken", "GET", "/v1/claims?limit=5&limit=6", nil, "",
			answer{200, nil, `{"claims":[],"next_cursor":""}`}, "given 2 times"},
		{"a query parameter not listed, refused", "GET", "/v1/claims?bogus=1", nil, "",
			answer{400, nil, `{"error":"bogus: unknown query parameter","field":"bogus"}`}, ""},
		{"a 405 without Allow", "PATCH", "/v1/claims", nil, "", answer{405, nil, `{"error":"method not allowed"}`}, "Allow"},
		{"a routing 401 without WWW-Authenticate", "GET", "/v1/nothing", []string{"Authorization", ""}, "",
			answer{401, nil, `{"error":"no token"}`}, "WWW-Authenticate"},
		{"a routing 429 without Retry-After", "GET", "/v1/nothing", nil, "", answer{429, nil, `{"error":"wait"}`}, "Retry-After"},
		{"a routing error without a body", "GET", "/v1/nothing", nil, "", answer{404, nil, ""}, "routing error body"},
		{"a route not described", "GET", "/v1/nothing", nil, "", answer{200, nil, `{}`}, "no operation"},
		{"a route not described, refused", "GET", "/v1/nothing", nil, "", answer{404, nil, `{"error":"no such route"}`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				for i := 0; i+1 < len(tc.answer.header); i += 2 {
					w.Header().Set(tc.answer.header[i], tc.answer.header[i+1])
				}
				if tc.answer.code == 401 && !strings.Contains(tc.name, "without WWW-Authenticate") {
					w.Header().Set("WWW-Authenticate", `Bearer realm="queen-app"`)
				}
				w.WriteHeader(tc.answer.code)
				_, _ = io.WriteString(w, tc.answer.body)
			})
			var mu sync.Mutex
			var reported []error
			ts := httptest.NewServer(openapicheck.Handler(fake, func(err error) {
				mu.Lock()
				defer mu.Unlock()
				reported = append(reported, err)
			}))
			sendTo(t, ts.URL, tc.method, tc.path, tc.body, tc.hdr...)
			ts.Close() // waits for the check
			switch {
			case tc.want == "" && len(reported) > 0:
				t.Fatalf("reported %v, want nothing", reported)
			case tc.want != "" && len(reported) != 1:
				t.Fatalf("reported %v, want one error naming %q", reported, tc.want)
			case tc.want != "" && !strings.Contains(reported[0].Error(), tc.want):
				t.Fatalf("reported %q, which does not name %q", reported[0], tc.want)
			}
		})
	}
}

// sendTo is one request with the token and, for a body, the JSON content
// type; hdr pairs override headers ("", drops one).
func sendTo(t *testing.T, base, method, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(newRequest(t, context.Background(), base, method, path, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Every route the server serves is described, and every operation
// described is served: neither can be added without the other.
func TestEveryRouteIsDescribedAndEveryOperationServed(t *testing.T) {
	doc, err := openapicheck.Load()
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" "+path)
		}
	}
	var served []string
	for _, r := range api.Routes() {
		served = append(served, r.Method+" "+r.Pattern)
	}
	sort.Strings(described)
	sort.Strings(served)
	for _, s := range served {
		if !slices.Contains(described, s) {
			t.Errorf("%s is served but not in docs/openapi.yaml", s)
		}
	}
	for _, s := range described {
		if !slices.Contains(served, s) {
			t.Errorf("%s is in docs/openapi.yaml but not in api.Routes", s)
		}
	}

	// And the running server routes each described operation to a handler
	// of its own: neither "no such route" nor 405.
	e := newEnv(t, envOpts{})
	sample := strings.NewReplacer("{owner}", "hive", "{repo}", "t27", "{issue}", "1")
	for _, op := range described {
		method, path, _ := strings.Cut(op, " ")
		body := ""
		if method == "PUT" || method == "POST" {
			body = "{}"
		}
		code, msg := sendBrief(t, e.url, method, sample.Replace(path), body)
		if code == http.StatusMethodNotAllowed || (code == http.StatusNotFound && strings.Contains(msg, "no such route")) {
			t.Errorf("%s: the server answers %d %s", op, code, msg)
		}
	}
}

// sendBrief sends one request and reads its status and at most the start
// of its answer: a watch stream is left after its first bytes.
func sendBrief(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, err := io.ReadAtLeast(resp.Body, buf, 1)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(buf[:n])
}

// GET /v1/openapi.json is docs/openapi.yaml, as JSON, behind the token.
func TestOpenAPIIsServed(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.req(t, "GET", api.OpenAPIPath, "", "Authorization", "").mustCode(t, 401, "")
	e.req(t, "GET", api.OpenAPIPath+"?x=1", "").mustCode(t, 400, "x")
	r := e.req(t, "GET", api.OpenAPIPath, "")
	r.mustCode(t, 200, "")
	served, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatalf("the served description does not load: %v", err)
	}
	if err := served.Validate(context.Background()); err != nil {
		t.Fatalf("the served description is not valid: %v", err)
	}
	written, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(served)
	b, _ := json.Marshal(written)
	if !bytes.Equal(a, b) {
		t.Fatalf("the served description differs from docs/openapi.yaml:\nserved  %.400s\nwritten %.400s", a, b)
	}
	if served.Paths.Find(api.OpenAPIPath) == nil || served.Paths.Find("/v1/events") == nil {
		t.Fatal("the served description lacks its own path or the watch stream's")
	}
}
