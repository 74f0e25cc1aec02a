package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/logging"
)

// While Redis is down the worker's log stays readable: go-redis's and
// asynq's and the scheduler's complaints (some 20 lines a second before:
// 213 of asynq's were held back in 10 s) come as a first line per
// component and a summary when the outage ends.
func TestWorkerLogsARedisOutageInAFewLines(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	api := freeAddr(t)
	work := start(t, "worker", mergedEnv(s.env, map[string]string{"QUEEN_API_LISTEN": api}))
	eventually(t, 30*time.Second, "the worker is ready", func() bool {
		resp, err := http.Get("http://" + api + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && strings.Contains(work.out.String(), "worker started")
	})
	before := len(work.out.String())
	const outage = 10 * time.Second
	s.redis.Kill()
	time.Sleep(outage)
	s.redis.Restart()
	time.Sleep(logging.BurstQuiet + 3*time.Second)
	lines := strings.Split(strings.TrimSpace(work.out.String()[before:]), "\n")
	var first, ended int
	for _, l := range lines {
		switch {
		case strings.Contains(l, `"burst":"first line`):
			first++
		case strings.Contains(l, ` errors stopped"`):
			ended++
		}
	}
	// go-redis, asynq and the scheduler: a first line and an end each
	// (go-redis's dials are sparse enough to end a burst early, and start
	// another); the rest is the periodic tasks' own lines.
	if len(lines) > 12 || first < 2 || first > 4 || ended != first {
		t.Errorf("a %v outage: %d lines (%d first, %d ended), want at most 12, a first line and an end per component:\n%s",
			outage, len(lines), first, ended, strings.Join(lines, "\n"))
	}
	t.Logf("a %v outage: %d lines:\n%s", outage, len(lines), strings.Join(lines, "\n"))
}
