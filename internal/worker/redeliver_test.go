package worker

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

func TestRedeliverFailedDeliveries(t *testing.T) {
	e := newEnv(t, options{})
	now := time.Now().UTC()
	failed := e.gh.AddDelivery(githubtest.Delivery{GUID: "g-failed", DeliveredAt: now.Add(-2 * time.Hour), StatusCode: 503, Event: "pull_request", Action: "closed"})
	e.gh.AddDelivery(githubtest.Delivery{GUID: "g-ok", DeliveredAt: now.Add(-time.Hour), StatusCode: 202, Event: "pull_request", Action: "closed"})
	// Failed once, then delivered: nothing to do.
	e.gh.AddDelivery(githubtest.Delivery{GUID: "g-healed", DeliveredAt: now.Add(-3 * time.Hour), StatusCode: 502, Event: "pull_request", Action: "closed"})
	e.gh.AddDelivery(githubtest.Delivery{GUID: "g-healed", DeliveredAt: now.Add(-170 * time.Minute), StatusCode: 202, Redelivery: true, Event: "pull_request", Action: "closed"})

	if err := e.w.Redeliver(e.ctx, tasks.NewRedeliver()); err != nil {
		t.Fatal(err)
	}
	if got := e.gh.Redelivered(); !reflect.DeepEqual(got, []int64{failed}) {
		t.Fatalf("redelivered %v, want only the failed GUID's delivery %d", got, failed)
	}
	if v := value(e.m.Redeliveries.WithLabelValues("redelivered")); v != 1 {
		t.Fatalf("redeliveries metric = %v, want 1", v)
	}
	mark, err := NewRedisStore(e.rdb).Get(context.Background(), githubapp.DefaultRedeliverKey)
	if err != nil || mark == "" {
		t.Fatalf("redelivery mark not kept in Redis: %q %v", mark, err)
	}

	e.gh.SecondaryRateLimit(1, 30*time.Second)
	if err := e.w.Redeliver(e.ctx, tasks.NewRedeliver()); !isWait(err) {
		t.Fatalf("rate limited: %v, want a wait", err)
	}
}

// With GitHub slow, a second run once asked again for GUIDs the first was
// still redelivering (19 POSTs for 10 GUIDs): a GUID is never asked for
// while an earlier request for it is unanswered, whatever runs at once.
func TestRedeliverNeverAsksTwiceWhileUnanswered(t *testing.T) {
	e := newEnv(t, options{})
	now := time.Now().UTC()
	for i := range 10 {
		e.gh.AddDelivery(githubtest.Delivery{GUID: fmt.Sprintf("g%d", i), DeliveredAt: now.Add(-time.Duration(i+1) * time.Minute), StatusCode: 502})
	}
	var mu sync.Mutex
	inFlight, twice := map[string]bool{}, []string{}
	e.setBefore(func(r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/attempts") {
			return
		}
		mu.Lock()
		if inFlight[r.URL.Path] {
			twice = append(twice, r.URL.Path)
		}
		inFlight[r.URL.Path] = true
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // GitHub slow to answer
		mu.Lock()
		delete(inFlight, r.URL.Path)
		mu.Unlock()
	})
	var wg sync.WaitGroup
	reps := make([]githubapp.RedeliverReport, 3)
	for i := range reps {
		wg.Go(func() { reps[i], _ = e.w.d.Redeliverer.Run(e.ctx, now) })
	}
	wg.Wait()
	if len(twice) > 0 {
		t.Fatalf("asked again while unanswered: %v", twice)
	}
	skipped := reps[0].InFlight + reps[1].InFlight + reps[2].InFlight
	if skipped == 0 || len(e.gh.Redelivered())+skipped < 10 {
		t.Fatalf("%d redeliveries, %d skipped as in flight: want every GUID asked for, the runs meeting on some", len(e.gh.Redelivered()), skipped)
	}
}

// A periodic run that outlasts its period is not joined by the next slot's:
// that one is skipped and counted.
func TestPeriodicRunsNeverOverlap(t *testing.T) {
	e := newEnv(t, options{freeClosedPR: true})
	for i := int64(1); i <= 3; i++ {
		e.row(i, "accept", nil)
		e.pr(i, "closed", false)
	}
	release := make(chan struct{})
	var reads atomic.Int32
	e.setBefore(func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/graphql") {
			reads.Add(1)
			<-release
		}
	})
	e.serve(time.Hour)
	for slot := range 2 {
		task := asynq.NewTask(tasks.TypeSweep, nil, asynq.Queue(tasks.Queue), asynq.TaskID(fmt.Sprintf("periodic:claim:sweep:%d", slot)))
		if _, err := e.client.Enqueue(task); err != nil {
			t.Fatal(err)
		}
		if slot == 0 {
			e.eventually("the first run reads GitHub", func() bool { return reads.Load() == 1 })
		}
	}
	e.eventually("the second slot skipped", func() bool { return value(e.m.PeriodicSkipped.WithLabelValues(tasks.TypeSweep)) == 1 })
	close(release)
	e.eventually("the first run done", func() bool { return value(e.m.SweepRuns.WithLabelValues("claim", "ok")) == 1 })
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d GraphQL reads for one sweep of 3 rows; the second slot joined the first", n)
	}
	for i := int64(1); i <= 3; i++ {
		if e.get(i).Freed == nil {
			t.Fatalf("#%d not freed by the one run", i)
		}
	}
	// The lease is released: the next slot runs.
	task := asynq.NewTask(tasks.TypeSweep, nil, asynq.Queue(tasks.Queue), asynq.TaskID("periodic:claim:sweep:2"))
	if _, err := e.client.Enqueue(task); err != nil {
		t.Fatal(err)
	}
	e.eventually("the next slot runs", func() bool { return value(e.m.SweepRuns.WithLabelValues("claim", "ok")) == 2 })
}
