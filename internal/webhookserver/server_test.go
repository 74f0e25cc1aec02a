package webhookserver

import (
	"bufio"
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
	"github.com/queen-app/queen-app/internal/serve"
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
// flight until the connection is closed (or the server drops it).
func hold(t *testing.T, method, base, path string, header map[string]string, length int) net.Conn {
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
	return c
}

// counting counts the requests being served by h.
func counting(h http.Handler, n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		defer n.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// The claims API serves a bounded number of requests at once and refuses
// the next at once with a JSON 503, so a flood of bodies cannot grow the
// process without bound (the webhook's bounds: TestWebhookHoldsDeliveriesToItsBudget).
func TestRequestsInFlightAreBounded(t *testing.T) {
	rdb := redistest.Start(t).Client()
	claims, err := api.New(api.Config{Ledger: ledger.New(rdb, ledger.Options{}), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	apiHeaders := map[string]string{"Authorization": "Bearer " + token}
	for _, l := range []struct {
		name, method, path string
		handler            http.Handler
		limit              int
		header             map[string]string
		length             int
	}{
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
			var closers []net.Conn
			defer func() {
				for _, c := range closers {
					c.Close()
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
				c.Close()
			}
			closers = nil
			held(0)
			if c := code(); c == http.StatusServiceUnavailable {
				t.Fatal("after the flood: 503, want the request served")
			}
		})
	}
}

// clientAt is an HTTP client whose connections come from local address ip.
func clientAt(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 10 * time.Second}
}

// The receiver holds its deliveries in flight to its budget: requests that
// send their headers, claim 25 MiB and send one byte hold a place and a
// first read each, never what they claim; one address past its places is
// refused at once with a 503 and Retry-After while another is still
// served; and a body that does not come is dropped after
// ghevents.BodyTimeout, freeing its place.
func TestWebhookHoldsDeliveriesToItsBudget(t *testing.T) {
	rdb := redistest.Start(t).Client()
	budget := serve.NewBudget(serve.Limits{Places: 6, ClientPlaces: 3, Bytes: 1 << 20, ClientBytes: 1 << 20})
	hook, err := ghevents.NewHandler(ghevents.Config{
		Secrets:    [][]byte{[]byte("webhookserver-secret-1f0a")},
		Installs:   installs.New(rdb),
		Deliveries: ghevents.NewDeliveryLog(rdb),
		Enqueuer:   ghevents.EnqueuerFunc(func(context.Context, *asynq.Task) (tasks.Result, error) { return tasks.Enqueued, nil }),
		Budget:     budget,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(hookHandler(hook))
	defer ts.Close()
	forged := map[string]string{ghevents.EventHeader: "ping", ghevents.DeliveryHeader: "d-1",
		ghevents.SignatureHeader: "sha256=" + strings.Repeat("0", 64)}
	started := time.Now()
	var held []net.Conn
	for range 3 {
		c := hold(t, "POST", ts.URL, "/webhook", forged, ghevents.MaxBodyBytes)
		defer c.Close()
		held = append(held, c)
	}
	deadline := time.Now().Add(ghevents.BodyTimeout)
	for places, _ := budget.InUse(); places != 3; places, _ = budget.InUse() {
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries in flight, want 3", places)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, bytes := budget.InUse(); bytes != 3*serve.FirstRead {
		t.Fatalf("3 requests claiming 25 MiB with 1 byte sent hold %d bytes, want 3 first reads (%d)", bytes, 3*serve.FirstRead)
	}
	post := func(c *http.Client) (int, http.Header, []byte) {
		t.Helper()
		resp, err := c.Post(ts.URL+"/webhook", "application/json", strings.NewReader(`{"zen":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, body
	}
	if code, hdr, body := post(clientAt("127.0.0.1")); code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !isJSONError(body) {
		t.Fatalf("a fourth from the same address: %d %v %s, want a JSON 503 with Retry-After", code, hdr, body)
	}
	if code, _, body := post(clientAt("127.0.0.2")); code == http.StatusServiceUnavailable {
		t.Fatalf("another address: %d %s, want it served", code, body)
	}
	if time.Since(started) >= ghevents.BodyTimeout {
		t.Fatalf("the checks took %v, past the body timeout: the machine is too slow for this test", time.Since(started))
	}
	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(ghevents.BodyTimeout + 5*time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
			t.Fatalf("held request %d: %v %v, want it dropped with a 408 and its connection closed", i, resp, err)
		}
	}
	// A place is freed just after its answer is written.
	deadline = time.Now().Add(5 * time.Second)
	for places, bytes := budget.InUse(); places != 0 || bytes != 0; places, bytes = budget.InUse() {
		if time.Now().After(deadline) {
			t.Fatalf("after the held requests were dropped: %d places, %d bytes in use", places, bytes)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, _, body := post(clientAt("127.0.0.1")); code == http.StatusServiceUnavailable {
		t.Fatalf("the held address after the drop: %d %s, want it served", code, body)
	}
}
