package webhookserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/ghevents"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
)

const token = "webhookserver-token-6d2e"

// servers assembles both listeners' handlers as Run does, over one private
// Redis.
type servers struct {
	api, hook string
	ledger    *ledger.Ledger
}

func assemble(t *testing.T) *servers {
	t.Helper()
	rdb := redistest.Start(t).Client()
	led := ledger.New(rdb, ledger.Options{})
	claims, err := api.New(api.Config{Ledger: led, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := ghevents.NewHandler(ghevents.Config{
		Secrets:  [][]byte{[]byte("webhookserver-secret-1f0a")},
		Installs: installs.New(rdb),
		Enqueuer: ghevents.EnqueuerFunc(func(context.Context, *asynq.Task) (tasks.Result, error) { return tasks.Enqueued, nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	apiTS := httptest.NewServer(apiHandler(metrics.Health(prometheus.NewRegistry(), nil), claims))
	hookTS := httptest.NewServer(hookHandler(hook))
	t.Cleanup(apiTS.Close)
	t.Cleanup(hookTS.Close)
	return &servers{api: apiTS.URL, hook: hookTS.URL, ledger: led}
}

// send sends one request without following redirects; follow makes it
// follow them as curl -L --path-as-is does.
func send(t *testing.T, method, url, auth string, follow bool) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{"started": true}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if follow {
		c.CheckRedirect = nil
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

// No path of either listener is answered with a redirect: a /v1 request is
// authenticated first, then an unclean path is a JSON 400, and nothing is
// written however the client follows.
func TestUncleanPathsAreRefusedNeverRedirected(t *testing.T) {
	s := assemble(t)
	v1 := []string{
		"/v1/repos/x/../hive/alpha/dispatches/905",
		"/v1/repos/hive/alpha/./dispatches/905",
		"/v1/repos/hive/alpha/dispatches/905/",
		"/v1/repos/hive//alpha/dispatches/905",
		"/v1//repos/hive/alpha/dispatches/905",
		"/v1/repos/x/%2e%2e/hive/alpha/dispatches/905",
		"/v1/claims/",
		"/v1/../v1/claims",
		"/v1/",
	}
	for _, p := range v1 {
		if code, _, body := send(t, "PUT", s.api+p, "", false); code != http.StatusUnauthorized || !isJSONError(body) {
			t.Errorf("PUT %s without a token: %d %s; want a JSON 401 before anything else", p, code, body)
		}
		if code, hdr, body := send(t, "PUT", s.api+p, token, false); code != http.StatusBadRequest || !isJSONError(body) {
			t.Errorf("PUT %s: %d (Location %q) %s; want a JSON 400", p, code, hdr.Get("Location"), body)
		}
		send(t, "PUT", s.api+p, token, true)
	}
	if _, err := s.ledger.Get(context.Background(), "hive/alpha", 905); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("hive/alpha#905 after unclean PUTs: %v, want no row", err)
	}
	for _, u := range []string{
		s.api + "/healthz/../metrics", s.api + "//metrics", s.api + "/healthz/", s.api + "//v1/claims",
		s.hook + "/webhook/../webhook", s.hook + "//webhook", s.hook + "/webhook/",
	} {
		if code, hdr, body := send(t, "POST", u, "", false); code/100 == 3 || code != http.StatusBadRequest || !isJSONError(body) {
			t.Errorf("POST %s: %d (Location %q) %s; want a JSON 400, never a redirect", u, code, hdr.Get("Location"), body)
		}
	}
	// The clean paths still work as mounted.
	if code, _, _ := send(t, "GET", s.api+"/healthz", "", false); code != http.StatusOK {
		t.Errorf("GET /healthz: %d", code)
	}
	if code, _, body := send(t, "PUT", s.api+"/v1/repos/hive/alpha/dispatches/905", token, false); code != http.StatusOK {
		t.Errorf("clean PUT: %d %s", code, body)
	}
}

func isJSONError(body []byte) bool {
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(bytes.TrimSpace(body), &e) == nil && e.Error != ""
}
