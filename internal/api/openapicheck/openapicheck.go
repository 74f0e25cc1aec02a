// Package openapicheck holds the claims API's exchanges to its description,
// docs/openapi.yaml: the request (path, query, headers, body, token) and the
// answer (a documented status, its headers, its body, a watch stream frame
// by frame). Only tests use it, so that every test serving internal/api
// holds the server and the description to each other; no binary links it.
package openapicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/queen-app/queen-app/docs"
)

// description is docs/openapi.yaml, loaded once per process, with a router
// over its paths.
type description struct {
	doc    *openapi3.T
	router routers.Router
}

var loadDescription = sync.OnceValues(func() (*description, error) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	doc.Servers = openapi3.Servers{{URL: "/"}} // the test server's address, whatever it is
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: router: %w", err)
	}
	return &description{doc: doc, router: r}, nil
})

// RoutingErrors are what a request the description has no operation for
// may be answered (an unclean path, a wrong token or too many, no such
// route, a wrong method, starting or busy): each an Error object.
var RoutingErrors = []int{400, 401, 404, 405, 429, 503}

// maxChecked bounds what is kept of a body to check it; a longer request
// body (past the server's cap) is not checked, its answer must be a 4xx.
const maxChecked = 4 << 20

// Handler serves h and checks every exchange against
// docs/openapi.yaml: the request (path, query, headers, body, token) and
// the answer (a documented status, its headers and body). A request the
// description refuses must be refused (4xx); an answer it does not
// describe is reported with the place of the mismatch. Streamed answers
// (text/event-stream) are checked frame by frame as far as they were read.
func Handler(h http.Handler, report func(error)) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, whole := readSome(r)
		rec := &recorder{ResponseWriter: rw}
		h.ServeHTTP(rec, r)
		header := rec.header
		if header == nil {
			header = rec.Header()
		}
		x := Exchange{Request: r, RequestBody: body, Cut: !whole, Status: rec.status(), Header: header, Body: rec.body.Bytes()}
		if err := Check(x); err != nil {
			report(fmt.Errorf("%s %s -> %d: %w", r.Method, r.URL.RequestURI(), rec.status(), err))
		}
	})
}

// readSome reads up to maxChecked of r's body and puts it back in front of
// the rest, for the handler to read as sent.
func readSome(r *http.Request) (body []byte, whole bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxChecked+1))
	whole = err == nil && len(body) <= maxChecked
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return body, whole
}

// recorder keeps the status, the headers as sent and the body (up to
// maxChecked) of an answer, passing everything through.
type recorder struct {
	http.ResponseWriter
	code   int
	header http.Header
	body   bytes.Buffer
}

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		w.header = w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.body.Len() < maxChecked {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Flush() {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// Exchange is one request and its answer, as a server or a client saw them.
type Exchange struct {
	Request     *http.Request // its Body is not read: RequestBody is
	RequestBody []byte
	Cut         bool // RequestBody is the start of a longer body
	Status      int
	Header      http.Header
	Body        []byte // a stream's: as far as it was read
}

// Check holds x to docs/openapi.yaml: a request the description refuses
// must be refused (4xx), and the answer must be one it describes.
func Check(x Exchange) error {
	d, err := loadDescription()
	if err != nil {
		return err
	}
	ctx := context.Background()
	code, header := x.Status, x.Header
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	stream := mt == "text/event-stream"
	// HEAD is served with each GET: the GET's answer without a body.
	head := x.Request.Method == http.MethodHead
	req := x.Request.Clone(ctx)
	if head {
		req.Method = http.MethodGet
	}
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	route, params, err := d.router.FindRoute(req)
	if err != nil {
		if !slices.Contains(RoutingErrors, code) {
			return fmt.Errorf("no operation in docs/openapi.yaml (%v), and answered %d, not one of %v", err, code, RoutingErrors)
		}
		return checkError(d, code, header, x.Body, head)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearer},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr == nil {
		reqErr = queryListed(route, req.URL.Query())
	}
	if x.Cut {
		reqErr = errors.New("body longer than the server's cap")
	}
	if reqErr != nil && (code < 400 || code >= 500) && code != http.StatusServiceUnavailable {
		return fmt.Errorf("request outside docs/openapi.yaml was answered %d: %w", code, reqErr)
	}
	in.Options = &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: head || stream}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: code, Header: header,
		Body: io.NopCloser(bytes.NewReader(x.Body)), Options: in.Options,
	}
	if stream {
		if err := documentedContent(route, code, "text/event-stream"); err != nil {
			return err
		}
		if err := checkEvents(d, x.Body, len(x.Body) >= maxChecked); err != nil {
			return fmt.Errorf("event stream outside docs/openapi.yaml: %w", err)
		}
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("answer outside docs/openapi.yaml: %w", err)
	}
	return nil
}

