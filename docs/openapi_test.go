package docs_test

import (
	"context"
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
