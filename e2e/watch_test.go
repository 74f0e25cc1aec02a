package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
)

var watchID = regexp.MustCompile(`  id (\d+-\d+)$`)

// watchedIDs are the ids of the change lines queenctl claims watch printed.
func watchedIDs(out string) []string {
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		if m := watchID.FindStringSubmatch(l); m != nil {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// The built queenctl watches the built webhook's stream while the webhook
// is killed and started again, and rows change while it is away (as the
// worker's writes do): every change is printed once, in the audit's order,
// and SIGINT ends the watch with 0.
func TestWatchAcrossAWebhookRestart(t *testing.T) {
	s := newStack(t, nil)
	hook := s.webhook()
	watch := start(t, "queenctl", map[string]string{"QUEEN_API_URL": s.apiURL, "QUEEN_API_TOKEN": apiToken},
		"claims", "watch", "--repo", repo)
	led := ledger.New(s.redis.Client(), ledger.Options{})
	write := func(issue int64) {
		t.Helper()
		var patch map[string]json.RawMessage
		_ = json.Unmarshal([]byte(`{"started": true, "owned_paths": ["src/a.go"]}`), &patch)
		if _, err := led.Upsert(context.Background(), repo, issue, patch, audit.API("e2e")); err != nil {
			t.Fatal(err)
		}
	}
	// The first change is written once queenctl is connected: it starts
	// with the changes from then on.
	eventually(t, 20*time.Second, "the watcher connected", func() bool {
		return metricValue(t, s.apiURL, "queen_api_watchers") == 1
	})
	put := func(issue int64) {
		t.Helper()
		if code := apiJSON(t, "PUT", s.apiURL+"/v1/repos/"+repo+"/dispatches/"+itoa(issue), apiToken, map[string]any{"started": true}, nil); code != 200 {
			t.Fatalf("PUT #%d: %d", issue, code)
		}
	}
	for i := int64(1); i <= 5; i++ {
		put(i)
	}
	eventually(t, 20*time.Second, "5 changes printed", func() bool { return len(watchedIDs(watch.out.String())) == 5 })

	hook.kill()
	for i := int64(6); i <= 10; i++ {
		write(i) // while no webhook runs
	}
	eventually(t, 20*time.Second, "queenctl noticed the webhook gone", func() bool {
		return strings.Contains(watch.out.String(), "reconnecting in")
	})
	hook = s.webhook()
	for i := int64(11); i <= 13; i++ {
		put(i)
	}
	res, err := led.AuditSince(context.Background(), ledger.AuditFilter{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range res.Entries {
		want = append(want, e.ID)
	}
	eventually(t, 30*time.Second, "13 changes printed", func() bool { return len(watchedIDs(watch.out.String())) >= 13 })
	time.Sleep(300 * time.Millisecond)
	if got := watchedIDs(watch.out.String()); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("printed %v\nwant the audit's %v\n%s", got, want, watch.out.String())
	}
	// A graceful stop ends the stream at once rather than waiting out the
	// shutdown timeout, after which the webhook would exit with an error.
	hook.stop()
	if _, code := hook.exited(); code != 0 {
		t.Fatalf("the webhook stopped with a watcher connected: exit %d\n%s", code, hook.out.String())
	}
	eventually(t, 20*time.Second, "queenctl noticed the stream end", func() bool {
		return strings.Count(watch.out.String(), "reconnecting in") >= 2
	})
	_ = watch.cmd.Process.Signal(os.Interrupt)
	select {
	case <-watch.done:
	case <-time.After(10 * time.Second):
		t.Fatal("queenctl claims watch did not end on SIGINT")
	}
	if code := watch.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d on SIGINT, want 0\n%s", code, watch.out.String())
	}
}

// metricValue reads one unlabelled series of the webhook's /metrics; -1
// when it is not there (yet).
func metricValue(t *testing.T, apiURL, name string) float64 {
	t.Helper()
	resp, err := http.Get(apiURL + "/metrics")
	if err != nil {
		return -1
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err == nil {
				return f
			}
		}
	}
	return -1
}
