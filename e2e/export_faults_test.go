package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
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

// exLeak is the longest start or end (6 characters at least) of a secret
// that s holds, or "": what a copy cut before it was scrubbed leaves.
func exLeak(s string, secrets ...string) string {
	for _, sec := range secrets {
		for n := len(sec); n >= 6; n-- {
			if strings.Contains(s, sec[:n]) {
				return sec[:n]
			}
			if strings.Contains(s, sec[len(sec)-n:]) {
				return sec[len(sec)-n:]
			}
		}
	}
	return ""
}

// checkNoLeak asserts no piece of a credential is in the worker's log, the
// rows' claim views, queenctl explain --json or queenctl export status.
func (x *exStack) checkNoLeak(w *proc, issues ...int64) {
	x.t.Helper()
	secrets := x.secrets()
	texts := map[string]string{"worker.log": w.out.String()}
	for _, issue := range issues {
		resp, err := http.DefaultClient.Do(exRequest(x.t, x.apiURL+"/v1/repos/"+repo+"/claims/"+itoa(issue)+"?history=50"))
		if err != nil {
			x.t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		texts[fmt.Sprintf("claim view #%d", issue)] = string(body)
		_, out, _ := x.ctl("explain", "--json", fmt.Sprintf("%s#%d", repo, issue))
		texts[fmt.Sprintf("explain --json #%d", issue)] = out
	}
	_, out, _ := x.ctl("export", "status", "--repo", repo)
	texts["export status"] = out
	_, out, _ = x.ctl("export", "status", "--repo", repo, "--json")
	texts["export status --json"] = out
	for where, text := range texts {
		if l := exLeak(text, secrets...); l != "" {
			x.t.Errorf("%s holds %q of a credential", where, l)
		}
	}
}

func exRequest(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	return req
}

// The export's gateway echoes the Authorization header past the first 200
// bytes of its error body, and git prints a remote's answer quoting the
// credential: neither reaches the log, the row or the API, whole or cut.
func TestExportCredentialsNeverLeak(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.webhook()
	x.exportEcho.Store(150) // the token straddles byte 200 of the body
	h71 := x.branch(71, map[string]string{"src/s71.rs": "fn a() {}\n"})
	x.accept(71, h71, nil)
	w := x.startWorker()
	eventually(t, exLimit, "#71 to record the export's echo", func() bool {
		st := x.exports()[71]
		return st != nil && st.State == "retrying" && strings.Contains(st.LastError, "status 502: x")
	})
	if st := x.exports()[71]; !strings.Contains(st.LastError, "upstream refused Authorization: Bearer ***") {
		t.Errorf("last_error %q: want the echo kept with the token masked", st.LastError)
	}

	// The export answers; git's remote quotes the credential.
	x.remote.EchoCredential(175)
	x.exportEcho.Store(-1)
	h72 := x.branch(72, map[string]string{"src/s72.rs": "fn b() {}\n"})
	x.accept(72, h72, nil)
	eventually(t, exLimit, "#72 to record git's failure", func() bool {
		x.runRetries()
		st := x.exports()[72]
		return st != nil && st.State == "retrying" && strings.Contains(st.LastError, "git fetch")
	})
	if len(x.secrets()) < 3 {
		t.Fatal("the git front saw no installation token")
	}
	x.checkNoLeak(w, 71, 72)

	x.remote.EchoCredential(-1)
	eventually(t, exLimit, "both rows to publish once the echoes stop", func() bool {
		x.runRetries()
		all := x.exports()
		return all[71] != nil && all[71].State == "pr_opened" && all[72] != nil && all[72].State == "pr_opened"
	})
	x.checkNoLeak(w, 71, 72)
}

// A push asked for through the API with no worker running the export is
// refused, naming QUEEN_EXPORT_URL, instead of queued to wait for nothing.
func TestExportPushNeedsAWorkerWithTheExport(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{sweep: "0s"})
	x.webhook()
	head := x.branch(81, map[string]string{"src/s81.rs": "fn a() {}\n"})
	x.accept(81, head, nil)
	push := func() (int, map[string]any) {
		var out map[string]any
		code := apiJSON(t, "POST", x.apiURL+"/v1/repos/"+repo+"/exports/81/push", apiToken, nil, &out)
		return code, out
	}
	refused := func(when string) {
		t.Helper()
		code, out := push()
		if code != 409 || out["field"] != "QUEEN_EXPORT_URL" || out["error"] != "QUEEN_EXPORT_URL is not set on any running worker" {
			t.Fatalf("%s: %d %v, want 409 naming QUEEN_EXPORT_URL", when, code, out)
		}
	}
	refused("no worker")

	plain := map[string]string{}
	for k, v := range x.workerEnv {
		if !strings.HasPrefix(k, "QUEEN_EXPORT_") {
			plain[k] = v
		}
	}
	w := start(t, "worker", plain)
	waitHTTP(t, w, "http://"+x.workerAddr+"/healthz")
	refused("a worker without the export")
	w.stop()

	x.startWorker()
	if code, out := push(); code != 202 {
		t.Fatalf("with a worker running the export: %d %v, want 202", code, out)
	}
	x.waitStates("pr_opened", 81)
	x.checkPublished(map[int64]string{81: head})
}
