package ghevents

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// bareHandler is the baseline of BenchmarkIngest: it reads the body and
// verifies its HMAC, and does nothing else.
func bareHandler(secrets [][]byte) http.Handler { return floorHandler(secrets, false, nil) }

// floorHandler is bareHandler plus the least work any receiver must add
// before it answers: with validate, one validation pass over the JSON (a
// malformed body is refused, so every byte is read) and, with rdb, one Redis
// round trip (an accepted delivery is stored before its 202). It bounds what
// the targets can ask of the real handler on the machine of the run.
func floorHandler(secrets [][]byte, validate bool, rdb redis.UniversalClient) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r)
		if err != nil || !VerifySignature(secrets, r.Header.Get(SignatureHeader), body) {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		if validate && !validJSON(body) {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
		if rdb != nil {
			if err := rdb.Ping(r.Context()).Err(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"ignored"}` + "\n"))
	})
}

// ingestRun is one measurement: n deliveries from clients at once.
type ingestRun struct {
	perSec float64
	p99    time.Duration
}

// deliverAll posts n deliveries of body to url from clients goroutines and
// measures the deliveries per second and the p99 latency. Every answer must
// be want.
func deliverAll(b *testing.B, c *http.Client, url string, clients, n int, body []byte, id func(i int) string, want int) ingestRun {
	b.Helper()
	sig := Sign(secret, body)
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(EventHeader, "pull_request")
				req.Header.Set(DeliveryHeader, id(i))
				req.Header.Set(SignatureHeader, sig)
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if resp.StatusCode != want {
					failed.Store("answered " + strconv.Itoa(resp.StatusCode) + ", want " + strconv.Itoa(want))
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	slices.Sort(lat)
	return ingestRun{perSec: float64(n) / elapsed.Seconds(), p99: lat[n*99/100]}
}

// BenchmarkIngest measures the receiver over HTTP from 1, 8 and 64 clients
// at once against the bare HMAC check, in the same run: an accepted closed
// delivery (verify, parse, the installed check, the durable enqueue on a
// real Redis, its log line and metrics, as cmd/webhook wires them) and an
// ignored one (a closed PR on a branch that is not queen-<N>). Beside them
// run the floors of floorHandler: what the fastest possible receiver would
// reach on this machine.
func BenchmarkIngest(b *testing.B) {
	rs := redistest.Start(b)
	spec, err := redisconn.Parse(rs.URL(), "", "")
	if err != nil {
		b.Fatal(err)
	}
	rdb := redisconn.New(spec)
	b.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	reg := installs.NewCache(ctx, rdb)
	b.Cleanup(func() { cancel(); <-reg.Done() })
	if err := reg.Replace(ctx, []installs.Installation{{ID: installID, Repos: []string{repoName}}}, true); err != nil {
		b.Fatal(err)
	}
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	h, err := NewHandler(Config{
		Secrets: [][]byte{secret, previous},
		Enqueuer: EnqueuerFunc(func(ctx context.Context, t *asynq.Task) (tasks.Result, error) {
			return tasks.NewEnqueuer(client, insp).Enqueue(redisconn.WithReplicaAck(ctx), t)
		}),
		Installs:        reg,
		ReevaluateDelay: tasks.DefaultReevaluateDelay,
		Logger:          slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Metrics:         NewMetrics(prometheus.NewRegistry()),
	})
	if err != nil {
		b.Fatal(err)
	}
	real := httptest.NewServer(h)
	b.Cleanup(real.Close)
	bare := httptest.NewServer(bareHandler([][]byte{secret, previous}))
	b.Cleanup(bare.Close)
	floorIgnored := httptest.NewServer(floorHandler([][]byte{secret, previous}, true, nil))
	b.Cleanup(floorIgnored.Close)
	floorAccepted := httptest.NewServer(floorHandler([][]byte{secret, previous}, true, rdb))
	b.Cleanup(floorAccepted.Close)
	accepted := encode(b, pr(b, "closed.payload.json", "queen-77", false))
	ignored := encode(b, pr(b, "closed.payload.json", "feature", false))
	// The registry's copy in memory is loaded before anything is measured.
	for {
		if _, _, ok, err := reg.Lookup(ctx, repoName); err == nil && ok {
			break
		}
		time.Sleep(time.Millisecond)
	}

	const rounds, perRound = 5, 600
	seq := 0
	for _, clients := range []int{1, 8, 64} {
		b.Run("clients="+strconv.Itoa(clients), func(b *testing.B) {
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
			b.Cleanup(c.CloseIdleConnections)
			fixed := func(int) string { return "bench-ignored" }
			var bareRuns, accRuns, ignRuns, floorAccRuns, floorIgnRuns []ingestRun
			for b.Loop() {
				for range rounds {
					base := seq
					seq += perRound
					unique := func(i int) string { return "bench-" + strconv.Itoa(base+i) }
					bareRuns = append(bareRuns, deliverAll(b, c, bare.URL, clients, perRound, accepted, fixed, http.StatusAccepted))
					accRuns = append(accRuns, deliverAll(b, c, real.URL, clients, perRound, accepted, unique, http.StatusAccepted))
					ignRuns = append(ignRuns, deliverAll(b, c, real.URL, clients, perRound, ignored, fixed, http.StatusAccepted))
					floorAccRuns = append(floorAccRuns, deliverAll(b, c, floorAccepted.URL, clients, perRound, accepted, fixed, http.StatusAccepted))
					floorIgnRuns = append(floorIgnRuns, deliverAll(b, c, floorIgnored.URL, clients, perRound, ignored, fixed, http.StatusAccepted))
				}
			}
			bareRate, bareP99 := summarize(bareRuns)
			accRate, accP99 := summarize(accRuns)
			ignRate, _ := summarize(ignRuns)
			floorAccRate, _ := summarize(floorAccRuns)
			floorIgnRate, _ := summarize(floorIgnRuns)
			b.ReportMetric(bareRate, "bare-deliv/s")
			b.ReportMetric(accRate, "accepted-deliv/s")
			b.ReportMetric(accRate/bareRate, "accepted-x")
			b.ReportMetric(ignRate/bareRate, "ignored-x")
			b.ReportMetric(floorAccRate/bareRate, "accepted-floor-x")
			b.ReportMetric(floorIgnRate/bareRate, "ignored-floor-x")
			b.ReportMetric(accRate/floorAccRate, "accepted-of-floor")
			b.ReportMetric(ignRate/floorIgnRate, "ignored-of-floor")
			b.ReportMetric(float64(accP99)/float64(bareP99), "accepted-p99-x")
			b.ReportMetric(float64(bareP99.Microseconds()), "bare-p99-µs")
			b.ReportMetric(float64(accP99.Microseconds()), "accepted-p99-µs")
		})
	}
}

// summarize is the median rate and the median p99 of runs: the rounds
// alternate with the baselines', and a median keeps one round disturbed by
// the rest of the shared machine from moving the figure.
func summarize(runs []ingestRun) (perSec float64, p99 time.Duration) {
	rates := make([]float64, len(runs))
	p99s := make([]time.Duration, len(runs))
	for i, r := range runs {
		rates[i], p99s[i] = r.perSec, r.p99
	}
	slices.Sort(rates)
	slices.Sort(p99s)
	return rates[len(rates)/2], p99s[len(p99s)/2]
}
