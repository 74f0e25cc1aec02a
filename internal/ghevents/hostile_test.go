package ghevents

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/tasks"
)

// gitHubTimeout is how long GitHub waits for a delivery's answer.
const gitHubTimeout = 10 * time.Second

// A body's time and the Redis budget fit in GitHub's 10 s with room for the
// headers and the answer's trip.
func TestBodyTimeoutFitsGitHubsTimeout(t *testing.T) {
	if BodyTimeout+redisavail.Budget > gitHubTimeout-2*time.Second {
		t.Fatalf("BodyTimeout %v + Redis budget %v leave less than 2 s of GitHub's %v", BodyTimeout, redisavail.Budget, gitHubTimeout)
	}
}

// The limits hold what a flood can pin: every place holding its first read
// and every byte of the budget stays a small part of the chart's 256 MiB
// (the whole process measured: e2e BenchmarkWebhookHostile).
func TestLimitsFitTheChartsMemory(t *testing.T) {
	const chartLimit = 256 << 20
	pinned := Limits.Bytes + Limits.Places*serve.FirstRead
	if Limits.ClientPlaces < 256 || Limits.Places < 2*Limits.ClientPlaces || Limits.ClientBytes > Limits.Bytes/2 ||
		Limits.ClientBytes < MaxBodyBytes || pinned > chartLimit/2 {
		t.Fatalf("Limits %+v: want 256 places at least per client and as many left to others, room for one 25 MiB body, and under half the chart's limit pinned (%d)", Limits, pinned)
	}
}

// open sends a delivery's headers and the first byte of its body and
// leaves it there.
func open(t *testing.T, addr, event, id, sig string, length int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"%s: %s\r\n%s: %s\r\n%s: %s\r\n\r\n{", length, EventHeader, event, DeliveryHeader, id, SignatureHeader, sig)
	return c
}

func waitPlaces(t *testing.T, b *serve.Budget, n int64) {
	t.Helper()
	deadline := time.Now().Add(BodyTimeout)
	for places, _ := b.InUse(); places != n; places, _ = b.InUse() {
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries in flight, want %d", places, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// issue 22: 32 requests of headers only, each claiming 25 MiB with one byte
// of body and a forged signature, took 837 MB and every place for a
// minute. They now hold a first read each, and a signed ping is answered
// while they wait.
func TestHeldForgeriesNeitherPinMemoryNorStarveGitHub(t *testing.T) {
	f := newFixture(t, false)
	budget := serve.NewBudget(Limits)
	f.h = must(NewHandler(Config{Secrets: f.secrets, Enqueuer: enqueuerOf(t, f), Installs: f.reg,
		Deliveries: NewDeliveryLog(f.store.Client()), Budget: budget, Metrics: f.metrics}))
	ts := httptest.NewServer(f.h)
	defer ts.Close()
	addr := ts.Listener.Addr().String()
	for i := range 32 {
		open(t, addr, "pull_request", fmt.Sprint("forged-", i), "sha256="+strings.Repeat("0", 64), MaxBodyBytes)
	}
	waitPlaces(t, budget, 32)
	if _, held := budget.InUse(); held != 32*serve.FirstRead {
		t.Fatalf("32 forgeries claiming 25 MiB hold %d bytes, want 32 first reads (%d)", held, 32*serve.FirstRead)
	}
	if n, b := gauge(f.metrics.InFlight), gauge(f.metrics.BodyBytes); n != 32 || b != 32*serve.FirstRead {
		t.Fatalf("metrics: %v in flight, %v body bytes; want 32 and %d", n, b, 32*serve.FirstRead)
	}
	ping := load(t, "ping/with-app_id.payload.json")
	body := encode(t, ping)
	req, _ := http.NewRequest("POST", ts.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(EventHeader, "ping")
	req.Header.Set(DeliveryHeader, "ping-1")
	req.Header.Set(SignatureHeader, sign(secret, body))
	resp, err := (&http.Client{Timeout: time.Second}).Do(req)
	if err != nil {
		t.Fatalf("a signed ping while 32 forgeries are held: %v, want an answer within 1 s", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a signed ping while 32 forgeries are held: %d, want 200", resp.StatusCode)
	}
}

// 256 signed deliveries in flight at once from one address are all taken
// (issue 22: at 64, half were refused 503 under the old cap of 32).
func TestABurstOf256SignedDeliveriesIsTaken(t *testing.T) {
	f := newFixture(t, false)
	budget := serve.NewBudget(Limits)
	f.h = must(NewHandler(Config{Secrets: f.secrets, Enqueuer: enqueuerOf(t, f), Installs: f.reg,
		Deliveries: NewDeliveryLog(f.store.Client()), Budget: budget}))
	ts := httptest.NewServer(f.h)
	defer ts.Close()
	body := encode(t, pr(t, "closed.payload.json", "queen-77", false))
	const n = 256
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = open(t, ts.Listener.Addr().String(), "pull_request", fmt.Sprint("burst-", i), sign(secret, body), len(body))
	}
	waitPlaces(t, budget, n)
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i, c := range conns {
		wg.Go(func() {
			if _, err := c.Write(body[1:]); err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				codes[i] = resp.StatusCode
			}
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusAccepted {
			t.Fatalf("delivery %d of %d in flight at once: %d, want 202", i, n, code)
		}
	}
	if got := len(f.queued()); got != n {
		t.Fatalf("%d tasks for %d deliveries, want one each", got, n)
	}
}

func gauge(g prometheus.Metric) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		panic(err)
	}
	return m.GetGauge().GetValue()
}

// enqueuerOf is an Enqueuer on f's queue.
func enqueuerOf(t *testing.T, f *fixture) Enqueuer {
	client := asynq.NewClient(asynq.RedisClientOpt{Addr: f.queue.Addr})
	t.Cleanup(func() { client.Close() })
	return tasks.NewEnqueuer(client, f.insp)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
