package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
)

// While the process starts (Redis, the ledger's migration) an
// authenticated request gets 503 with Retry-After; a wrong token is
// refused first, without waiting; once started the request is served.
func TestStartingAnswers503AfterTheTokenCheck(t *testing.T) {
	rdb := redistest.Start(t).Client()
	var started atomic.Bool
	var asked atomic.Int32
	h, err := api.New(api.Config{Ledger: ledger.New(rdb, ledger.Options{}), Token: token,
		Started: func(ctx context.Context) bool { asked.Add(1); return started.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(checked(t, h))
	defer ts.Close()
	get := func(tok string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/claims", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get("wrong-token-0123456"); resp.StatusCode != http.StatusUnauthorized || asked.Load() != 0 {
		t.Errorf("a wrong token while starting: %d, start-up asked %d times; want 401 before anything", resp.StatusCode, asked.Load())
	}
	if resp := get(token); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("while starting: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	started.Store(true)
	if resp := get(token); resp.StatusCode != http.StatusOK {
		t.Errorf("started: %d, want 200", resp.StatusCode)
	}
}
