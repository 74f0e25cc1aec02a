package api

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/api.md lists every value of queen_api_requests_total's route label,
// so an operator can read the metric without the source: a new route or
// refusal that is not listed there fails here.
func TestEveryRouteLabelIsInAPIDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(doc), "queen_api_requests_total{route, code}")
	if start < 0 {
		t.Fatal("docs/api.md does not describe queen_api_requests_total{route, code}")
	}
	para := string(doc)[start:]
	if end := strings.Index(para, "\n\n"); end >= 0 {
		para = para[:end]
	}
	var labels []string
	for _, e := range (&server{}).endpoints() {
		labels = append(labels, e.name)
	}
	refusals := regexp.MustCompile(`w\.route = "([a-z_]+)"`)
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range refusals.FindAllStringSubmatch(string(src), -1) {
			labels = append(labels, m[1])
		}
	}
	if len(labels) < 20 {
		t.Fatalf("found only %d route labels in the source (%v): the scan is broken", len(labels), labels)
	}
	for _, l := range labels {
		if !strings.Contains(para, "`"+l+"`") {
			t.Errorf("route label %q is not listed in docs/api.md's paragraph on queen_api_requests_total", l)
		}
	}
}
