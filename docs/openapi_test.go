package docs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/queen-app/queen-app/docs"
)

// The description is a valid OpenAPI 3.1 document: what openapi-typescript
// and kin-openapi read is what people read.
func TestOpenAPIIsValid(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Every JSON answer docs/api.md shows under a route is one the description
// allows for that route (an error sample the Error object), so the prose
// and the description cannot tell two stories.
func TestAPISamplesAreDescribed(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	checked, errs := checkSamples(doc, string(md))
	for _, err := range errs {
		t.Error(err)
	}
	if checked < 10 {
		t.Fatalf("checked %d samples of docs/api.md; its sections or fences moved", checked)
	}
	// A sample that drifted is caught.
	drifted := strings.Replace(string(md), `"version": 1, "outcome": "would_free"}`, `"version": "1", "outcome": "would_free"}`, 1)
	if drifted == string(md) {
		t.Fatal("the PUT sample moved; update this test")
	}
	if _, errs := checkSamples(doc, drifted); len(errs) != 1 || !strings.Contains(errs[0].Error(), "version") {
		t.Fatalf("a sample with version \"1\": %v, want one error naming version", errs)
	}
}

// checkSamples checks the JSON samples of md's route sections.
func checkSamples(doc *openapi3.T, md string) (checked int, errs []error) {
	heading := regexp.MustCompile(`^## (GET|PUT|POST|DELETE) (/v1/\S+)`)
	var op *openapi3.Operation
	var route string
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") {
			op, route = nil, ""
			if m := heading.FindStringSubmatch(lines[i]); m != nil {
				route = m[1] + " " + m[2]
				if item := doc.Paths.Find(m[2]); item != nil {
					op = item.GetOperation(m[1])
				}
				if op == nil {
					errs = append(errs, fmt.Errorf("docs/api.md has a section for %s, which docs/openapi.yaml does not describe", route))
				}
			}
			continue
		}
		if lines[i] != "```json" || op == nil {
			continue
		}
		var block []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			block = append(block, lines[i])
		}
		var v any
		if err := json.Unmarshal([]byte(strings.Join(block, "\n")), &v); err != nil {
			errs = append(errs, fmt.Errorf("%s: a sample is not JSON: %v", route, err))
			continue
		}
		schema, status := successSchema(op)
		if m, ok := v.(map[string]any); ok && m["error"] != nil {
			schema, status = doc.Components.Schemas["Error"].Value, "error"
		}
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			errs = append(errs, fmt.Errorf("%s: a sample is not a %s answer docs/openapi.yaml describes: %v", route, status, err))
		}
		checked++
	}
	return checked, errs
}

// successSchema is the schema of op's 2xx JSON answer.
func successSchema(op *openapi3.Operation) (*openapi3.Schema, string) {
	for _, code := range []string{"200", "202"} {
		if r := op.Responses.Value(code); r != nil {
			if mt := r.Value.Content.Get("application/json"); mt != nil {
				return mt.Schema.Value, code
			}
		}
	}
	return nil, ""
}
