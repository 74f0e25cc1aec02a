// Package contract holds the app and its sandbox to GitHub's published
// contracts, vendored in testdata/github-contract by tools/contract: the
// GraphQL schema, the REST description of the operations used and the
// webhook schemas of the events received. Only tests use it; it never
// reaches a registry.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/queen-app/queen-app/internal/sandbox"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// Dir is testdata/github-contract of this module, wherever the test runs.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "github-contract")
}

// GraphQL is GitHub's GraphQL schema.
type GraphQL struct{ schema *ast.Schema }

// LoadGraphQL parses schema.graphql once per test binary.
var LoadGraphQL = sync.OnceValues(func() (*GraphQL, error) {
	data, err := os.ReadFile(filepath.Join(Dir(), "schema.graphql"))
	if err != nil {
		return nil, err
	}
	sd, err := parser.ParseSchemas(validator.Prelude, &ast.Source{Name: "schema.graphql", Input: string(data)})
	if err != nil {
		return nil, fmt.Errorf("contract: schema.graphql: %w", err)
	}
	dedupeFields(sd)
	schema, err := validator.ValidateSchemaDocument(sd)
	if err != nil {
		return nil, fmt.Errorf("contract: schema.graphql: %w", err)
	}
	return &GraphQL{schema: schema}, nil
})

// dedupeFields drops a field defined twice with the same type in one
// type: GitHub's published schema has such a slip
// (EnterpriseOwnerInfo.repositoryDeployKeySetting in 15.26.1), which
// gqlparser refuses. A repeated name with another type stays, and fails.
func dedupeFields(sd *ast.SchemaDocument) {
	for _, d := range sd.Definitions {
		seen := map[string]string{}
		kept := d.Fields[:0]
		for _, f := range d.Fields {
			if t, ok := seen[f.Name]; ok && t == f.Type.String() {
				continue
			}
			seen[f.Name] = f.Type.String()
			kept = append(kept, f)
		}
		d.Fields = kept
	}
}

// Validate checks a GraphQL document and its variables as GitHub's
// server would before running it: fields, arguments, enum values and the
// variables' declared and given types.
func (g *GraphQL) Validate(query string, vars map[string]any) error {
	doc, err := parser.ParseQuery(&ast.Source{Name: "query", Input: query})
	if err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	if errs := validator.Validate(g.schema, doc); len(errs) > 0 {
		return fmt.Errorf("graphql: %w", errs)
	}
	if len(doc.Operations) != 1 {
		return fmt.Errorf("graphql: want one operation, got %d", len(doc.Operations))
	}
	if _, err := validator.VariableValues(g.schema, doc.Operations[0], vars); err != nil {
		return fmt.Errorf("graphql variables: %w", err)
	}
	return nil
}

// REST is the part of GitHub's REST description the app uses.
type REST struct {
	doc    *openapi3.T
	router routers.Router
}

// LoadREST loads openapi.json once per test binary.
var LoadREST = sync.OnceValues(func() (*REST, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(Dir(), "openapi.json"))
	if err != nil {
		return nil, fmt.Errorf("contract: openapi.json: %w", err)
	}
	// Match any host: the sandbox listens on loopback, not api.github.com.
	doc.Servers = openapi3.Servers{{URL: "/"}}
	multiSegment(doc)
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("contract: router: %w", err)
	}
	return &REST{doc: doc, router: r}, nil
})

// multiSegment lets a path parameter GitHub marks x-multi-segment (a git
// ref: heads/queen-5) match slashes, in gorillamux's {name:.+} form.
func multiSegment(doc *openapi3.T) {
	for path, item := range doc.Paths.Map() {
		to := path
		for _, op := range item.Operations() {
			for _, ps := range []openapi3.Parameters{item.Parameters, op.Parameters} {
				for _, p := range ps {
					if p.Value != nil && p.Value.In == openapi3.ParameterInPath && p.Value.Extensions["x-multi-segment"] == true {
						to = strings.Replace(to, "{"+p.Value.Name+"}", "{"+p.Value.Name+":.+}", 1)
					}
				}
			}
		}
		if to != path {
			doc.Paths.Delete(path)
			doc.Paths.Set(to, item)
		}
	}
}

