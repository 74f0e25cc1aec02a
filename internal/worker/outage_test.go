package worker

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

// burstRows writes n accepted rows whose branch has only a PR closed
// unmerged: each re-evaluation frees its row.
func (e *env) burstRows(n int64) {
	for i := int64(1); i <= n; i++ {
		e.row(i, "accept", nil)
		e.pr(i, "closed", false)
	}
}

// A burst of re-evaluations whose read fails once, together (one 502, one
// GraphQL INTERNAL answer), is one failure of GitHub: under the worker's
// own retry policy every task retries within seconds, not minutes as if
// GitHub had failed fifty times in a row.
func TestBurstFailingOnceRetriesWithinSeconds(t *testing.T) {
	faults := []struct {
		name  string
		fault func(gh *githubtest.Server)
	}{
		{"502", func(gh *githubtest.Server) { gh.FailNext("/graphql", http.StatusBadGateway, nil, 1) }},
		{"graphql INTERNAL", func(gh *githubtest.Server) {
			gh.AnswerNext("/graphql", http.StatusOK,
				[]byte(`{"errors":[{"type":"INTERNAL","message":"Something went wrong while executing your query."}]}`), 1)
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			const n = 50
			e := newEnv(t, options{freeClosedPR: true, readWindow: 300 * time.Millisecond})
			e.burstRows(n)
			f.fault(e.gh)
			for i := int64(1); i <= n; i++ {
				if _, err := e.client.Enqueue(reevaluateTask(t, i, fmt.Sprintf("d-%d", i), "closed", 0)); err != nil {
					t.Fatal(err)
				}
			}
			e.serveWith(n, retry.Delay)
			e.within(10*time.Second, 20*time.Millisecond, "every row of the burst freed within 10s", func() bool {
				for i := int64(1); i <= n; i++ {
					if e.get(i).Freed == nil {
						return false
					}
				}
				return true
			})
			waits := value(e.m.TaskRuns.WithLabelValues(tasks.TypeReevaluate, "wait"))
			if waits < n/2 {
				t.Fatalf("%v tasks waited: the burst did not fail together, the test shows nothing", waits)
			}
			if r := value(e.m.TaskRuns.WithLabelValues(tasks.TypeReevaluate, "retry")); r != 0 {
				t.Fatalf("%v runs spent the retry budget on a 502", r)
			}
		})
	}
}

// Every task of a burst stopped by one secondary rate limit that named no
// wait waits GitHub's minute; a retry that fails again waits longer; the
// limit is the installation's own.
func TestBurstOnAnUnnamedLimitWaitsAMinute(t *testing.T) {
	const n = 20
	clk := testkit.NewClock(time.Now())
	e := newEnv(t, options{freeClosedPR: true, clock: clk, readWindow: 300 * time.Millisecond})
	e.burstRows(n)
	e.gh.FailNext("/graphql", http.StatusTooManyRequests, http.Header{}, 1)
	reevaluateAll := func(issues ...int64) []*retry.WaitError {
		t.Helper()
		var wg sync.WaitGroup
		out := make([]*retry.WaitError, len(issues))
		for k, i := range issues {
			wg.Go(func() {
				err := e.w.Reevaluate(e.ctx, reevaluateTask(t, i, fmt.Sprintf("d-%d", i), "closed", 0))
				if !errors.As(err, &out[k]) {
					t.Errorf("#%d on a 429 without Retry-After: %v, want a wait", i, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		return out
	}
	issues := make([]int64, n)
	for i := range issues {
		issues[i] = int64(i + 1)
	}
	burst := reevaluateAll(issues...)
	for k, w := range burst {
		if w.After != SecondaryLimitWait {
			t.Fatalf("#%d of the burst waits %s, want GitHub's minute", k+1, w.After)
		}
	}
	if q := e.gh.Count(githubtest.RouteGraphQL); q != 1 {
		t.Fatalf("%d GraphQL reads, want the burst read together once", q)
	}
	// Another installation's limit is its own: a minute.
	var other *retry.WaitError
	if err := e.w.githubFailure(instID+1, burst[0].Err); !errors.As(err, &other) || other.After != SecondaryLimitWait {
		t.Fatalf("another installation's first unnamed limit: %v, want a wait of a minute", err)
	}
	// The burst's tasks come back after their minute and fail again.
	clk.Add(SecondaryLimitWait)
	e.gh.FailNext("/repos/queen/t27/pulls", http.StatusTooManyRequests, http.Header{}, 1)
	if again := reevaluateAll(1)[0]; again.After < SecondaryLimitWait || again.After > 2*SecondaryLimitWait {
		t.Fatalf("the retry failing again waits %s, want 1 to 2 minutes", again.After)
	}
	for i := int64(1); i <= n; i++ {
		if e.get(i).PRs != nil {
			t.Fatalf("#%d: a rate-limited read recorded PR state", i)
		}
	}
}
