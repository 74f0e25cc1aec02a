package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api"
)

// authLines are the log's "api authentication refused" lines.
func authLines(t *testing.T, e *env) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "api authentication refused" {
			out = append(out, m)
		}
	}
	return out
}

// from is a client whose requests come from the loopback address ip.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

func send(t *testing.T, hc *http.Client, url, bearer string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", url+"/v1/claims", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// 2,000 wrong tokens from one address cost two Warn lines (the burst's
// first refusal, its first wait), never the token: AuthFailures are 401,
// the rest 429 with Retry-After. The right token from that same address
// is served all along; another address is not slowed; each further wait
// is twice as long.
func TestWrongTokensAreThrottledPerAddressAndLoggedOncePerBurst(t *testing.T) {
	e := newEnv(t, envOpts{})
	a, b := from("127.0.0.1"), from("127.0.0.2")
	codes := map[int]int{}
	for i := 0; i < 2000; i++ {
		resp := send(t, a, e.url, "wrong-token-marker-"+strconv.Itoa(i))
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("429 with Retry-After %q, want 1", resp.Header.Get("Retry-After"))
		}
	}
	if codes[401] != api.AuthFailures || codes[429] != 2000-api.AuthFailures {
		t.Fatalf("answers %v, want %d 401 then 429", codes, api.AuthFailures)
	}
	if r := send(t, a, e.url, token); r.StatusCode != 200 {
		t.Fatalf("the right token during the wait: %d, want 200", r.StatusCode)
	}
	if r := send(t, b, e.url, token); r.StatusCode != 200 {
		t.Fatalf("another address: %d, want 200", r.StatusCode)
	}
	lines := authLines(t, e)
	if len(lines) != 2 || lines[0]["level"] != "WARN" || lines[0]["client"] != "127.0.0.1" || lines[0]["refused"] != 1.0 ||
		lines[1]["refused"] != float64(api.AuthFailures) || lines[1]["wait"] != float64(time.Second) {
		t.Fatalf("log lines %v, want the burst's first refusal and its first wait", lines)
	}
	logs := e.logs.String()
	if strings.Contains(logs, "wrong-token-marker") || strings.Contains(logs, token) {
		t.Fatal("a token reached the log")
	}

	// The wait is over: AuthFailures more wrong tokens earn twice the
	// wait. The right token served meanwhile does not end the burst, or
	// anyone sharing the address would get AuthFailures more guesses
	// after each of the Queen's calls.
	e.clock.Add(time.Second)
	for i := 0; i < api.AuthFailures; i++ {
		if r := send(t, a, e.url, "wrong-token-marker"); r.StatusCode != 401 {
			t.Fatalf("after the wait, wrong token %d: %d, want 401", i, r.StatusCode)
		}
	}
	if r := send(t, a, e.url, "wrong"); r.StatusCode != 429 || r.Header.Get("Retry-After") != "2" {
		t.Fatalf("second wait: %d Retry-After %q, want 429 and 2", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := send(t, a, e.url, token); r.StatusCode != 200 {
		t.Fatalf("the right token during the second wait: %d, want 200", r.StatusCode)
	}
	if lines := authLines(t, e); len(lines) != 3 || lines[2]["refused"] != float64(2000+api.AuthFailures) {
		t.Fatalf("log lines %v, want a third for the second wait", lines)
	}
}

// Behind an Ingress every client shares one address: a stranger sending
// wrong tokens as fast as it can never turns the Queen's right token away,
// while the stranger is held to 429s.
func TestARightTokenIsNeverThrottledBySomeoneElsesWrongOnes(t *testing.T) {
	e := newEnv(t, envOpts{})
	shared := from("127.0.0.1")
	for i := 0; i < 200; i++ {
		stranger := send(t, shared, e.url, "guess-"+strconv.Itoa(i))
		if i >= api.AuthFailures && stranger.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("stranger's guess %d: %d, want 429", i, stranger.StatusCode)
		}
		if queen := send(t, shared, e.url, token); queen.StatusCode != 200 {
			t.Fatalf("the Queen's call after %d wrong tokens from its address: %d, want 200", i+1, queen.StatusCode)
		}
	}
}

// A burst ends after AuthQuiet without a refusal: the next wrong token
// starts a new one, logged, with the shortest wait again.
func TestAQuietMinuteEndsTheBurst(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := from("127.0.0.1")
	for i := 0; i < api.AuthFailures; i++ {
		send(t, a, e.url, "wrong")
	}
	e.clock.Add(api.AuthWait)
	for i := 0; i < api.AuthFailures; i++ {
		send(t, a, e.url, "wrong")
	}
	e.clock.Add(api.AuthQuiet + 3*time.Second)
	for i := 0; i < api.AuthFailures; i++ {
		if r := send(t, a, e.url, "wrong"); r.StatusCode != 401 {
			t.Fatalf("wrong token %d of a new burst: %d", i, r.StatusCode)
		}
	}
	if r := send(t, a, e.url, "wrong"); r.Header.Get("Retry-After") != "1" {
		t.Fatalf("the new burst's wait: Retry-After %q, want 1", r.Header.Get("Retry-After"))
	}
	lines := authLines(t, e)
	if len(lines) != 5 || lines[3]["refused"] != 1.0 {
		t.Fatalf("log lines %v: want the first burst's first refusal and two waits, then the new burst's first refusal and wait", lines)
	}
}