// describe names e in errors: method, path, query and status.
func describe(e sandbox.Exchange) string {
	s := e.Method + " " + e.Path
	if e.RawQuery != "" {
		s += "?" + e.RawQuery
	}
	return fmt.Sprintf("%s -> %d", s, e.Status)
}

// Operation names the documented operation of e ("GET /repos/{owner}/{repo}/pulls").
func (r *REST) Operation(e sandbox.Exchange) (string, error) {
	route, _, err := r.find(e)
	if err != nil {
		return "", err
	}
	return route.Method + " " + strings.ReplaceAll(route.Path, ":.+}", "}"), nil
}

func (r *REST) find(e sandbox.Exchange) (*routers.Route, map[string]string, error) {
	req, err := request(e)
	if err != nil {
		return nil, nil, err
	}
	route, params, err := r.router.FindRoute(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: no documented operation: %w", e.Method, e.Path, err)
	}
	return route, params, nil
}

func request(e sandbox.Exchange) (*http.Request, error) {
	u := "http://api.github.com" + e.Path
	if e.RawQuery != "" {
		u += "?" + e.RawQuery
	}
	req, err := http.NewRequest(e.Method, u, bytes.NewReader(e.Body))
	if err != nil {
		return nil, err
	}
	req.Header = e.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	return req, nil
}

// brief leaves the failed schema, pages long, out of an error: the place
// and the reason are enough.
var brief = []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()}

// CheckRequest checks e's request against its documented operation: the
// method and path, every query parameter and value, the body.
func (r *REST) CheckRequest(e sandbox.Exchange) error {
	route, params, err := r.find(e)
	if err != nil {
		return err
	}
	req, _ := request(e)
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			// Who may call is the sandbox's to check; this is about shapes.
			AuthenticationFunc:                openapi3filter.NoopAuthenticationFunc,
			RejectWhenRequestBodyNotSpecified: true,
			SchemaValidationOptions:           brief,
		},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return fmt.Errorf("%s: request: %w", describe(e), err)
	}
	if err := unknownQuery(route, req); err != nil {
		return fmt.Errorf("%s: request: %w", describe(e), err)
	}
	return nil
}

// unknownQuery refuses a query parameter the operation does not document,
// which ValidateRequest lets through.
func unknownQuery(route *routers.Route, req *http.Request) error {
	known := map[string]bool{}
	for _, ps := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				known[p.Value.Name] = true
			}
		}
	}
	for name := range req.URL.Query() {
		if !known[name] {
			return fmt.Errorf("query parameter %q is not documented", name)
		}
	}
	return nil
}

// CheckResponse checks e's answer against the documented response for its
// status: status, headers and body.
func (r *REST) CheckResponse(e sandbox.Exchange) error {
	route, params, err := r.find(e)
	if err != nil {
		return err
	}
	req, _ := request(e)
	if err := rateHeaders(e.RespHeader); err != nil {
		return fmt.Errorf("%s: answer: %w", describe(e), err)
	}
	if route.Operation.Responses.Status(e.Status) == nil {
		if repoRedirect(route, e) {
			return nil
		}
		if rateLimited(e) {
			return nil
		}
		return fmt.Errorf("%s: status %d is not documented", describe(e), e.Status)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 e.Status,
		Header:                 e.RespHeader,
		Body:                   io.NopCloser(bytes.NewReader(e.RespBody)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, SchemaValidationOptions: brief},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s: answer: %w", describe(e), err)
	}
	return nil
}

// repoRedirect tells GitHub's redirect of a renamed or transferred
// repository: any route of /repos/{owner}/{repo} may answer 301 (307 for
// a write) with a Location, as GitHub's REST docs say ("Following
// redirects"), though the description lists 301 on only some operations.
func repoRedirect(route *routers.Route, e sandbox.Exchange) bool {
	switch e.Status {
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect:
	default:
		return false
	}
	return strings.HasPrefix(route.Path, "/repos/{owner}/{repo}") && e.RespHeader.Get("Location") != ""
}

// rateHeaders checks the x-ratelimit-* headers GitHub's rate-limit docs
// say every answer carries.
func rateHeaders(h http.Header) error {
	for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used", "X-RateLimit-Reset"} {
		if v := h.Get(name); v == "" || strings.Trim(v, "0123456789") != "" {
			return fmt.Errorf("header %s %q is not a number", name, v)
		}
	}
	if h.Get("X-RateLimit-Resource") == "" {
		return errors.New("header X-RateLimit-Resource missing")
	}
	return nil
}

