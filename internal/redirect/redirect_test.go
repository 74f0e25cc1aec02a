package redirect_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/queen-app/queen-app/internal/redirect"
)

func TestOrigin(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"https://API.example.com/x", "https://api.example.com:443/y"},
		{"http://127.0.0.1/", "http://127.0.0.1:80/v1"},
		{"http://[::1]:8081/a", "HTTP://[::1]:8081/b"},
	} {
		ua, _ := url.Parse(c.a)
		ub, _ := url.Parse(c.b)
		if redirect.Origin(ua) != redirect.Origin(ub) {
			t.Errorf("%s and %s: origins %s and %s, want one", c.a, c.b, redirect.Origin(ua), redirect.Origin(ub))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"https://api.example.com/", "http://api.example.com/"},
		{"https://api.example.com/", "https://api.example.com:8443/"},
		{"http://127.0.0.1:8081/", "http://127.0.0.1:8082/"},
		{"https://api.example.com/", "https://evil.example.com/"},
		{"https://api.example.com/", "http://api.example.com:443/"},
	} {
		ua, _ := url.Parse(c.a)
		ub, _ := url.Parse(c.b)
		if redirect.Origin(ua) == redirect.Origin(ub) {
			t.Errorf("%s and %s: one origin %s, want two", c.a, c.b, redirect.Origin(ua))
		}
	}
}

// A redirect within the origin is followed; one to another port is
// refused before anything is sent there, so the token never arrives; a
// chain is cut at MaxRedirects.
func TestClientFollowsOnlyWithinTheOrigin(t *testing.T) {
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusFound)
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.Write([]byte(r.Header.Get("Authorization")))
		}
	}))
	defer srv.Close()
	hc := redirect.Client(nil)
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer t0ken-value-0123456789")
		return hc.Do(req)
	}
	resp, err := get("/moved")
	if err != nil || resp.Request.URL.Path != "/here" {
		t.Fatalf("redirect within the origin: %v", err)
	}
	resp.Body.Close()
	if _, err := get("/away"); err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "t0ken") {
		t.Fatalf("redirect to another port: %v, want it refused", err)
	}
	if reached.Load() != 0 {
		t.Fatal("the other port was reached")
	}
	if _, err := get("/loop"); err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Fatalf("redirect loop: %v", err)
	}
	if http.DefaultClient.CheckRedirect != nil {
		t.Fatal("Client changed http.DefaultClient")
	}
}
