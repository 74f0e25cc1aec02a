package redisconn_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/redistest"
)

// spy is the innermost hook: it holds every command on the key "hold"
// until release is closed, and records what ran alone and each pipeline.
type spy struct {
	entered chan struct{}
	release chan struct{}

	mu        sync.Mutex
	lone      []string
	pipelines [][]string
}

func newSpy() *spy { return &spy{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func holds(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) > 1 && args[1] == "hold"
}

func (s *spy) hold() {
	s.entered <- struct{}{}
	<-s.release
}

func (s *spy) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *spy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if holds(cmd) {
			s.hold()
		}
		s.mu.Lock()
		s.lone = append(s.lone, cmd.Name())
		s.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (s *spy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		held := false
		for i, c := range cmds {
			names[i] = c.Name()
			held = held || holds(c)
		}
		if held {
			s.hold()
		}
		s.mu.Lock()
		s.pipelines = append(s.pipelines, names)
		s.mu.Unlock()
		return next(ctx, cmds)
	}
}

// pipelinesWith are the recorded pipelines that ran a command named name.
func (s *spy) pipelinesWith(name string) [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, p := range s.pipelines {
		if slices.Contains(p, name) {
			out = append(out, p)
		}
	}
	return out
}

func (s *spy) ranAlone(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.lone, name)
}

func counting(t *testing.T, url string) (redis.UniversalClient, func() int, *spy) {
	t.Helper()
	spec, err := redisconn.Parse(url, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rdb, queued := redisconn.NewCounting(spec)
	t.Cleanup(func() { rdb.Close() })
	sp := newSpy()
	rdb.AddHook(sp)
	return rdb, queued, sp
}

// holdRoundTrips issues MaxPipelines commands on "hold" under ctx and
// returns once each is in flight, held by sp; their errors come on the
// channel once released.
func holdRoundTrips(t *testing.T, rdb redis.UniversalClient, sp *spy, ctx context.Context) <-chan error {
	t.Helper()
	errs := make(chan error, redisconn.MaxPipelines)
	for range redisconn.MaxPipelines {
		go func() { errs <- rdb.Get(ctx, "hold").Err() }()
		select {
		case <-sp.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("a coalesced command did not start its round trip at once")
		}
	}
	return errs
}

func waitQueued(t *testing.T, queued func() int, n int) {
	t.Helper()
	eventually(t, strconv.Itoa(n)+" commands waiting for a round trip", func() bool { return queued() == n })
}

// A lone command runs at once by itself; the commands that arrive while
// every round trip is in flight go out together as one pipeline, each
// with its own reply or error.
func TestCoalesceBatchesWhatWaitsAndKeepsEachReply(t *testing.T) {
	rs := redistest.Start(t)
	rdb, queued, sp := counting(t, rs.URL())
	ctx := redisconn.WithCoalesce(context.Background())

	if err := rdb.Set(ctx, "lone", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := sp.pipelinesWith("set"); len(got) != 0 || !sp.ranAlone("set") {
		t.Fatalf("a lone command ran in pipelines %v; want it alone", got)
	}
	if err := rdb.Do(ctx, "hset", "only-a-key").Err(); err == nil || !strings.Contains(err.Error(), "wrong number of arguments") {
		t.Fatalf("a lone malformed command: %v, want its own error", err)
	}

	held := holdRoundTrips(t, rdb, sp, ctx)
	const incrs = 10
	type reply struct {
		name string
		val  int64
		err  error
	}
	replies := make(chan reply, incrs+2)
	for i := range incrs {
		go func() {
			v, err := rdb.Incr(ctx, "n"+strconv.Itoa(i)).Result()
			replies <- reply{"incr", v, err}
		}()
	}
	go func() { replies <- reply{name: "bad", err: rdb.Do(ctx, "hset", "only-a-key").Err()} }()
	go func() { replies <- reply{name: "missing", err: rdb.Get(ctx, "missing").Err()} }()
	waitQueued(t, queued, incrs+2)
	close(sp.release)

	for range redisconn.MaxPipelines {
		if err := <-held; !errors.Is(err, redis.Nil) {
			t.Errorf("held GET of a missing key: %v, want redis.Nil", err)
		}
	}
	for range incrs + 2 {
		r := <-replies
		switch r.name {
		case "incr":
			if r.err != nil || r.val != 1 {
				t.Errorf("INCR of a new key in a batch: %d %v, want 1", r.val, r.err)
			}
		case "bad":
			if r.err == nil || !strings.Contains(r.err.Error(), "wrong number of arguments") {
				t.Errorf("a malformed command in a batch: %v, want its own error", r.err)
			}
		case "missing":
			if !errors.Is(r.err, redis.Nil) {
				t.Errorf("GET of a missing key in a batch: %v, want redis.Nil", r.err)
			}
		}
	}
	batches := sp.pipelinesWith("incr")
	if len(batches) != 1 || len(batches[0]) != incrs+2 {
		t.Fatalf("pipelines holding the INCRs: %v; want one of the %d commands that waited", batches, incrs+2)
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d commands still wait", n)
	}
}

// With Redis gone every coalesced command fails as Redis unavailability
// (the webhook's 503), none hangs, and the client works again once Redis
// is back.
func TestCoalesceFailsEachCommandWhileRedisIsDown(t *testing.T) {
	rs := redistest.Start(t)
	rdb, queued, _ := counting(t, rs.URL())
	ctx := redisconn.WithCoalesce(context.Background())
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rs.Stop()

	const n = 32
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- rdb.Set(ctx, "k"+strconv.Itoa(i), "v", 0).Err() }()
	}
	deadline := time.After(30 * time.Second)
	for range n {
		select {
		case err := <-errs:
			if err == nil || !redisavail.Unavailable(err) {
				t.Errorf("coalesced SET with Redis down: %v, want Redis unavailability", err)
			}
		case <-deadline:
			t.Fatalf("coalesced commands still running 30 s after Redis went down (%d waiting)", queued())
		}
	}

	rs.Restart()
	eventually(t, "a coalesced command succeeds once Redis is back", func() bool {
		return rdb.Set(ctx, "back", "1", 0).Err() == nil
	})
}