// rateLimited tells a rate limit's answer, which GitHub's rate-limit docs
// give any operation: 403 or 429 with a message and its documentation.
func rateLimited(e sandbox.Exchange) bool {
	if e.Status != http.StatusForbidden && e.Status != http.StatusTooManyRequests {
		return false
	}
	var body struct {
		Message          string `json:"message"`
		DocumentationURL string `json:"documentation_url"`
	}
	return json.Unmarshal(e.RespBody, &body) == nil && strings.Contains(strings.ToLower(body.Message), "rate limit") &&
		body.DocumentationURL != ""
}

// Webhooks are the schemas of the webhook events the app receives.
type Webhooks struct{ doc *openapi3.T }

// LoadWebhooks loads webhooks.json once per test binary.
var LoadWebhooks = sync.OnceValues(func() (*Webhooks, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(Dir(), "webhooks.json"))
	if err != nil {
		return nil, fmt.Errorf("contract: webhooks.json: %w", err)
	}
	return &Webhooks{doc: doc}, nil
})

// ErrNoSchema is a delivery whose event and action the vendored schemas
// do not hold.
var ErrNoSchema = errors.New("no vendored schema")

// Check checks one delivery, headers and body, against the schema of its
// event (X-GitHub-Event) and action.
func (w *Webhooks) Check(h http.Header, body []byte) error {
	event := h.Get("X-GitHub-Event")
	key, op, v, err := w.operation(event, body)
	if err != nil {
		return err
	}
	for _, p := range op.Parameters {
		if p.Value == nil || p.Value.In != openapi3.ParameterInHeader {
			continue
		}
		got := h.Values(p.Value.Name)
		if len(got) == 0 {
			if p.Value.Required {
				return fmt.Errorf("webhook %s: header %s missing", key, p.Value.Name)
			}
			continue
		}
		if s := p.Value.Schema; s != nil && s.Value != nil {
			if err := s.Value.VisitJSON(got[0], openapi3.EnableJSONSchema2020()); err != nil {
				return fmt.Errorf("webhook %s: header %s: %w", key, p.Value.Name, err)
			}
		}
	}
	if err := checkEventHeaders(h); err != nil {
		return fmt.Errorf("webhook %s: %w", key, err)
	}
	return checkBody(key, op, v)
}

// CheckBody checks a payload without its headers (a fixture) against the
// schema of event and the payload's action.
func (w *Webhooks) CheckBody(event string, body []byte) error {
	key, op, v, err := w.operation(event, body)
	if err != nil {
		return err
	}
	return checkBody(key, op, v)
}

func (w *Webhooks) operation(event string, body []byte) (string, *openapi3.Operation, any, error) {
	if event == "" {
		return "", nil, nil, errors.New("webhook: no event (X-GitHub-Event)")
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", nil, nil, fmt.Errorf("webhook %s: body: %w", event, err)
	}
	key := strings.ReplaceAll(event, "_", "-")
	if obj, ok := v.(map[string]any); ok {
		if a, ok := obj["action"].(string); ok {
			key += "-" + strings.ReplaceAll(a, "_", "-")
		}
	}
	item := w.doc.Webhooks[key]
	if item == nil || item.Post == nil {
		return "", nil, nil, fmt.Errorf("webhook %s: %w", key, ErrNoSchema)
	}
	return key, item.Post, v, nil
}

func checkBody(key string, op *openapi3.Operation, v any) error {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return fmt.Errorf("webhook %s: no body schema", key)
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return fmt.Errorf("webhook %s: no body schema", key)
	}
	if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("webhook %s: body: %w", key, short{err})
	}
	return nil
}

// short leaves out of a schema error the schema and value it prints,
// pages long: the place and the reason are enough.
type short struct{ err error }

func (s short) Error() string {
	msg, _, _ := strings.Cut(s.err.Error(), "\nSchema:")
	return msg
}

func (s short) Unwrap() error { return s.err }

