package api

import (
	"context"
	"fmt"
	"net/http"

	"sigs.k8s.io/yaml"

	"github.com/queen-app/queen-app/docs"
)

// OpenAPIPath serves docs/openapi.yaml as JSON.
const OpenAPIPath = "/v1/openapi.json"

// openAPIJSON is docs/openapi.yaml converted once, when the process starts.
var openAPIJSON, openAPIErr = yaml.YAMLToJSON(docs.OpenAPI)

// openAPI answers the API's description: the one in docs/, which the API
// tests hold every answer to.
func (s *server) openAPI(_ context.Context, w *responseWriter, r *request) error {
	if _, err := query(r); err != nil {
		return err
	}
	if openAPIErr != nil {
		return fmt.Errorf("docs/openapi.yaml: %w", openAPIErr)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIJSON)
	return nil
}

// Route is one route New serves: a method and a ServeMux pattern, with the
// route's name in metrics and logs. ServeMux answers HEAD with each GET.
type Route struct {
	Method, Pattern, Name string
}

// Routes lists the routes New serves, from the one table it registers, so
// a test can hold docs/openapi.yaml to them.
func Routes() []Route {
	var out []Route
	for _, e := range (&server{}).endpoints() {
		out = append(out, Route{Method: e.method, Pattern: e.pattern, Name: e.name})
	}
	return out
}
