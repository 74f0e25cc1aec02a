package worker

import (
	"context"
	"reflect"
	"testing"
	"time"

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
