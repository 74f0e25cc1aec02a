package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

// A burst of closes whose batched GitHub read fails once, together (one
// 502), is one failure of GitHub, not twenty in a row: every row is freed
// within 10 s of its delivery, no task spending its retry budget.
func TestBurstFailingOnOne502FreesWithinSeconds(t *testing.T) {
	t.Parallel()
	const n, base = 20, 9901
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_REEVALUATE_DELAY": "1s"})
	f.webhook()
	// Every task of the burst runs at once, so they read together.
	f.startWorker(map[string]string{"QUEEN_WORKER_CONCURRENCY": itoa(n)})
	for i := int64(base); i < base+n; i++ {
		f.acceptRow(i)
		f.closedPR(i, int(i), false)
	}
	f.gh.FailNext("/graphql", http.StatusBadGateway, http.Header{}, 1)
	// The deliveries' tasks are let run together, as a bulk close's would:
	// the queue is paused until every one is due.
	if err := f.insp.PauseQueue(tasks.Queue); err != nil {
		t.Fatal(err)
	}
	ids := map[int64]string{}
	for i := int64(base); i < base+n; i++ {
		ids[i] = f.deliverPR(i, int(i), "closed", false, "d-burst-"+itoa(i))
	}
	eventually(t, frLimit, "every task of the burst due", func() bool {
		q, err := f.insp.GetQueueInfo(tasks.Queue)
		return err == nil && q.Pending == n
	})
	if err := f.insp.UnpauseQueue(tasks.Queue); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "every row of the burst freed within 10s", func() bool {
		for i := range ids {
			if f.claim(i).Freed == nil {
				return false
			}
		}
		return true
	})
	w := f.metric("queen_task_runs_total", `type="claim:reevaluate"`, `result="wait"`)
	t.Logf("%v of %d re-evaluations waited on the 502", w, n)
	if w < n/2 {
		t.Fatalf("%v re-evaluations waited: the burst did not fail together, the test shows nothing", w)
	}
	if q := f.gh.Count(githubtest.RouteGraphQL); q < 2 {
		t.Fatalf("%d GraphQL reads: want the failed one and a read after it", q)
	}
	for i, id := range ids {
		if info := f.waitDone(id); info.Retried != 0 {
			t.Fatalf("#%d: retried %d against the budget on a 502", i, info.Retried)
		}
	}
}
