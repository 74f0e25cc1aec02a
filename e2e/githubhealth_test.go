package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// While GitHub refuses the App's key the worker's /readyz is 503
// (github_app refused) and its INFO "ready" line waits; once GitHub takes
// the key, within the check's minute, /readyz is 200 and "ready" is said.
func TestWorkerReadyWaitsWhileGitHubRefusesTheKey(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	s.gh.RefuseApp(true)
	work, base := s.worker()
	eventually(t, 30*time.Second, "the worker's /readyz to say github_app refused", func() bool {
		code, failed := readyz(t, base)
		return code == http.StatusServiceUnavailable && failed["github_app"] == "refused" && len(failed) == 1
	})
	eventually(t, 30*time.Second, "the worker to log that GitHub refuses the key", func() bool {
		return strings.Contains(work.out.String(), "not ready: GitHub refuses the App's key")
	})
	if strings.Contains(work.out.String(), `"msg":"ready`) {
		t.Fatalf("the worker said ready while GitHub refuses its key:\n%s", work.out)
	}
	if v := metricValue(t, base, `queen_github_app_state{state="refused"}`); v != 1 {
		t.Errorf(`queen_github_app_state{state="refused"} = %v, want 1`, v)
	}

	s.gh.RefuseApp(false)
	eventually(t, 90*time.Second, "the worker's /readyz 200 once GitHub takes the key", func() bool {
		code, _ := readyz(t, base)
		return code == http.StatusOK
	})
	eventually(t, 30*time.Second, "the worker's ready line", func() bool {
		return strings.Contains(work.out.String(), `"msg":"ready: Redis answers, the ledger is open and GitHub takes the App's key"`)
	})
}

// While GitHub cannot be reached the worker is ready but degraded: /readyz
// 200 naming github_app unreachable, its metric, and a ready line saying so.
func TestWorkerDegradedWhileGitHubIsUnreachable(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	s.gh.Down(true)
	work, base := s.worker()
	var body map[string]any
	eventually(t, 60*time.Second, "the worker's /readyz 200 degraded with github_app unreachable", func() bool {
		body = nil
		code := apiJSON(t, "GET", base+"/readyz", "", nil, &body)
		degraded, _ := body["degraded"].(map[string]any)
		return code == http.StatusOK && body["status"] == "degraded" && degraded["github_app"] == "unreachable"
	})
	if v := metricValue(t, base, `queen_github_app_state{state="unreachable"}`); v != 1 {
		t.Errorf(`queen_github_app_state{state="unreachable"} = %v, want 1`, v)
	}
	eventually(t, 60*time.Second, "the worker's degraded ready line", func() bool {
		return strings.Contains(work.out.String(), "GitHub cannot be reached (degraded)")
	})
}
