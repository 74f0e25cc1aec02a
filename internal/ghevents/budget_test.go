package ghevents

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// deadlines records the deadline of every Redis call of a delivery.
type deadlines struct {
	mu  sync.Mutex
	got []time.Time
}

func (d *deadlines) record(ctx context.Context) {
	dl, ok := ctx.Deadline()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !ok {
		dl = time.Time{} // no deadline at all: never equal to a real one
	}
	d.got = append(d.got, dl)
}

type timedInstalls struct {
	Installs
	d *deadlines
}

func (t timedInstalls) Lookup(ctx context.Context, repo string) (int64, bool, bool, error) {
	t.d.record(ctx)
	return t.Installs.Lookup(ctx, repo)
}

func (t timedInstalls) Synced(ctx context.Context) (bool, error) {
	t.d.record(ctx)
	return t.Installs.Synced(ctx)
}

// Every Redis call of one delivery shares one deadline, so a slow Redis
// costs the delivery at most redisavail.Budget in all, under GitHub's 10 s,
// never one budget per call.
func TestOneRedisBudgetPerDelivery(t *testing.T) {
	f := newFixture(t, false)
	d := &deadlines{}
	opt := asynq.RedisClientOpt{Addr: f.queue.Addr}
	client := asynq.NewClient(opt)
	t.Cleanup(func() { client.Close() })
	enq := tasks.NewEnqueuer(client, f.insp)
	h, err := NewHandler(Config{
		Secrets:    f.secrets,
		Installs:   timedInstalls{Installs: f.reg, d: d},
		Deliveries: NewDeliveryLog(f.store.Client()),
		Enqueuer: EnqueuerFunc(func(ctx context.Context, task *asynq.Task) (tasks.Result, error) {
			d.record(ctx)
			return enq.Enqueue(ctx, task)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	// The deadline is set while the delivery is served, so it lies between
	// before+Budget and after+Budget.
	check := func(what string, want int, before, after time.Time) {
		t.Helper()
		if len(d.got) != want {
			t.Fatalf("%s: %d Redis calls, want %d", what, len(d.got), want)
		}
		for _, dl := range d.got {
			if !dl.Equal(d.got[0]) {
				t.Fatalf("%s: Redis calls with deadlines %v: want one deadline for the delivery", what, d.got)
			}
		}
		if dl := d.got[0]; dl.Before(before.Add(redisavail.Budget)) || dl.After(after.Add(redisavail.Budget)) || redisavail.Budget >= 10*time.Second {
			t.Fatalf("%s: deadline %v after the delivery arrived, want %v (< GitHub's 10 s)", what, dl.Sub(before), redisavail.Budget)
		}
		d.got = nil
	}
	body := encode(t, pr(t, "closed.payload.json", "queen-12", true))
	before := time.Now()
	if rec := f.post("pull_request", "d-budget", body, nil); rec.Code != http.StatusAccepted {
		t.Fatalf("code %d %s, want 202", rec.Code, rec.Body)
	}
	check("lookup and enqueue", 2, before, time.Now())

	// An unknown repository before the first sync: lookup, then synced.
	ctx := context.Background()
	if err := f.store.Client().Del(ctx, installs.KeySynced).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Remove(ctx, installID); err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	if rec := f.post("pull_request", "d-budget-2", body, nil); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("code %d %s, want 503", rec.Code, rec.Body)
	}
	check("lookup and synced", 2, before, time.Now())
}

// A registry or queue Redis that is unavailable in any way answers 503
// before GitHub's 10 s timeout (the client here gives up at 9 s); an error
// that is no unavailability is a 500.
func TestRedisUnavailableAnswers503InTime(t *testing.T) {
	locked := redistest.Start(t)
	if err := locked.Client().ConfigSet(context.Background(), "requirepass", "right-password-1").Err(); err != nil {
		t.Fatal(err)
	}
	hung := redistest.StartFake(t, "")
	loading := redistest.StartFake(t, "LOADING Redis is loading the dataset in memory")
	body := encode(t, pr(t, "closed.payload.json", "queen-12", true))
	for name, addr := range map[string]string{"wrong password": locked.Addr, "hung": hung.Addr, "LOADING": loading.Addr} {
		for _, side := range []string{"registry", "queue"} {
			t.Run(name+", "+side, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, false)
				reg, queue := Installs(f.reg), asynq.RedisClientOpt{Addr: f.queue.Addr}
				bad := redis.NewClient(&redis.Options{Addr: addr})
				t.Cleanup(func() { bad.Close() })
				if side == "registry" {
					reg = installs.New(bad)
				} else {
					queue.Addr = addr
				}
				client := asynq.NewClient(queue)
				insp := asynq.NewInspector(queue)
				t.Cleanup(func() { client.Close(); insp.Close() })
				h, err := NewHandler(Config{Secrets: f.secrets, Installs: reg, Enqueuer: tasks.NewEnqueuer(client, insp),
					Deliveries: NewDeliveryLog(f.store.Client())})
				if err != nil {
					t.Fatal(err)
				}
				code := postWithin(t, h, 9*time.Second, body)
				if code != http.StatusServiceUnavailable {
					t.Fatalf("code %d, want 503", code)
				}
			})
		}
	}
	t.Run("wrong type", func(t *testing.T) {
		f := newFixture(t, false)
		ctx := context.Background()
		if err := f.store.Client().Del(ctx, installs.KeyRepos).Err(); err != nil {
			t.Fatal(err)
		}
		if err := f.store.Client().Set(ctx, installs.KeyRepos, "not a hash", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if rec := f.post("pull_request", "d-type", body, nil); rec.Code != http.StatusInternalServerError {
			t.Fatalf("code %d %s, want 500: a WRONGTYPE is a bug, not an outage", rec.Code, rec.Body)
		}
	})
}

// postWithin delivers body over real HTTP with a client that gives up
// after limit, and returns the status code.
func postWithin(t *testing.T, h http.Handler, limit time.Duration, body []byte) int {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(EventHeader, "pull_request")
	req.Header.Set(DeliveryHeader, "d-within")
	req.Header.Set(SignatureHeader, sign(secret, body))
	resp, err := (&http.Client{Timeout: limit}).Do(req)
	if err != nil {
		t.Fatalf("no answer within %v: %v", limit, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
