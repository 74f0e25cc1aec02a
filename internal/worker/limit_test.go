package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

var paceT0 = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

// newPacers are n replicas' pacers over one private Redis and one clock.
func newPacers(t *testing.T, n, perMinute, perHour int) ([]*pacer, *testkit.Clock) {
	t.Helper()
	rdb := redistest.Start(t).Client()
	clk := testkit.NewClock(paceT0)
	ps := make([]*pacer, n)
	for i := range ps {
		ps[i] = &pacer{rdb: rdb, gap: time.Second, perMinute: perMinute, perHour: perHour,
			maxWait: 2 * time.Hour, now: clk.Now}
	}
	return ps, clk
}

// turns books n turns of installation inst at the clock's now, taking
// the pacers in turn (replicas booking alternately), as offsets from paceT0.
func turns(t *testing.T, ps []*pacer, clk *testkit.Clock, inst int64, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := 0; i < n; i++ {
		tn, err := ps[i%len(ps)].book(context.Background(), inst, clk.Now())
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		out = append(out, tn.at.Sub(paceT0))
	}
	return out
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPacingHoldsAcrossReplicas(t *testing.T) {
	ps, clk := newPacers(t, 2, 80, 500)
	got := turns(t, ps, clk, 1, 4)
	if want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}; !equal(got, want) {
		t.Fatalf("turns of two replicas %v, want one second apart %v", got, want)
	}
	// Another installation has its own turns.
	if got := turns(t, ps, clk, 2, 1); got[0] != 0 {
		t.Fatalf("installation 2 waited %v behind installation 1", got[0])
	}
	// Once the booked turns are past, a turn is now.
	clk.Add(10 * time.Second)
	if got := turns(t, ps, clk, 1, 1); got[0] != 10*time.Second {
		t.Fatalf("turn after an idle spell at %v, want 10s", got[0])
	}
}

func TestPacingMinuteAndHourLimits(t *testing.T) {
	ps, clk := newPacers(t, 2, 3, 5)
	got := turns(t, ps, clk, 1, 7)
	// Three a minute: the 4th waits for the 1st to leave the minute; five an
	// hour: the 6th waits for the 1st to leave the hour.
	want := []time.Duration{0, time.Second, 2 * time.Second, time.Minute, time.Minute + time.Second,
		time.Hour, time.Hour + time.Second}
	if !equal(got, want) {
		t.Fatalf("turns %v, want %v", got, want)
	}
}

func TestPacingFarTurnIsNotBooked(t *testing.T) {
	ps, clk := newPacers(t, 1, 80, 2)
	p := ps[0]
	p.maxWait = 30 * time.Second
	turns(t, ps, clk, 1, 2)
	for i := 0; i < 2; i++ {
		_, err := p.book(context.Background(), 1, clk.Now())
		var ny *notYet
		if !errors.As(err, &ny) || !ny.until.Equal(paceT0.Add(time.Hour)) {
			t.Fatalf("third turn of an hour of two: %v, want not yet, until %v", err, paceT0.Add(time.Hour))
		}
	}
	// Nothing was booked for the refused turns: the hour's next is its first.
	clk.Set(paceT0.Add(time.Hour))
	if got := turns(t, ps, clk, 1, 1); got[0] != time.Hour {
		t.Fatalf("turn after the hour at %v, want 1h", got[0])
	}
}

