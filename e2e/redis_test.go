package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// The freeing flow of TestFreeClosedUnmergedPRFreesItsIssue (one node) on
// the two other forms of QUEEN_REDIS_URL, and the webhook's 503 once the
// store cannot be reached.
func TestFreeOnSentinelAndCluster(t *testing.T) {
	t.Parallel()
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		set := redistest.StartSentinel(t, redistest.SentinelOptions{Password: "e2e-data-password-3c1f", SentinelPassword: "e2e-sentinel-password-9b2e"})
		f := newFreeStackOn(t, sentinelForm(set), map[string]string{frFlag: "on"})
		freeOne(t, f)
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.StartCluster(t, 3)
		f := newFreeStackOn(t, clusterForm(c), map[string]string{frFlag: "on"})
		freeOne(t, f)
		// The node holding asynq's queue goes: deliveries are refused.
		c.NodeFor("asynq:{default}:pending").Kill()
		body := prPayload(t, repo, 9112, 502, "closed", false, instID)
		if code := deliver(t, f.hookURL, secret, "pull_request", "d-form-down", body); code != http.StatusServiceUnavailable {
			t.Fatalf("queue's node down: %d, want 503", code)
		}
	})
}

func freeOne(t *testing.T, f *fstack) {
	t.Helper()
	f.both()
	f.acceptRow(9111)
	f.closedPR(9111, 501, false)
	id := f.deliverPR(9111, 501, "closed", false, "d-form-1")
	frCheckFreed(t, f.waitFreed(9111), "d-form-1")
	f.waitDone(id)
}

// fodelivery is one delivery of the failover test and what the webhook said.
type fodelivery struct {
	issue    int64
	id       string
	body     []byte
	code     int
	err      error
	accepted bool // answered 202 at least once
}

// A stream of deliveries runs while the primary is killed with SIGKILL and
// Sentinel promotes a replica. Every delivery the webhook answered 202
// ends in its free without being sent again; the others were answered 503
// (never 202 for a task it could not store) and free their row once
// redelivered; rows without a delivery stay claimed; the worker that freed
// a row before the switch frees the rest after it, without a restart.
func TestFailoverLosesNoAcceptedDelivery(t *testing.T) {
	t.Parallel()
	// Two replicas, so that after the failover the new primary has one to
	// acknowledge the webhook's writes.
	set := redistest.StartSentinel(t, redistest.SentinelOptions{Replicas: 2})
	// The stream's tasks wait out the switch in the scheduled set: asynq
	// v0.26 cannot record the end of a task whose run met the outage (its
	// re-sync reuses a canceled context), so such a task would stay active
	// until asynq's recoverer finds its lease expired, one to two minutes later.
	f := newFreeStackOn(t, sentinelForm(set), map[string]string{frFlag: "on", "QUEEN_REEVALUATE_DELAY": "2s"})
	f.webhook()
	worker := f.startWorker(nil)
	f.acceptRow(3000)
	f.closedPR(3000, 5000, false)
	f.deliverPR(3000, 5000, "closed", false, "d-failover-before")

	const streamed, afterSwitch, untouched = 40, 5, 5
	var rows []*fodelivery
	for i := range int64(streamed + afterSwitch + untouched) {
		issue := 3001 + i
		f.acceptRow(issue)
		f.closedPR(issue, int(5001+i), false)
		rows = append(rows, &fodelivery{issue: issue, id: fmt.Sprintf("d-failover-%d", issue),
			body: prPayload(t, repo, issue, int(5001+i), "closed", false, instID)})
	}
	frCheckFreed(t, f.waitFreed(3000), "d-failover-before") // the worker works on the first primary
	set.WaitReplicated()                                    // the rows survive the failover: only deliveries are at stake

	// Four senders stream the first rows. After the fifth 202 the replicas
	// fall behind (set.Lag: replication lags, as it can at any moment);
	// four answers later the primary is killed with deliveries in flight
	// and the replicas go on. What the old primary took while they lagged
	// is lost, so none of it may have been answered 202.
	old := set.Primary
	var (
		mu       sync.Mutex
		next     int
		accepted int
		afterLag int // answers to deliveries sent while the replicas lag
		wg       sync.WaitGroup
	)
	fifth, fourth := make(chan struct{}), make(chan struct{})
	var fifthOnce, fourthOnce sync.Once
	lagging := make(chan struct{}) // closed once the replicas lag
	var lagOnce sync.Once
	startLag := func() { lagOnce.Do(func() { close(lagging) }) }
	defer startLag() // a failed test must not leave the senders waiting
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == streamed {
					mu.Unlock()
					return
				}
				d := rows[next]
				next++
				wait := accepted >= 5
				mu.Unlock()
				if wait {
					<-lagging // the next deliveries meet lagging replicas
				}
				lagged := false
				select {
				case <-lagging:
					lagged = true
				default:
				}
				code, err := post(f.hookURL, secret, "pull_request", d.id, d.body)
				mu.Lock()
				d.code, d.err, d.accepted = code, err, code == http.StatusAccepted
				if d.accepted {
					accepted++
				}
				if accepted == 5 {
					fifthOnce.Do(func() { close(fifth) })
				}
				if lagged {
					afterLag++
					if afterLag == 4 {
						fourthOnce.Do(func() { close(fourth) })
					}
				}
				mu.Unlock()
			}
		}()
	}
	streamDone := make(chan struct{})
	go func() { wg.Wait(); close(streamDone) }()
	select {
	case <-fifth:
	case <-streamDone:
		t.Fatalf("only %d of %d deliveries accepted with a healthy primary", accepted, streamed)
	}
	if err := set.Lag(); err != nil {
		t.Fatal(err)
	}
	startLag()
	select {
	case <-fourth:
	case <-streamDone:
		t.Fatal("the stream ended before four deliveries met the lagging replicas")
	}
	set.Crash()
	<-streamDone
	promoted := set.WaitFailover()
	t.Logf("primary %s killed, %s promoted", old.Addr, promoted.Addr)

	stored := 0
	for _, d := range rows[:streamed] {
		switch {
		case d.err != nil:
			t.Fatalf("delivery %s: %v", d.id, d.err)
		case d.code == http.StatusServiceUnavailable:
			if f.task(taskID(d)) != nil {
				stored++ // stored although unacknowledged: harmless, its redelivery is a duplicate
			}
		case d.code != http.StatusAccepted:
			t.Fatalf("delivery %s: %d, want 202 or 503", d.id, d.code)
		}
	}
	refused := streamed - countAccepted(rows[:streamed])
	t.Logf("streamed %d: %d answered 202, %d answered 503 (%d of those stored anyway)", streamed, streamed-refused, refused, stored)
	if refused == 0 {
		t.Fatal("no delivery was refused: the kill landed after the stream")
	}

	// After the switch: new deliveries, and GitHub's redelivery of those
	// refused, are answered 503 until the webhook's client has found the
	// new primary and a replica to acknowledge, then 202.
	for _, d := range rows[streamed : streamed+afterSwitch] {
		redeliverUntilAccepted(t, f, d)
	}
	for _, d := range rows[:streamed] {
		if d.code != http.StatusAccepted {
			redeliverUntilAccepted(t, f, d)
		}
	}
	// Every row delivered is freed once, by its own delivery: those
	// answered 202 before the switch without being sent again. The worker
	// that freed a row before the switch does it.
	for _, d := range rows[:streamed+afterSwitch] {
		frCheckFreed(t, waitFreedAcross(t, f, d.issue), d.id)
	}
	if ok, code := worker.exited(); ok {
		t.Fatalf("the worker exited (%d) during the failover", code)
	}
	for _, d := range rows[streamed+afterSwitch:] {
		if v := f.claim(d.issue); !v.Live || v.Freed != nil || v.WouldFree != nil {
			t.Fatalf("#%d had no delivery but: live %v freed %+v would_free %+v", d.issue, v.Live, v.Freed, v.WouldFree)
		}
	}
}

