package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/queen-app/queen-app/docs"
)

// The built webhook serves docs/openapi.yaml at /v1/openapi.json, behind
// the token: what a client generator fetches is what the repository holds.
func TestWebhookServesItsOpenAPIDescription(t *testing.T) {
	s := newStack(t, nil)
	s.webhook()
	if code := apiJSON(t, "GET", s.apiURL+"/v1/openapi.json", "wrong-token-0123456789", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/openapi.json with a wrong token: %d, want 401", code)
	}
	var got map[string]any
	if code := apiJSON(t, "GET", s.apiURL+"/v1/openapi.json", apiToken, nil, &got); code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d, want 200", code)
	}
	raw, err := yaml.YAMLToJSON(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the webhook serves a description other than docs/openapi.yaml (info %v, want %v)", got["info"], want["info"])
	}
}