func TestPacingHoldFromGitHub(t *testing.T) {
	ps, clk := newPacers(t, 2, 80, 500)
	ps[1].maxWait = 30 * time.Second
	ctx := context.Background()
	if err := ps[0].holdUntil(ctx, 1, paceT0.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A shorter pause asked later does not shorten the first.
	if err := ps[0].holdUntil(ctx, 1, paceT0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := ps[1].book(ctx, 1, clk.Now())
	var ny *notYet
	if !errors.As(err, &ny) || !ny.until.Equal(paceT0.Add(90*time.Second)) {
		t.Fatalf("turn on the other replica during GitHub's pause: %v, want not yet, until +90s", err)
	}
	if got := turns(t, ps[:1], clk, 1, 1); got[0] != 90*time.Second {
		t.Fatalf("turn at %v, want at the end of the pause (90s)", got[0])
	}
	if got := turns(t, ps, clk, 2, 1); got[0] != 0 {
		t.Fatalf("installation 2 held by installation 1's pause: %v", got[0])
	}
}

// A pause GitHub asks for while turns are already booked holds them too:
// no send of either replica goes before it ends, and each turn it covers is
// given back and booked again after it, one gap apart.
func TestPacingHoldStopsTurnsAlreadyBooked(t *testing.T) {
	rdb := redistest.Start(t).Client()
	const gap, n = 100 * time.Millisecond, 6
	ps := make([]*pacer, 2) // two replicas
	for i := range ps {
		ps[i] = &pacer{rdb: rdb, gap: gap, perMinute: 80, perHour: 500, maxWait: time.Minute, now: time.Now}
	}
	ctx := t.Context()
	turnsKey, _, _ := PaceKeys(1)
	// A first pause books the turns from 1.5 s on: they wait when the next comes.
	first := time.Now().Add(1500 * time.Millisecond)
	if err := ps[0].holdUntil(ctx, 1, first); err != nil {
		t.Fatal(err)
	}
	type result struct {
		at  time.Time
		err error
	}
	sends := make(chan result, n)
	for i := range n {
		go func() {
			err := ps[i%2].wait(ctx, 1)
			sends <- result{time.Now(), err}
		}()
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if c, err := rdb.ZCard(ctx, turnsKey).Result(); err == nil && c == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d turns not booked within a second", n)
		}
	}
	hold := time.Now().Add(2500 * time.Millisecond).Truncate(time.Millisecond)
	if err := ps[1].holdUntil(ctx, 1, hold); err != nil {
		t.Fatal(err)
	}
	if time.Now().After(first) {
		t.Fatal("the second pause came after the booked turns were due: the test shows nothing")
	}
	for range n {
		select {
		case r := <-sends:
			if r.err != nil {
				t.Fatalf("wait: %v", r.err)
			}
			if r.at.Before(hold) {
				t.Fatalf("a booked turn went out %s before GitHub's pause ended", hold.Sub(r.at))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a turn never went out after the pause")
		}
	}
	booked, err := rdb.ZRangeWithScores(ctx, turnsKey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(booked) != n {
		t.Fatalf("%d turns booked, want the %d re-booked and the ones given back gone", len(booked), n)
	}
	for i, z := range booked {
		at := time.UnixMilli(int64(z.Score))
		if at.Before(hold) {
			t.Fatalf("turn %d at %s, inside the pause that ended %s", i, at.Format(time.StampMilli), hold.Format(time.StampMilli))
		}
		if i > 0 && at.Sub(time.UnixMilli(int64(booked[i-1].Score))) < gap {
			t.Fatalf("turns %d and %d re-booked less than %s apart", i-1, i, gap)
		}
	}
}

// A turn covered by a pause longer than a task waits is given back: the
// push comes back when the pause ends, and no turn is left booked.
func TestPacingHoldPastMaxWaitGivesTheTurnBack(t *testing.T) {
	rdb := redistest.Start(t).Client()
	p := &pacer{rdb: rdb, gap: 100 * time.Millisecond, perMinute: 80, perHour: 500, maxWait: time.Second, now: time.Now}
	ctx := t.Context()
	turnsKey, _, _ := PaceKeys(1)
	if err := p.holdUntil(ctx, 1, time.Now().Add(700*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.wait(ctx, 1) }()
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if c, err := rdb.ZCard(ctx, turnsKey).Result(); err == nil && c == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no turn booked within a second")
		}
	}
	hold := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	if err := p.holdUntil(ctx, 1, hold); err != nil {
		t.Fatal(err)
	}
	var ny *notYet
	if err := <-done; !errors.As(err, &ny) || !ny.until.Equal(hold) {
		t.Fatalf("turn inside a pause of a minute: %v, want not yet, until the pause ends (%s)", err, hold)
	}
	if c, err := rdb.ZCard(ctx, turnsKey).Result(); err != nil || c != 0 {
		t.Fatalf("%d turns left booked (%v), want the one given back gone", c, err)
	}
}

func TestPacerWaitSleepsUntilTheTurn(t *testing.T) {
	rdb := redistest.Start(t).Client()
	p := &pacer{rdb: rdb, gap: 300 * time.Millisecond, perMinute: 80, perHour: 500, maxWait: time.Minute, now: time.Now}
	ctx := context.Background()
	if err := p.wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.wait(cancelled, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("second turn within the gap: %v, want it to wait", err)
	}
	// A send another replica just stamped (its turn ran late) holds this
	// one back although its own turn, booked on a fresh installation, is now.
	_, _, sent := PaceKeys(2)
	if err := rdb.Set(ctx, sent, time.Now().UnixMilli(), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if err := p.wait(short, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("turn right after another replica's send: %v, want it to wait the gap", err)
	}
	var nilPacer *pacer
	if err := nilPacer.wait(ctx, 1); err != nil {
		t.Fatalf("no Redis, no pacing: %v", err)
	}
}

func TestPushSlotsPerInstallation(t *testing.T) {
	w := New(Deps{PushesPerInstallation: 2})
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	r1, err := w.acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := w.acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.acquire(cancelled, 1); err == nil {
		t.Fatal("a third concurrent push of one installation was let through")
	}
	other, err := w.acquire(cancelled, 2)
	if err != nil {
		t.Fatalf("another installation's push was blocked: %v", err)
	}
	other()
	r1()
	r3, err := w.acquire(cancelled, 1)
	if err != nil {
		t.Fatalf("a released slot was not reusable: %v", err)
	}
	r2()
	r3()
}

// An installation's pacing keys share one hash slot: a one-node Redis
// Cluster refuses a script whose keys do not.
func TestPacingOnRedisCluster(t *testing.T) {
	rdb := redistest.StartWith(t, redistest.Options{Cluster: true}).ClusterClient()
	p := &pacer{rdb: rdb, gap: time.Millisecond, perMinute: 80, perHour: 500, maxWait: time.Minute, now: time.Now}
	ctx := context.Background()
	if err := p.holdUntil(ctx, 7, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := p.wait(ctx, 7); err != nil {
			t.Fatalf("turn %d on a cluster: %v", i, err)
		}
	}
}
