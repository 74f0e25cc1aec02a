package githubapp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
)

// A GitHub stand-in that redirects reads to another host never hands that
// host the installation token or the App JWT: ghinstallation's transports
// set Authorization on every request they send, redirected ones included,
// after Go's client has dropped it for the new host.
func TestNoTokenReachesAnotherHostOnARedirect(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(inst, "hive", repo)
	var mu sync.Mutex
	var leaked []string // Authorization headers the other host received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			leaked = append(leaked, r.Method+" "+r.URL.Path+": "+a)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/graphql") {
			_, _ = w.Write([]byte(`{"data": {}}`))
			return
		}
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(other.Close)
	target, _ := url.Parse(strings.TrimSuffix(s.URL(), "/"))
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/access_tokens"):
			proxy.ServeHTTP(w, r) // minting is not redirected
		default:
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(front.Close)
	a, err := githubapp.New(githubapp.Config{AppID: s.AppID(), PrivateKey: s.Key(), APIURL: front.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A read answered from elsewhere decides nothing: each is an error.
	if _, err := a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1"); err == nil {
		t.Error("ListBranchPRs followed the redirect off the API")
	}
	if res := a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1"}); res["queen-1"].Err == nil {
		t.Error("BatchPRStates followed the redirect off the API")
	}
	if _, _, err := a.DeliveriesPage(ctx, ""); err == nil {
		t.Error("DeliveriesPage followed the redirect off the API")
	}
	if s.Mints() == 0 {
		t.Fatal("no installation token was minted: the test proves nothing")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Fatalf("another host received GitHub credentials:\n%s", strings.Join(leaked, "\n"))
	}
}