// bearer is the description's security: an Authorization header with a
// bearer token (whether it is the right one is the server's business).
func bearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, tok, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// queryListed refuses what kin-openapi lets by: a query parameter the
// operation does not list, or one given twice; the description says the
// server answers either with a 400 naming it.
func queryListed(route *routers.Route, q url.Values) error {
	listed := map[string]bool{}
	for _, ps := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				listed[p.Value.Name] = true
			}
		}
	}
	for name, vs := range q {
		if !listed[name] {
			return fmt.Errorf("query parameter %q is not listed by the operation", name)
		}
		if len(vs) > 1 {
			return fmt.Errorf("query parameter %q given %d times", name, len(vs))
		}
	}
	return nil
}

// errorHeaders are the headers the description promises on each refusal
// that can come before or outside an operation.
var errorHeaders = map[int]string{
	http.StatusUnauthorized:     "WWW-Authenticate",
	http.StatusMethodNotAllowed: "Allow",
	http.StatusTooManyRequests:  "Retry-After",
}

// checkError holds an answer outside every operation to the Error object
// and the header its status promises.
func checkError(d *description, code int, header http.Header, body []byte, head bool) error {
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("routing error with Content-Type %q, want application/json", header.Get("Content-Type"))
	}
	if h := errorHeaders[code]; h != "" && header.Get(h) == "" {
		return fmt.Errorf("routing error %d without its %s header", code, h)
	}
	if len(body) == 0 && head {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("routing error body: %w", err)
	}
	if err := d.doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("routing error body outside the Error schema: %w", err)
	}
	return nil
}

// documentedContent fails unless route documents content type mt for code.
func documentedContent(route *routers.Route, code int, mt string) error {
	resp := route.Operation.Responses.Status(code)
	if resp == nil || resp.Value == nil || resp.Value.Content.Get(mt) == nil {
		return fmt.Errorf("answer %d as %s is not documented in docs/openapi.yaml", code, mt)
	}
	return nil
}

// checkEvents holds a watch stream to the format GET /v1/events describes:
// retry first, then change events (an id, the ChangeEvent data, the entry
// carrying the same id), reset events (the ResetEvent data, with or
// without an id) and
// comments. A frame cut off by the end of the stream is not checked.
func checkEvents(d *description, stream []byte, cut bool) error {
	frames := strings.Split(string(stream), "\n\n")
	frames = frames[:len(frames)-1] // the rest of the last, unfinished or ""
	if len(frames) == 0 {
		return nil
	}
	if frames[0] != "retry: 1000" && !cut {
		return fmt.Errorf("the stream starts %q, not with retry: 1000", frames[0])
	}
	for i, f := range frames[1:] {
		var id, event, data string
		hasID, hasData := false, false
		for _, line := range strings.Split(f, "\n") {
			name, value, _ := strings.Cut(line, ": ")
			switch name {
			case "": // a comment (": ping")
			case "id":
				id, hasID = value, true
			case "event":
				event = value
			case "data": // a client joins data lines with "\n"
				if hasData {
					data += "\n"
				}
				data, hasData = data+value, true
			default:
				return fmt.Errorf("frame %d: line %q is no field of the described format", i+1, line)
			}
		}
		var schema string
		switch {
		case event == "" && data == "" && !hasID:
			continue // comments only
		case event == "change" && hasID:
			schema = "ChangeEvent"
		case event == "reset":
			schema = "ResetEvent"
		default:
			return fmt.Errorf("frame %d: event %q (id %q) is not described", i+1, event, id)
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return fmt.Errorf("frame %d: %s data: %w", i+1, event, err)
		}
		if err := d.doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("frame %d: %s data outside %s: %w", i+1, event, schema, err)
		}
		if schema == "ChangeEvent" {
			if entryID, _ := v.(map[string]any)["entry"].(map[string]any)["id"].(string); entryID != id {
				return fmt.Errorf("frame %d: id %q, but its entry's id is %q", i+1, id, entryID)
			}
		}
	}
	return nil
}

// Load returns docs/openapi.yaml as the checks read it (its servers
// replaced by "/", so that any address matches).
func Load() (*openapi3.T, error) {
	d, err := loadDescription()
	if err != nil {
		return nil, err
	}
	return d.doc, nil
}
