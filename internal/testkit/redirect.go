package testkit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// OffOriginRedirects starts a server that answers every request with the
// JSON body and counts those carrying an Authorization header, and, for
// "another port" and "another scheme" of its host, a front server that
// redirects every request there with code. A client holding a token, given
// a front's URL, must refuse the redirect: leaked reports how many times
// the token got through anyway.
func OffOriginRedirects(tb testing.TB, code int, body string) (fronts map[string]string, leaked func() int32) {
	tb.Helper()
	var n atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			n.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	tb.Cleanup(other.Close)
	fronts = map[string]string{}
	for name, target := range map[string]string{
		"another port":   other.URL,
		"another scheme": strings.Replace(other.URL, "http://", "https://", 1),
	} {
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target+r.URL.RequestURI(), code)
		}))
		tb.Cleanup(front.Close)
		fronts[name] = front.URL
	}
	return fronts, n.Load
}
