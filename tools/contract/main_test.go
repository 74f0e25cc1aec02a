package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReferencedKeepsWhatIsReachedAndDropsExamples(t *testing.T) {
	var doc map[string]any
	err := json.Unmarshal([]byte(`{"components": {
		"schemas": {
			"a": {"properties": {"b": {"$ref": "#/components/schemas/b"}, "examples": {"type": "string"}}},
			"b": {"items": {"$ref": "#/components/schemas/c"}},
			"c": {"type": "string"},
			"unused": {"type": "integer"}
		},
		"parameters": {"p": {"name": "p", "in": "query", "schema": {"$ref": "#/components/schemas/c"}}},
		"examples": {"ex": {"value": {"a": 1}}}
	}}`), &doc)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	_ = json.Unmarshal([]byte(`{"get": {"parameters": [{"$ref": "#/components/parameters/p"}],
		"responses": {"200": {"content": {"application/json": {
			"schema": {"$ref": "#/components/schemas/a"},
			"examples": {"default": {"$ref": "#/components/examples/ex"}}}}}}}}`), &root)
	dropExampleRefs(root)
	got := referenced(doc, root)
	schemas, _ := got["schemas"].(map[string]any)
	for _, want := range []string{"a", "b", "c"} {
		if schemas[want] == nil {
			t.Errorf("schema %s, reached through $refs, was dropped", want)
		}
	}
	if schemas["unused"] != nil || got["examples"] != nil {
		t.Errorf("kept what nothing references: %v", got)
	}
	if got["parameters"].(map[string]any)["p"] == nil {
		t.Error("parameter p was dropped")
	}
	if schemas["a"].(map[string]any)["properties"].(map[string]any)["examples"] == nil {
		t.Error("a property named examples was taken for media-type examples")
	}
}

func TestReadPackageRefusesALicenseNotMIT(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "octokit-openapi-1.0.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for name, body := range map[string]string{
		"package/package.json":                  `{"name": "@octokit/openapi", "version": "1.0.0", "license": "GPL-3.0"}`,
		"package/LICENSE":                       "GPL",
		"package/generated/api.github.com.json": `{}`,
	} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	_ = zw.Close()
	_ = f.Close()
	_, err = readPackage(dir, pkgREST, restDescription)
	if err == nil || !strings.Contains(err.Error(), "not MIT") {
		t.Errorf("readPackage = %v, want a refusal naming the license", err)
	}
}
