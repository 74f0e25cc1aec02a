package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	for path, want := range map[string]bool{
		"/":                       true,
		"/webhook":                true,
		"/v1/repos/hive/t27/x/1":  true,
		"/v1/repos/hi.ve/t2..7/x": true,
		"/v1/a%2Fb":               true, // one segment; the route refuses the name
		"/v1/":                    false,
		"/webhook/":               false,
		"//webhook":               false,
		"/v1//claims":             false,
		"/v1/./claims":            false,
		"/v1/../metrics":          false,
		"/v1/x/..":                false,
		"/v1/%2e%2e/metrics":      false,
		"/v1/%2E/metrics":         false,
	} {
		r := httptest.NewRequest("GET", "http://h"+path, nil)
		if got := Canonical(r); got != want {
			t.Errorf("Canonical(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestRefuseUncleanNeverRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {})
	h := RefuseUnclean(mux)
	for _, path := range []string{"/x/../healthz", "//healthz", "/healthz/"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://h"+path, nil))
		if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/json" ||
			!strings.Contains(rec.Body.String(), `"error":"path: `) {
			t.Errorf("GET %s: %d %q %s, want a JSON 400", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://h/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /healthz: %d", rec.Code)
	}
}
