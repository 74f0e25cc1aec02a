package worker

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

// validationFailed is GitHub's 422 answer to a PR creation, as go-github
// reads it.
func validationFailed(errs ...github.Error) error {
	return &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusUnprocessableEntity},
		Message: "Validation Failed", Errors: errs}
}

func TestPRRefusalReadsGitHubsAnswer(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string // "" is no refusal
	}{
		{"no commits", validationFailed(github.Error{Resource: "PullRequest", Code: "custom", Message: "No commits between master and queen-5"}),
			"GitHub answered 422 Validation Failed: No commits between master and queen-5"},
		{"wrapped", fmt.Errorf("githubapp: POST /repos/o/r/pulls: %w", validationFailed(github.Error{Resource: "PullRequest", Code: "custom", Message: "Head sha can't be blank"})),
			"GitHub answered 422 Validation Failed: Head sha can't be blank"},
		{"no message", validationFailed(github.Error{Resource: "PullRequest", Field: "title", Code: "missing_field"}),
			"GitHub answered 422 Validation Failed: PullRequest title missing_field"},
		{"no errors", validationFailed(), "GitHub answered 422 Validation Failed"},
		{"base missing", validationFailed(github.Error{Resource: "PullRequest", Field: "base", Code: "invalid"}), ""},
		{"head missing", validationFailed(github.Error{Resource: "PullRequest", Field: "head", Code: "invalid"}), ""},
		{"forbidden", &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusForbidden}, Message: "Resource not accessible by integration"}, ""},
		{"outage", &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusBadGateway}, Message: "Server Error"}, ""},
		{"none", nil, ""},
	} {
		r := prRefusal(c.err)
		switch {
		case c.want == "" && r != nil:
			t.Errorf("%s: %+v, want no refusal", c.name, r)
		case c.want != "" && (r == nil || r.Kind != export.KindPRRefused || r.Reason != c.want):
			t.Errorf("%s: %+v, want pr-refused %q", c.name, r, c.want)
		}
	}
}

// GitHub refuses the PR for good after the branch went out: the row is
// refused (pr-refused, GitHub's words, the head pushed), the task ends, and
// no sweep spends a PR creation on it again until the row changes or a
// person asks.
func TestExportPRGitHubRefusesIsRefusedNotRetried(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(40, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.gh.RefusePRs("queen-40", map[string]any{"resource": "PullRequest", "code": "custom", "message": "No commits between master and queen-40"})
	if err := e.w.ExportPush(e.ctx, pushTask(t, 40, head)); err != nil {
		t.Fatalf("a refusal ends the task without retry: %v", err)
	}
	rec := e.get(40)
	want := "pr-refused: GitHub answered 422 Validation Failed: No commits between master and queen-40"
	if st := rec.Export; st == nil || st.State != string(export.StateRefused) || st.Refusal != want ||
		st.PushedHead != head || st.LastError != "" || st.Version != rec.Version {
		t.Fatalf("export state %+v, want refused %q at the row's version with the head pushed", st, want)
	}
	if e.remote.Ref(t, "queen-40") != head || e.gh.Count(githubtest.RouteCreatePull) != 1 {
		t.Fatalf("queen-40 at %s, %d PR creations: want the branch pushed and one creation", e.remote.Ref(t, "queen-40"), e.gh.Count(githubtest.RouteCreatePull))
	}
	for i := 0; i < 3; i++ {
		if rep := e.exportSweep(); rep.Enqueued+rep.Queued != 0 || rep.Settled != 1 {
			t.Fatalf("sweep %d after the refusal %+v, want it settled", i+1, rep)
		}
	}

	// The Queen writes the row again: decided afresh, and refused again.
	e.upsert(40, map[string]any{"owned_paths": []string{"src/"}})
	if rep := e.exportSweep(); rep.Enqueued != 1 {
		t.Fatalf("sweep after the row changed %+v, want it enqueued again", rep)
	}
	if _, err := e.insp.DeleteAllPendingTasks(tasks.Queue); err != nil {
		t.Fatal(err)
	}

	// A person asks once GitHub would take it.
	e.gh.ClearFaults()
	e.pushManually(40, head)
	e.checkPublished(map[int64]string{40: head})
}

// A PR GitHub refuses because a branch is missing (here the base, deleted
// while the branch was pushed) is a failure the sweep retries with its
// backoff, the head pushed kept: a person restoring the base needs no
// push per row. Never left pushed, which every sweep would take again.
func TestExportPRBaseMissingFailsAndBacksOff(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC))
	e := newEnv(t, options{export: true, clock: clock})
	head := e.accepted(41, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.gh.RefusePRs("queen-41", map[string]any{"resource": "PullRequest", "field": "base", "code": "invalid"})
	if err := e.w.ExportPush(e.ctx, pushTask(t, 41, head)); err == nil || isWait(err) {
		t.Fatalf("base missing: %v, want a failure", err)
	}
	st := e.get(41).Export
	if st == nil || st.State != StateFailed || st.PushedHead != head || st.At == nil || !strings.Contains(st.LastError, "422") {
		t.Fatalf("export state %+v, want failed with the head pushed and GitHub's 422", st)
	}
	if rep := e.exportSweep(); rep.Enqueued+rep.Queued != 0 || rep.Backoff != 1 {
		t.Fatalf("sweep after the failure %+v, want it backing off", rep)
	}
	e.gh.ClearFaults()
	clock.Add(FailedBackoff)
	if rep := e.exportSweep(); rep.Enqueued != 1 {
		t.Fatalf("sweep after the backoff %+v, want it enqueued", rep)
	}
	if err := e.w.ExportPush(e.ctx, pushTask(t, 41, head)); err != nil {
		t.Fatal(err)
	}
	e.checkPublished(map[int64]string{41: head})
}

// GitHub fails the PR creation after the branch went out: the row waits
// retrying with the head it pushed, not pushed.
func TestExportPRCreationOutageAfterThePushIsRetrying(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(42, map[string]string{"src/a.rs": "fn a() {}\n"})
	// The PR list (read first) answers; the creation after it fails.
	e.gh.FailAfter(1, "/repos/"+repo+"/pulls", http.StatusBadGateway, nil, -1)
	if err := e.w.ExportPush(e.ctx, pushTask(t, 42, head)); !isWait(err) {
		t.Fatalf("PR creation failing: %v, want a wait", err)
	}
	if st := e.get(42).Export; st == nil || st.State != StateRetrying || st.PushedHead != head || !strings.Contains(st.LastError, "502") {
		t.Fatalf("export state %+v, want retrying with the head pushed", st)
	}
	if e.remote.Ref(t, "queen-42") != head || e.gh.Count(githubtest.RouteCreatePull) == 0 {
		t.Fatal("the branch was not pushed or no PR creation was tried")
	}
	e.gh.ClearFaults()
	if err := e.w.ExportPush(e.ctx, pushTask(t, 42, head)); err != nil {
		t.Fatal(err)
	}
	e.checkPublished(map[int64]string{42: head})
}
