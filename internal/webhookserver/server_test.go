package webhookserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
		Secrets:    [][]byte{[]byte("webhookserver-secret-1f0a")},
		Installs:   installs.New(rdb),
		Deliveries: ghevents.NewDeliveryLog(rdb),
		Enqueuer:   ghevents.EnqueuerFunc(func(context.Context, *asynq.Task) (tasks.Result, error) { return tasks.Enqueued, nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	apiTS := httptest.NewServer(apiHandler(metrics.Health(prometheus.NewRegistry(), nil, nil), claims))
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

// hold opens a request whose body never finishes, so its handler stays in
// flight until the returned function closes the connection.
func hold(t *testing.T, method, base, path string, header map[string]string, length int) func() {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, u.Host, length)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n{")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return func() { c.Close() }
}

// counting counts the requests being served by h.
func counting(h http.Handler, n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		defer n.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// Both listeners serve a bounded number of requests at once and refuse the
// next at once with a JSON 503, so a flood of 25 MiB bodies cannot grow the
// process without bound.
func TestRequestsInFlightAreBounded(t *testing.T) {
	rdb := redistest.Start(t).Client()
	claims, err := api.New(api.Config{Ledger: ledger.New(rdb, ledger.Options{}), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := ghevents.NewHandler(ghevents.Config{
		Secrets:    [][]byte{[]byte("webhookserver-secret-1f0a")},
		Installs:   installs.New(rdb),
		Deliveries: ghevents.NewDeliveryLog(rdb),
		Enqueuer:   ghevents.EnqueuerFunc(func(context.Context, *asynq.Task) (tasks.Result, error) { return tasks.Enqueued, nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	webhookHeaders := map[string]string{ghevents.EventHeader: "ping", ghevents.DeliveryHeader: "d-1",
		ghevents.SignatureHeader: "sha256=00"}
	apiHeaders := map[string]string{"Authorization": "Bearer " + token}
	for _, l := range []struct {
		name, method, path string
		handler            http.Handler
		limit              int
		header             map[string]string
		length             int
	}{
		{"webhook", "POST", "/webhook", hookHandler(hook), ghevents.MaxInFlight, webhookHeaders, ghevents.MaxBodyBytes},
		{"api", "PUT", "/v1/repos/hive/t27/dispatches/1", apiHandler(metrics.Health(prometheus.NewRegistry(), nil, nil), claims),
			api.MaxInFlight, apiHeaders, api.MaxBodyBytes},
	} {
		t.Run(l.name, func(t *testing.T) {
			var inFlight atomic.Int32
			ts := httptest.NewServer(counting(l.handler, &inFlight))
			defer ts.Close()
			code := func() int {
				t.Helper()
				c, _, body := send(t, l.method, ts.URL+l.path, token, false)
				if c == http.StatusServiceUnavailable && !isJSONError(body) {
					t.Fatalf("503 without a JSON error: %s", body)
				}
				return c
			}
			var closers []func()
			defer func() {
				for _, c := range closers {
					c()
				}
			}()
			held := func(n int) {
				t.Helper()
				for len(closers) < n {
					closers = append(closers, hold(t, l.method, ts.URL, l.path, l.header, l.length))
				}
				deadline := time.Now().Add(20 * time.Second)
				for inFlight.Load() != int32(n) {
					if time.Now().After(deadline) {
						t.Fatalf("%d requests in flight, want %d", inFlight.Load(), n)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			held(l.limit - 1)
			if c := code(); c == http.StatusServiceUnavailable {
				t.Fatalf("with %d in flight: 503, want the request served", l.limit-1)
			}
			held(l.limit)
			if c := code(); c != http.StatusServiceUnavailable {
				t.Fatalf("with %d in flight: %d, want 503 at once", l.limit, c)
			}
			for _, c := range closers {
				c()
			}
			closers = nil
			held(0)
			if c := code(); c == http.StatusServiceUnavailable {
				t.Fatal("after the flood: 503, want the request served")
			}
		})
	}
}
