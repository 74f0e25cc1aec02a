package ghevents

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/logging"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/tasks"
)

// bareHandler is the baseline of BenchmarkIngest: it reads the body (as
// the receiver does, held to a serve.Budget) and verifies its HMAC, and
// does nothing else.
func bareHandler(secrets [][]byte) http.Handler { return floorHandler(secrets, false, nil) }

// floorHandler is bareHandler plus the least work any receiver must add
// before it answers: with validate, one validation pass over the JSON (a
// malformed body is refused, so every byte is read) and, with store, the
// write an accepted delivery waits for before its 202. It bounds what the
// targets can ask of the real handler on the machine of the run.
func floorHandler(secrets [][]byte, validate bool, store func(*http.Request) error) http.Handler {
	budget := serve.NewBudget(Limits)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, ok := budget.Admit(r)
		if !ok {
			serve.Refuse(w)
			return
		}
		defer lease.Release()
		body, err := serve.ReadBody(w, r, lease, MaxBodyBytes, BodyTimeout)
		if err != nil || !VerifySignature(secrets, r.Header.Get(SignatureHeader), body) {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		if validate && !validJSON(body) {
			http.Error(w, "not JSON", http.StatusBadRequest)
			return
		}
		if store != nil {
			if err := store(r); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"ignored"}` + "\n"))
	})
}

// benchAPIToken stands in for QUEEN_API_TOKEN, the webhook's third secret.
const benchAPIToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// loadgen builds tools/loadgen, the load tool, for the run.
func loadgen(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "loadgen")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/queen-app/queen-app/tools/loadgen").CombinedOutput()
	if err != nil {
		b.Fatalf("go build tools/loadgen: %v\n%s", err, out)
	}
	return bin
}

// loadResult is the part of loadgen's output the benchmark reads.
type loadResult struct {
	Targets []struct {
		Name   string  `json:"name"`
		PerSec float64 `json:"per_sec"`
		P99us  float64 `json:"p99_us"`
	} `json:"targets"`
}

// loadFig is one target's median rate and p99.
type loadFig struct{ perSec, p99us float64 }

// runLoad runs loadgen on plan and returns each target's figures by name.
func runLoad(b *testing.B, bin string, plan map[string]any) map[string]loadFig {
	b.Helper()
	data, err := json.Marshal(plan)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "plan.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-plan", path)
	cmd.Env = append(os.Environ(), "GITHUB_WEBHOOK_SECRET="+string(secret))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("loadgen: %v: %s", err, stderr.String())
	}
	var res loadResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("loadgen output: %v\n%s", err, out)
	}
	figs := map[string]loadFig{}
	for _, t := range res.Targets {
		figs[t.Name] = loadFig{t.PerSec, t.P99us}
	}
	return figs
}

// BenchmarkIngest measures the receiver over HTTP from 1, 8 and 64 clients
// at once against the bare HMAC check, in the same run: an accepted closed
// delivery (verify, parse, the installed check, the durable enqueue on a
// real Redis, its scrubbed log line to io.Discard and its metrics, as
// cmd/webhook wires them) and an ignored one (a closed PR on a branch that
// is not queen-<N>). Beside them run the floors of floorHandler: what the
// fastest possible receiver would reach on this machine, storing its
// delivery with one PING, or with the webhook's own asynq enqueue; and the
// real handler storing with one XADD instead.
//
// The clients are tools/loadgen, a process of its own as GitHub is. With
// the clients in the benchmark's process, the bare handler and its client
// passed each request over on one Go scheduler that never slept, which no
// delivery from GitHub gets: at 1 client the baseline ran about 1.4x faster
// (9,900 against 6,300-7,300 deliveries/s on the dev machine) and the floor
// with one Redis round trip fell to 0.49-0.56x of it, against 0.61-0.70x
// from a process of its own.
func BenchmarkIngest(b *testing.B) {
	rdb := redistest.Open(b, redistest.Start(b).URL(), "", "")
	ctx, cancel := context.WithCancel(context.Background())
	reg := installs.NewCache(ctx, rdb)
	b.Cleanup(func() { cancel(); <-reg.Done() })
	if err := reg.Replace(ctx, []installs.Installation{{ID: installID, Repos: []string{repoName}}}, true); err != nil {
		b.Fatal(err)
	}
	enq := tasks.NewEnqueuer(asynq.NewClientFromRedisClient(rdb), asynq.NewInspectorFromRedisClient(rdb))
	secrets := [][]byte{secret, previous}
	serve := func(h http.Handler) *httptest.Server {
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		return srv
	}
	receiver := func(e EnqueuerFunc) *httptest.Server {
		h, err := NewHandler(Config{
			Secrets:         secrets,
			Enqueuer:        e,
			Installs:        reg,
			Deliveries:      NewDeliveryLog(rdb),
			ReevaluateDelay: tasks.DefaultReevaluateDelay,
			// The binaries' logger, scrubbing the webhook's secrets.
			Logger:  logging.New(io.Discard, "webhook", string(secret), string(previous), benchAPIToken),
			Metrics: NewMetrics(prometheus.NewRegistry()),
		})
		if err != nil {
			b.Fatal(err)
		}
		return serve(h)
	}
	real := receiver(func(ctx context.Context, t *asynq.Task) (tasks.Result, error) {
		return enq.Enqueue(redisconn.DeliveryWrite(ctx), t)
	})
	// The same handler storing each task with one native command, an XADD
	// to a stream a worker would move into asynq: what a receiver that did
	// not write through asynq's script on the delivery's path would reach.
	// Not the design (a second queue before the queue); its measure.
	appended := receiver(func(ctx context.Context, t *asynq.Task) (tasks.Result, error) {
		id, _ := tasks.TaskID(t)
		err := rdb.XAdd(redisconn.DeliveryWrite(ctx), &redis.XAddArgs{Stream: "bench:intake",
			Values: []string{"type", t.Type(), "id", id, "payload", string(t.Payload())}}).Err()
		return tasks.Enqueued, err
	})
	bare := serve(bareHandler(secrets))
	floorIgnored := serve(floorHandler(secrets, true, nil))
	ping := func(r *http.Request) error { return rdb.Ping(r.Context()).Err() }
	floorAccepted := serve(floorHandler(secrets, true, ping))
	// The write the webhook makes (asynq's schedule script under
	// DeliveryWrite), of a task built from what the payload is known to
	// hold, without reading it.
	enqueue := func(r *http.Request) error {
		task, err := tasks.NewReevaluate(tasks.ReevaluatePayload{Repo: repoName, Issue: 77,
			Delivery: r.Header.Get(DeliveryHeader), Event: "pull_request", Action: "closed",
			InstallationID: installID, PRNumber: 1}, tasks.DefaultReevaluateDelay)
		if err != nil {
			return err
		}
		_, err = enq.Enqueue(redisconn.DeliveryWrite(r.Context()), task)
		return err
	}
	floorEnqueue := serve(floorHandler(secrets, true, enqueue))
	accepted := encode(b, pr(b, "closed.payload.json", "queen-77", false))
	ignored := encode(b, pr(b, "closed.payload.json", "feature", false))
	// The registry's copy in memory is loaded before anything is measured.
	for {
		if _, _, ok, err := reg.Lookup(ctx, repoName); err == nil && ok {
			break
		}
		time.Sleep(time.Millisecond)
	}

	bin := loadgen(b)
	dir := b.TempDir()
	bodies := map[string][]byte{"accepted": accepted, "ignored": ignored}
	for name, body := range bodies {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	target := func(name, url, body, idPrefix string) map[string]any {
		return map[string]any{"name": name, "url": url, "event": "pull_request",
			"body_file": filepath.Join(dir, body+".json"), "id_prefix": idPrefix, "expect": http.StatusAccepted}
	}
	run := 0
	for _, clients := range []int{1, 8, 64} {
		b.Run("clients="+strconv.Itoa(clients), func(b *testing.B) {
			var figs map[string]loadFig
			for b.Loop() {
				run++
				// Every accepted delivery is new to Redis: a duplicate id
				// would measure the cheaper already-enqueued answer.
				figs = runLoad(b, bin, map[string]any{"clients": clients, "rounds": 11, "deliveries": 1000,
					"targets": []map[string]any{
						target("bare", bare.URL, "accepted", ""),
						target("accepted", real.URL, "accepted", "bench-"+strconv.Itoa(run)),
						target("appended", appended.URL, "accepted", "append-"+strconv.Itoa(run)),
						target("ignored", real.URL, "ignored", ""),
						target("floor-accepted", floorAccepted.URL, "accepted", ""),
						target("floor-enqueue", floorEnqueue.URL, "accepted", "floor-"+strconv.Itoa(run)),
						target("floor-ignored", floorIgnored.URL, "ignored", ""),
					}})
			}
			bareRate, accRate, ignRate := figs["bare"].perSec, figs["accepted"].perSec, figs["ignored"].perSec
			floorAccRate, floorIgnRate := figs["floor-accepted"].perSec, figs["floor-ignored"].perSec
			floorEnqRate := figs["floor-enqueue"].perSec
			b.ReportMetric(bareRate, "bare-deliv/s")
			b.ReportMetric(accRate, "accepted-deliv/s")
			b.ReportMetric(accRate/bareRate, "accepted-x")
			b.ReportMetric(ignRate/bareRate, "ignored-x")
			b.ReportMetric(floorAccRate/bareRate, "accepted-floor-x")
			b.ReportMetric(floorIgnRate/bareRate, "ignored-floor-x")
			b.ReportMetric(floorEnqRate/bareRate, "enqueue-floor-x")
			b.ReportMetric(figs["appended"].perSec/bareRate, "appended-x")
			b.ReportMetric(accRate/floorAccRate, "accepted-of-floor")
			b.ReportMetric(accRate/floorEnqRate, "accepted-of-enqueue-floor")
			b.ReportMetric(ignRate/floorIgnRate, "ignored-of-floor")
			b.ReportMetric(figs["accepted"].p99us/figs["bare"].p99us, "accepted-p99-x")
			b.ReportMetric(figs["bare"].p99us, "bare-p99-µs")
			b.ReportMetric(figs["accepted"].p99us, "accepted-p99-µs")
		})
	}
}