// Under DeliveryWrite a batch is acknowledged as a whole: with the replica
// paused each of its writes fails as not replicated, a command's own error
// stays its own, and with the replica up every write of the batch is on it
// when the batch returns. Plain coalesced writes waiting beside them go in
// a batch of their own, neither refused for want of a replica nor passed
// without one.
func TestCoalescedBatchUnderReplicaAck(t *testing.T) {
	set := redistest.StartSentinel(t, redistest.SentinelOptions{})
	rdb, queued, sp := counting(t, set.URL())
	ctx := redisconn.DeliveryWrite(context.Background())
	plain := redisconn.WithCoalesce(context.Background())
	replica := set.Replicas[0]

	// batch writes each key, under plain when it starts with "plain" and
	// under ctx otherwise, and one malformed command under ctx, all while
	// the round trips in flight are held.
	batch := func(keys ...string) map[string]error {
		held := holdRoundTrips(t, rdb, sp, ctx)
		type result struct {
			key string
			err error
		}
		results := make(chan result, len(keys)+1)
		for _, k := range keys {
			c := ctx
			if strings.HasPrefix(k, "plain") {
				c = plain
			}
			go func() { results <- result{k, rdb.Set(c, k, "v-"+k, 0).Err()} }()
		}
		go func() { results <- result{"bad", rdb.Do(ctx, "hset", "only-a-key").Err()} }()
		waitQueued(t, queued, len(keys)+1)
		for range redisconn.MaxPipelines {
			sp.release <- struct{}{} // a held round trip ends and hands its turn on
		}
		for range redisconn.MaxPipelines {
			<-held
		}
		out := map[string]error{}
		for range len(keys) + 1 {
			r := <-results
			out[r.key] = r.err
		}
		return out
	}

	replica.Pause()
	got := batch("a1", "plain1", "a2", "plain2", "a3")
	for _, k := range []string{"a1", "a2", "a3"} {
		if !errors.Is(got[k], redisconn.ErrNotReplicated) {
			t.Errorf("SET %s in a batch with the replica paused: %v, want ErrNotReplicated", k, got[k])
		}
	}
	for _, k := range []string{"plain1", "plain2"} {
		if got[k] != nil {
			t.Errorf("plain SET %s waiting beside acknowledged ones, the replica paused: %v, want success", k, got[k])
		}
	}
	if err := got["bad"]; err == nil || !strings.Contains(err.Error(), "wrong number of arguments") {
		t.Errorf("a malformed command in the batch: %v, want its own error", err)
	}
	replica.Resume()

	got = batch("b1", "b2", "b3")
	for _, k := range []string{"b1", "b2", "b3"} {
		if got[k] != nil {
			t.Errorf("SET %s in a batch with the replica up: %v", k, got[k])
			continue
		}
		// Acknowledged means the replica has it now, not eventually.
		if v, err := replica.Client().Get(context.Background(), k).Result(); err != nil || v != "v-"+k {
			t.Errorf("replica after the acknowledged batch: %s = %q %v", k, v, err)
		}
	}
	if b := sp.pipelinesWith("wait"); !slices.ContainsFunc(b, func(p []string) bool {
		return slices.Contains(p, "set") && len(p) == 3+1+2 // three SETs, the bad one, PUBLISH, WAIT
	}) {
		t.Errorf("pipelines with a WAIT: %v; want one batch of the four commands and one acknowledgement", b)
	}
}

// Under contention every caller's commands run once each, in its order:
// each INCR of a caller's own key answers the count so far.
func TestCoalesceUnderContentionLosesAndRepeatsNothing(t *testing.T) {
	rs := redistest.Start(t)
	rdb, queued, sp := counting(t, rs.URL())
	ctx := redisconn.WithCoalesce(context.Background())
	const callers, each = 64, 100
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			key := "count-" + strconv.Itoa(c)
			for i := 1; i <= each; i++ {
				n, err := rdb.Incr(ctx, key).Result()
				if err != nil || n != int64(i) {
					t.Errorf("INCR %s #%d: %d %v, want %d", key, i, n, err, i)
					return
				}
			}
		})
	}
	wg.Wait()
	for c := range callers {
		if n, err := rs.Client().Get(context.Background(), "count-"+strconv.Itoa(c)).Int(); err != nil || n != each {
			t.Errorf("count-%d is %d %v, want %d", c, n, err, each)
		}
	}
	if len(sp.pipelinesWith("incr")) == 0 {
		t.Error("64 callers at once never shared a pipeline")
	}
	if n := queued(); n != 0 {
		t.Errorf("%d commands still wait", n)
	}
}
