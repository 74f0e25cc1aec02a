package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/queen-app/queen-app/internal/ghevents"
)

var secret = []byte("loadgen-test-secret-4b1d")

// receiver verifies every delivery as the real one does and records what
// it was sent, per path.
type receiver struct {
	mu     sync.Mutex
	ids    map[string][]string
	events map[string]bool
	bad    int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !ghevents.VerifySignature([][]byte{secret}, r.Header.Get(ghevents.SignatureHeader), body) ||
		r.Header.Get("Content-Type") != "application/json" {
		rc.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.ids[r.URL.Path] = append(rc.ids[r.URL.Path], r.Header.Get(ghevents.DeliveryHeader))
	rc.events[r.Header.Get(ghevents.EventHeader)] = true
	if r.URL.Path == "/down" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func start(t *testing.T) (*receiver, string) {
	rc := &receiver{ids: map[string][]string{}, events: map[string]bool{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func bodyFile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(path, []byte(`{"action":"closed"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunSendsEveryRoundToEveryTarget(t *testing.T) {
	rc, url := start(t)
	body := bodyFile(t)
	p := Plan{Clients: 3, Rounds: 3, Deliveries: 20, Targets: []Target{
		{Name: "unique", URL: url + "/a", Event: "pull_request", BodyFile: body, IDPrefix: "run-7"},
		{Name: "fixed", URL: url + "/b", Event: "ping", BodyFile: body},
	}}
	res, err := Run(context.Background(), p, secret)
	if err != nil {
		t.Fatal(err)
	}
	if rc.bad != 0 {
		t.Fatalf("%d deliveries failed the receiver's signature check", rc.bad)
	}
	if len(res.Targets) != 2 || res.Targets[0].Name != "unique" || res.Targets[1].Name != "fixed" {
		t.Fatalf("targets %+v, want unique then fixed", res.Targets)
	}
	for _, tr := range res.Targets {
		if len(tr.Rounds) != 3 || tr.PerSec <= 0 || tr.P99us <= 0 {
			t.Errorf("%s: %d rounds, %.0f/s, p99 %.0f µs: want 3 rounds of measured figures", tr.Name, len(tr.Rounds), tr.PerSec, tr.P99us)
		}
	}
	distinct := map[string]bool{}
	for _, id := range rc.ids["/a"] {
		if !strings.HasPrefix(id, "run-7-") {
			t.Fatalf("delivery id %q lacks the prefix run-7-", id)
		}
		distinct[id] = true
	}
	if len(rc.ids["/a"]) != 60 || len(distinct) != 60 {
		t.Errorf("unique target: %d deliveries, %d distinct ids; want 60 of each", len(rc.ids["/a"]), len(distinct))
	}
	if len(rc.ids["/b"]) != 60 || rc.ids["/b"][0] != "loadgen" || rc.ids["/b"][59] != "loadgen" {
		t.Errorf("fixed target: %d deliveries (first id %q), want 60 under id loadgen", len(rc.ids["/b"]), rc.ids["/b"][0])
	}
	if !rc.events["pull_request"] || !rc.events["ping"] {
		t.Errorf("events seen %v, want pull_request and ping", rc.events)
	}
}

func TestRunFailsOnAnotherStatus(t *testing.T) {
	_, url := start(t)
	p := Plan{Clients: 2, Rounds: 1, Deliveries: 5, Targets: []Target{
		{Name: "receiver", URL: url + "/down", Event: "pull_request", BodyFile: bodyFile(t)},
	}}
	_, err := Run(context.Background(), p, secret)
	if err == nil || !strings.Contains(err.Error(), "target receiver") || !strings.Contains(err.Error(), "answered 503, want 202") {
		t.Fatalf("err %v, want the target named and 503 against 202", err)
	}
}

func TestMedian(t *testing.T) {
	rs := []Round{{PerSec: 9}, {PerSec: 1}, {PerSec: 5}, {PerSec: 100}, {PerSec: 4}}
	if got := median(rs, func(r Round) float64 { return r.PerSec }); got != 5 {
		t.Fatalf("median %v, want 5", got)
	}
}

func TestCommandLine(t *testing.T) {
	_, url := start(t)
	body := bodyFile(t)
	planFile := func(s string) string {
		path := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct {
		name   string
		args   []string
		secret string
		want   string
	}{
		{"no secret", []string{"-url", url, "-body", body}, "", "GITHUB_WEBHOOK_SECRET is not set"},
		{"no url", []string{"-body", body}, string(secret), "-url is required"},
		{"no body", []string{"-url", url}, string(secret), "-body is required"},
		{"no clients", []string{"-url", url, "-body", body, "-clients", "0"}, string(secret), "clients 0"},
		{"unknown plan field", []string{"-plan", planFile(`{"clients":1,"rounds":1,"deliveries":1,"targtes":[]}`)}, string(secret), `unknown field "targtes"`},
		{"bad id prefix", []string{"-plan", planFile(`{"clients":1,"rounds":1,"deliveries":1,"targets":[{"name":"a","url":"` + url + `","event":"ping","body_file":"` + body + `","id_prefix":"a b"}]}`)}, string(secret), "targets[0].id_prefix"},
		{"id prefix too long for a delivery id", []string{"-url", url, "-body", body, "-id-prefix", strings.Repeat("x", 125)}, string(secret), "at most 128"},
		{"missing body file", []string{"-url", url, "-body", body + ".gone"}, string(secret), "targets[0].body_file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(context.Background(), c.args, c.secret, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-url", url, "-body", body, "-deliveries", "4", "-id-prefix", "cli"}, string(secret), &out); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not a Result: %v\n%s", err, out.String())
	}
	if res.Clients != 1 || len(res.Targets) != 1 || res.Targets[0].Name != url || len(res.Targets[0].Rounds) != 1 {
		t.Fatalf("result %+v, want one target named by its URL, one round, one client", res)
	}
}
