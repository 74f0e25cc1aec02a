package e2e

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// A secondary rate limit without Retry-After (4,990 requests remaining, the
// primary window's reset 50 minutes out) costs the built worker's task a
// minute or two, not the 49m59s go-github reads from the reset; once run,
// its read is sent to GitHub, not refused locally, and frees the claim.
func TestSecondaryLimitWithoutRetryAfterWaitsAMinute(t *testing.T) {
	t.Parallel()
	f := newClosedPRStack(t, 9651, 1051)

	reset := strconv.FormatInt(time.Now().Add(50*time.Minute).Unix(), 10)
	f.gh.AnswerNextWith("/repos/"+repo+"/pulls", http.StatusForbidden,
		http.Header{"X-Ratelimit-Remaining": {"4990"}, "X-Ratelimit-Used": {"10"}, "X-Ratelimit-Reset": {reset}},
		[]byte(`{"message":"`+githubtest.SecondaryLimitMessage+`","documentation_url":"`+githubtest.SecondaryRateLimitDocs+`"}`), 1)
	sent := time.Now()
	id := f.deliverPR(9651, 1051, "closed", false, "d-unnamed")
	var info *asynq.TaskInfo
	eventually(t, frLimit, "the task waiting in the retry set", func() bool {
		info = f.task(id)
		return info != nil && info.State == asynq.TaskStateRetry
	})
	if wait := info.NextProcessAt.Sub(sent); wait < 55*time.Second || wait > 130*time.Second {
		t.Fatalf("the task comes back after %s (%s), want 60-130 s, never the reset 50 minutes out", wait.Round(time.Second), info.LastErr)
	}
	lists := f.gh.Count(githubtest.RouteListPulls)
	done := f.hurry(id)
	frCheckFreed(t, f.waitFreed(9651), "d-unnamed")
	if f.gh.Count(githubtest.RouteListPulls) <= lists {
		t.Fatal("the retry's read never reached GitHub: refused locally")
	}
	if done.Retried != 0 {
		t.Fatalf("retried %d against the budget; a rate limit only waits", done.Retried)
	}
}
