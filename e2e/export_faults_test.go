package e2e

import (
	"fmt"
	"testing"
)

// history reads the row's recent history through the claims API.
func (x *exStack) history(issue int64) []struct {
	Decision string `json:"decision"`
	Action   string `json:"action"`
} {
	x.t.Helper()
	var out struct {
		History []struct {
			Decision string `json:"decision"`
			Action   string `json:"action"`
		} `json:"history"`
	}
	if code := apiJSON(x.t, "GET", x.apiURL+"/v1/repos/"+repo+"/claims/"+itoa(issue)+"?history=50", apiToken, nil, &out); code != 200 {
		x.t.Fatalf("GET claim #%d: %d", issue, code)
	}
	return out.History
}

// GitHub's PR list answering 502 is an outage: the rows wait retrying,
// never refused, nothing is fetched or pushed; once it answers, both the
// fast-forward and the supersede are published.
func TestExportUnreadPRListIsAnOutage(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.webhook()
	older := x.branch(61, map[string]string{"src/s61.rs": "fn old() {}\n"})
	x.work.Push(t, "queen-61") // an earlier attempt, not an ancestor of the judged head
	heads := map[int64]string{
		61: x.branch(61, map[string]string{"src/s61.rs": "fn new() {}\n"}),
		62: x.branch(62, map[string]string{"src/s62.rs": "fn ff() {}\n"}),
	}
	for issue, head := range heads {
		x.accept(issue, head, nil)
	}
	pushes0 := x.remote.Pushes()
	x.pullsDown.Store(true)
	x.startWorker()

	eventually(t, exLimit, "several failed PR-list reads per row", func() bool {
		x.runRetries()
		return x.pullsFailed.Load() >= 6
	})
	x.waitStates("retrying", 61, 62)
	for issue := range heads {
		if n := x.exp.Requests(fmt.Sprintf("/queen/export/%d", issue)); n != 0 {
			t.Errorf("#%d: %d bundle requests on an unread PR list", issue, n)
		}
	}
	if x.remote.Pushes() != pushes0 || x.remote.Ref(t, "queen-61") != older || x.remote.Ref(t, "queen-62") != "" || len(x.gh.PRs(repo)) != 0 {
		t.Fatal("something was pushed or opened on an unread PR list")
	}

	x.pullsDown.Store(false)
	eventually(t, exLimit, "both rows to publish once /pulls answers", func() bool {
		x.runRetries()
		all := x.exports()
		return all[61] != nil && all[61].State == "pr_opened" && all[62] != nil && all[62].State == "pr_opened"
	})
	x.checkPublished(heads)
	if tag := "refs/tags/queen-superseded/61/" + exShort(older); x.remote.Ref(t, tag) != older {
		t.Errorf("the earlier attempt was not kept as %s", tag)
	}
	for issue := range heads {
		for _, h := range x.history(issue) {
			if h.Decision == "refused" || h.Decision == "pushed" || h.Decision == "superseded" {
				t.Errorf("#%d history holds %q: decided on an unread PR list", issue, h.Decision)
			}
		}
	}
	if a := x.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived: %s", len(a), a[0].LastErr)
	}
}
