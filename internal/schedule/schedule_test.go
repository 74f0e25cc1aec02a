package schedule

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

func TestOneLeaderEnqueuesEachSlotOnce(t *testing.T) {
	srv := redistest.Start(t)
	checkOneLeader(t, func() redis.UniversalClient { return srv.Client() })
}

// Each multi-server form, through the binaries' client (redisconn).
func TestOneLeaderOnSentinelAndCluster(t *testing.T) {
	t.Run("sentinel", func(t *testing.T) {
		set := redistest.StartSentinel(t, redistest.SentinelOptions{})
		checkOneLeader(t, set.Open)
	})
	t.Run("cluster of three", func(t *testing.T) {
		c := redistest.StartCluster(t, 3)
		checkOneLeader(t, c.Open)
	})
}

// checkOneLeader runs three replicas' schedulers, each with its own client
// from open, and checks that one leads and each slot is enqueued once.
func checkOneLeader(t *testing.T, open func() redis.UniversalClient) {
	client := asynq.NewClientFromRedisClient(open())
	insp := asynq.NewInspectorFromRedisClient(open())

	clk := testkit.NewClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	entries := []Entry{{Type: "claim:sweep", Every: 10 * time.Minute}, {Type: "export:sweep", Every: 5 * time.Minute}}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	leads := make([]int, 3)
	var mu sync.Mutex
	cancels := make([]context.CancelFunc, 3)
	for i := range 3 {
		rctx, rcancel := context.WithCancel(ctx)
		cancels[i] = rcancel
		s := &Scheduler{RDB: open(), Client: client, ID: string(rune('a' + i)), Lease: 300 * time.Millisecond,
			Tick: 20 * time.Millisecond, Entries: entries, Now: clk.Now,
			OnLead: func(l bool) {
				mu.Lock()
				if l {
					leads[i]++
				}
				mu.Unlock()
			}}
		wg.Add(1)
		go func() { defer wg.Done(); s.Run(rctx) }()
	}
	waitFor(t, func() bool { return count(t, insp) == 2 })
	// Three replicas, one slot each: still one task per type.
	time.Sleep(200 * time.Millisecond)
	if n := count(t, insp); n != 2 {
		t.Fatalf("after the first slot: %d tasks, want 2 (one per type)", n)
	}
	clk.Add(5 * time.Minute) // a new export slot, same sweep slot
	waitFor(t, func() bool { return count(t, insp) == 3 })

	// The leader stops; another takes over and keeps the schedule.
	mu.Lock()
	leader := -1
	for i, n := range leads {
		if n > 0 {
			leader = i
		}
	}
	mu.Unlock()
	if leader < 0 {
		t.Fatal("no replica ever led")
	}
	cancels[leader]()
	clk.Add(5 * time.Minute) // new slots for both types
	waitFor(t, func() bool { return count(t, insp) == 5 })
	time.Sleep(200 * time.Millisecond)
	if n := count(t, insp); n != 5 {
		t.Fatalf("after handover: %d tasks, want 5", n)
	}
	mu.Lock()
	total := 0
	for _, n := range leads {
		total += n
	}
	mu.Unlock()
	if total != 2 {
		t.Fatalf("leadership was taken %d times, want 2 (first leader, then one successor)", total)
	}
	cancel()
	wg.Wait()
}

func count(t *testing.T, insp *asynq.Inspector) int {
	t.Helper()
	tasks, err := insp.ListPendingTasks("default")
	if err != nil {
		return -1
	}
	return len(tasks)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