// checkEventHeaders checks what the schema's header list leaves as plain
// strings: the forms GitHub documents for them.
func checkEventHeaders(h http.Header) error {
	if sig := h.Get("X-Hub-Signature-256"); !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 ||
		strings.Trim(sig[len("sha256="):], "0123456789abcdef") != "" {
		return fmt.Errorf("header X-Hub-Signature-256 %q is not sha256=<64 hex>", sig)
	}
	for _, name := range []string{"X-GitHub-Hook-ID", "X-GitHub-Hook-Installation-Target-ID"} {
		v := h.Get(name)
		if v == "" || strings.Trim(v, "0123456789") != "" {
			return fmt.Errorf("header %s %q is not a number", name, v)
		}
	}
	return nil
}

// ValidateAnswer checks GraphQL's answer to query as GitHub's server would
// shape it: under data, exactly the fields asked for (by alias), each of
// its schema type (enum values, scalars, lists, non-null). An answer with
// errors may hold null anywhere, as GitHub nulls what errored.
func (g *GraphQL) ValidateAnswer(query string, answer []byte) error {
	doc, err := parser.ParseQuery(&ast.Source{Name: "query", Input: query})
	if err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	if errs := validator.Validate(g.schema, doc); len(errs) > 0 {
		return fmt.Errorf("graphql: %w", errs)
	}
	var a struct {
		Data   map[string]any `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("graphql answer: %w", err)
	}
	for i, e := range a.Errors {
		if e.Message == "" {
			return fmt.Errorf("graphql answer: errors[%d] has no message", i)
		}
	}
	if a.Data == nil {
		if len(a.Errors) == 0 {
			return errors.New("graphql answer: neither data nor errors")
		}
		return nil
	}
	c := answerCheck{schema: g.schema, lenient: len(a.Errors) > 0}
	return c.selection(doc.Operations[0].SelectionSet, a.Data, "data")
}

type answerCheck struct {
	schema  *ast.Schema
	lenient bool // errors were answered: any value may be null
}

func (c answerCheck) selection(set ast.SelectionSet, obj map[string]any, path string) error {
	asked := map[string]bool{}
	var fields []*ast.Field
	var collect func(ast.SelectionSet)
	collect = func(set ast.SelectionSet) {
		for _, s := range set {
			switch s := s.(type) {
			case *ast.Field:
				fields = append(fields, s)
			case *ast.InlineFragment:
				collect(s.SelectionSet)
			case *ast.FragmentSpread:
				if s.Definition != nil {
					collect(s.Definition.SelectionSet)
				}
			}
		}
	}
	collect(set)
	for _, f := range fields {
		key := f.Alias
		if key == "" {
			key = f.Name
		}
		asked[key] = true
		v, ok := obj[key]
		if !ok {
			if c.lenient {
				continue
			}
			return fmt.Errorf("graphql answer: %s.%s missing", path, key)
		}
		if err := c.value(f.Definition.Type, f.SelectionSet, v, path+"."+key); err != nil {
			return err
		}
	}
	for k := range obj {
		if !asked[k] {
			return fmt.Errorf("graphql answer: %s.%s was not asked for", path, k)
		}
	}
	return nil
}

func (c answerCheck) value(t *ast.Type, set ast.SelectionSet, v any, path string) error {
	if v == nil {
		if t.NonNull && !c.lenient {
			return fmt.Errorf("graphql answer: %s is null, type %s", path, t)
		}
		return nil
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("graphql answer: %s is not a list (%s)", path, t)
		}
		for i, x := range list {
			if err := c.value(t.Elem, set, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	def := c.schema.Types[t.NamedType]
	if def == nil {
		return fmt.Errorf("graphql answer: %s: unknown type %s", path, t.NamedType)
	}
	switch def.Kind {
	case ast.Enum:
		s, ok := v.(string)
		if !ok || def.EnumValues.ForName(s) == nil {
			return fmt.Errorf("graphql answer: %s = %v is not a %s", path, v, def.Name)
		}
	case ast.Scalar:
		ok := false
		switch def.Name {
		case "Int":
			n, isNum := v.(float64)
			ok = isNum && n == float64(int64(n))
		case "Float":
			_, ok = v.(float64)
		case "Boolean":
			_, ok = v.(bool)
		default: // String, ID and GitHub's scalars (DateTime, URI, GitObjectID, ...) are strings
			_, ok = v.(string)
		}
		if !ok {
			return fmt.Errorf("graphql answer: %s = %v is not a %s", path, v, def.Name)
		}
	default:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("graphql answer: %s is not an object (%s)", path, def.Name)
		}
		return c.selection(set, obj, path)
	}
	return nil
}
