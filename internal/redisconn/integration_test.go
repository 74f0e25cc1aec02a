package redisconn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/redistest"
)

func open(t *testing.T, url, password, sentinelPassword string) redis.UniversalClient {
	t.Helper()
	return redistest.Open(t, url, password, sentinelPassword)
}

// asynqRoundTrip enqueues a task over rdb, lets an asynq server over the
// same client process it, and checks it completed; closing asynq's
// client and shutting its server down leave rdb open.
func asynqRoundTrip(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	done := make(chan string, 1)
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: 1, TaskCheckInterval: 50 * time.Millisecond, LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("probe", func(ctx context.Context, task *asynq.Task) error {
		done <- string(task.Payload())
		return nil
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	info, err := client.Enqueue(asynq.NewTask("probe", []byte("hello")), asynq.TaskID("probe-1"), asynq.Retention(time.Hour))
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	select {
	case got := <-done:
		if got != "hello" {
			t.Fatalf("handler got %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the task was never processed")
	}
	eventually(t, "the task completed", func() bool {
		ti, err := insp.GetTaskInfo(info.Queue, "probe-1")
		return err == nil && ti.State == asynq.TaskStateCompleted
	})
	if _, err := client.Enqueue(asynq.NewTask("probe", nil), asynq.TaskID("probe-1")); !errors.Is(err, asynq.ErrTaskIDConflict) {
		t.Fatalf("second enqueue of probe-1: %v, want ErrTaskIDConflict", err)
	}
	if q, err := insp.GetQueueInfo(info.Queue); err != nil || q.Completed != 1 {
		t.Fatalf("queue info: %+v %v", q, err)
	}
	srv.Shutdown()
	_ = client.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the shared client after asynq's shutdown: %v", err)
	}
}

func TestSentinelFormCarriesAsynqWithBothPasswords(t *testing.T) {
	set := redistest.StartSentinel(t, redistest.SentinelOptions{Password: "data-pw", SentinelPassword: "sentinel-pw"})
	asynqRoundTrip(t, open(t, set.URL(), set.Password(), set.SentinelPassword()))
	// The password of the sentinels is not the data nodes'.
	wrong := open(t, set.URL(), set.Password(), "data-pw")
	if err := wrong.Ping(context.Background()).Err(); err == nil {
		t.Fatal("a wrong sentinel password reached the primary")
	}
}

func TestClusterFormCarriesAsynq(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := open(t, c.URL(), "", "")
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("redis+cluster:// gave %T", rdb)
	}
	asynqRoundTrip(t, rdb)
	// asynq keeps a queue's keys under one hash tag: they live on one node.
	owner := c.NodeFor("asynq:{default}:pending")
	if n, err := owner.Client().Exists(context.Background(), "asynq:{default}:completed").Result(); err != nil || n != 1 {
		t.Fatalf("the queue's completed set is not on the node owning {default}: %d %v", n, err)
	}
}

// Under WithReplicaAck a command returns only once a replica holds every
// write the primary had made: a paused replica makes it fail, even for a
// command that writes nothing itself, and a plain command is not held up.
func TestReplicaAckWaitsForAReplica(t *testing.T) {
	set := redistest.StartSentinel(t, redistest.SentinelOptions{})
	rdb := open(t, set.URL(), "", "")
	ctx := context.Background()
	acked := redisconn.WithReplicaAck(ctx)
	replica := set.Replicas[0]

	if err := rdb.Set(acked, "k1", "v1", 0).Err(); err != nil {
		t.Fatalf("acknowledged write with the replica up: %v", err)
	}
	// Acknowledged means the replica has it now, not eventually.
	if got, err := replica.Client().Get(ctx, "k1").Result(); err != nil || got != "v1" {
		t.Fatalf("replica after an acknowledged write: %q %v", got, err)
	}
	if got, err := rdb.Get(acked, "missing").Result(); !errors.Is(err, redis.Nil) || got != "" {
		t.Fatalf("acknowledged read of a missing key: %q %v; want redis.Nil", got, err)
	}
	// WAIT cannot join MULTI/EXEC: a transaction under the mark is refused, not left unacknowledged.
	if _, err := rdb.TxPipelined(acked, func(p redis.Pipeliner) error {
		p.Set(acked, "k-tx", "v", 0)
		return nil
	}); err == nil {
		t.Fatal("an acknowledged transaction was answered without a replica's acknowledgement")
	}
	if n, err := rdb.Exists(ctx, "k-tx").Result(); err != nil || n != 0 {
		t.Fatalf("the refused transaction wrote: %d %v", n, err)
	}

	replica.Pause()
	defer replica.Resume()
	if err := rdb.Set(acked, "k2", "v2", 0).Err(); !errors.Is(err, redisconn.ErrNotReplicated) {
		t.Fatalf("acknowledged write with the replica paused: %v, want ErrNotReplicated", err)
	}
	if err := rdb.Set(ctx, "k3", "v3", 0).Err(); err != nil {
		t.Fatalf("plain write with the replica paused: %v", err)
	}
	// A fresh connection that writes nothing (k2 exists: NX does not set it)
	// still waits for k2 to reach a replica.
	fresh := open(t, set.URL(), "", "")
	if err := fresh.SetNX(acked, "k2", "other", 0).Err(); !errors.Is(err, redisconn.ErrNotReplicated) {
		t.Fatalf("acknowledged no-op on a fresh connection with the replica paused: %v, want ErrNotReplicated", err)
	}

	replica.Resume()
	eventually(t, "the acknowledged no-op passes once the replica is back", func() bool {
		ok, err := fresh.SetNX(acked, "k2", "other", 0).Result()
		return err == nil && !ok
	})
	if got, err := replica.Client().Get(ctx, "k2").Result(); err != nil || got != "v2" {
		t.Fatalf("replica: k2 = %q %v; want the write that was not acknowledged in time", got, err)
	}
}

// The webhook enqueues under WithReplicaAck: a task the replica does not
// acknowledge is an error, also when a redelivery finds it already stored.
func TestReplicaAckCoversAsynqEnqueue(t *testing.T) {
	set := redistest.StartSentinel(t, redistest.SentinelOptions{})
	rdb := open(t, set.URL(), "", "")
	acked := redisconn.WithReplicaAck(context.Background())
	client := asynq.NewClientFromRedisClient(rdb)
	task := func() *asynq.Task {
		return asynq.NewTask("probe", nil, asynq.TaskID("t-1"), asynq.ProcessIn(time.Hour))
	}

	set.Replicas[0].Pause()
	defer set.Replicas[0].Resume()
	if _, err := client.EnqueueContext(acked, task()); !errors.Is(err, redisconn.ErrNotReplicated) {
		t.Fatalf("enqueue with the replica paused: %v, want ErrNotReplicated", err)
	} else if !redisavail.Unavailable(err) {
		t.Fatalf("enqueue with the replica paused: %v is not Redis unavailability (the webhook would answer 500)", err)
	}
	again := asynq.NewClientFromRedisClient(open(t, set.URL(), "", ""))
	// asynq keeps only the text of this one (its script's error): still a 503.
	if _, err := again.EnqueueContext(acked, task()); errors.Is(err, asynq.ErrTaskIDConflict) || err == nil {
		t.Fatalf("duplicate enqueue with the replica paused: %v; want an error other than a conflict", err)
	} else if !redisavail.Unavailable(err) {
		t.Fatalf("duplicate enqueue with the replica paused: %v is not Redis unavailability (the webhook would answer 500)", err)
	}
	set.Replicas[0].Resume()
	eventually(t, "the duplicate is a conflict once the replica has the task", func() bool {
		_, err := again.EnqueueContext(acked, task())
		return errors.Is(err, asynq.ErrTaskIDConflict)
	})
}

// The other forms take the mark without a replica to wait for.
func TestReplicaAckChangesNothingOnTheOtherForms(t *testing.T) {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 1)
	for _, url := range []string{single.URL(), cluster.URL()} {
		rdb := open(t, url, "", "")
		if err := rdb.Set(redisconn.WithReplicaAck(context.Background()), "k", "v", 0).Err(); err != nil {
			t.Errorf("%s: acknowledged write: %v", url, err)
		}
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