func countAccepted(ds []*fodelivery) int {
	n := 0
	for _, d := range ds {
		if d.accepted {
			n++
		}
	}
	return n
}

func taskID(d *fodelivery) string {
	return tasks.ReevaluateID(tasks.ReevaluatePayload{Repo: repo, Issue: d.issue, Delivery: d.id})
}

// redeliverUntilAccepted sends d again until the webhook answers 202; only 503 may come before.
func redeliverUntilAccepted(t *testing.T, f *fstack, d *fodelivery) {
	t.Helper()
	eventually(t, frLimit, "delivery "+d.id+" accepted", func() bool {
		code := deliver(t, f.hookURL, secret, "pull_request", d.id, d.body)
		if code != http.StatusAccepted && code != http.StatusServiceUnavailable {
			t.Fatalf("delivery %s: %d, want 202 or 503", d.id, code)
		}
		d.accepted = d.accepted || code == http.StatusAccepted
		return code == http.StatusAccepted
	})
	if f.task(taskID(d)) == nil {
		t.Fatalf("delivery %s: 202 but no task", d.id)
	}
}

// waitFreedAcross is waitFreed for a switch: the claims API answers 503
// until its client has found the new primary.
func waitFreedAcross(t *testing.T, f *fstack, issue int64) frClaim {
	t.Helper()
	var v frClaim
	url := f.apiURL + "/v1/repos/" + repo + "/claims/" + itoa(issue) + "?history=100"
	eventually(t, frLimit, "claim "+itoa(issue)+" freed", func() bool {
		v = frClaim{}
		switch code := apiJSON(t, "GET", url, apiToken, nil, &v); code {
		case http.StatusOK:
			return v.Freed != nil
		case http.StatusServiceUnavailable:
			return false
		default:
			t.Fatalf("GET claim %d: %d", issue, code)
			return false
		}
	})
	return v
}
