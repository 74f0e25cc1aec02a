package export

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/gittest"
)

func TestPublishEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.gh.titles[5] = "Teach the compiler to read rings"
	head := e.branch(t, 5, map[string]string{"rings/SR-00/Foo.swift": "let x = 1\n"},
		map[string]string{"rings/SR-00/Bar.swift": "let y = 2\n"})

	out, err := e.pub.Push(context.Background(), e.job(5, head, "rings/SR-00"))
	if err != nil {
		t.Fatal(err)
	}
	if out.State != StatePROpened || out.Push != StatePushed || out.PushedHead != head || out.PRNumber == 0 {
		t.Fatalf("outcome %+v", out)
	}
	if got := e.remote.Ref(t, "queen-5"); got != head {
		t.Fatalf("remote queen-5 at %q, want the judged head %s", got, head)
	}
	prs := e.gh.createdPRs()
	if len(prs) != 1 {
		t.Fatalf("%d PRs opened, want 1", len(prs))
	}
	pr := prs[0]
	if pr.Base != "master" || pr.Head != "queen-5" || pr.Title != "Teach the compiler to read rings" ||
		!strings.HasPrefix(pr.Body, "Closes #5\n") || !strings.Contains(pr.Body, head) {
		t.Fatalf("PR %+v", pr)
	}
	if refs := e.importRefs(t); refs != "" {
		t.Fatalf("private refs left in the cache: %s", refs)
	}
	var rec dispatch.ExportState
	out.Record(&rec)
	if rec.State != "pr_opened" || rec.PushedHead != head || rec.PRNumber != out.PRNumber || rec.Refusal != "" {
		t.Fatalf("recorded %+v", rec)
	}

	// Run again: the PR exists, so nothing more happens.
	pushes := e.remote.Pushes()
	again, err := e.pub.Push(context.Background(), e.job(5, head, "rings/SR-00"))
	if err != nil {
		t.Fatal(err)
	}
	if again.State != StateHasPR || again.PRNumber != out.PRNumber {
		t.Fatalf("second run %+v, want has_pr #%d", again, out.PRNumber)
	}
	if e.remote.Pushes() != pushes || len(e.gh.createdPRs()) != 1 {
		t.Fatal("the second run pushed or opened something")
	}
}

func TestAlreadyAtTheJudgedHeadOpensThePRWithoutPushing(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 6, map[string]string{"src/a.rs": "a\n"})
	e.work.Push(t, "queen-6") // the old export push landed it, publish never ran
	pushes := e.remote.Pushes()

	out, err := e.pub.Push(context.Background(), e.job(6, head))
	if err != nil {
		t.Fatal(err)
	}
	if out.State != StatePROpened || out.Push != StateAlready || out.PushedHead != "" {
		t.Fatalf("outcome %+v", out)
	}
	if e.remote.Pushes() != pushes {
		t.Fatal("pushed although the branch was at the judged head")
	}
	if e.export.Requests("/queen/export/6") != 0 {
		t.Fatal("fetched a bundle although the branch was at the judged head")
	}
	if prs := e.gh.createdPRs(); len(prs) != 1 || prs[0].Title != "Work on #6" {
		t.Fatalf("PRs %+v", prs)
	}
}

func TestAlreadyAtHeadStillRunsTheChecks(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 16, map[string]string{".github/workflows/ci.yml": "on: push\n"})
	e.work.Push(t, "queen-16")
	out, err := e.pub.Push(context.Background(), e.job(16, head))
	if err != nil {
		t.Fatal(err)
	}
	if out.State != StateRefused || out.Refusal.Kind != KindWorkflow || len(e.gh.createdPRs()) != 0 {
		t.Fatalf("outcome %+v, PRs %d", out, len(e.gh.createdPRs()))
	}
}

func TestEachRefusalIsRecordedAndNothingPushed(t *testing.T) {
	many := func(n int) []map[string]string {
		var c []map[string]string
		for i := 0; i < n; i++ {
			c = append(c, map[string]string{fmt.Sprintf("src/f%02d.rs", i): "x\n"})
		}
		return c
	}
	manyFiles := map[string]string{}
	for i := 0; i < 26; i++ {
		manyFiles[fmt.Sprintf("src/g%02d.rs", i)] = "x\n"
	}
	cases := []struct {
		name   string
		kind   string
		reason string
		setup  func(t *testing.T, e *env) Job
	}{
		{"issue closed", KindIssueNotOpen, "not open", func(t *testing.T, e *env) Job {
			e.gh.closed[21] = true
			return e.job(21, e.branch(t, 21, map[string]string{"a.txt": "a\n"}))
		}},
		{"sent back", KindNotAccepted, "verdict is sendBack", func(t *testing.T, e *env) Job {
			j := e.job(22, e.branch(t, 22, map[string]string{"a.txt": "a\n"}))
			j.Verdict = "sendBack"
			return j
		}},
		{"no judged head", KindNotAccepted, "names no head", func(t *testing.T, e *env) Job {
			e.branch(t, 23, map[string]string{"a.txt": "a\n"})
			return e.job(23, "ABC")
		}},
		{"nothing ahead", KindNoCommits, "nothing ahead", func(t *testing.T, e *env) Job {
			e.work.Branch(t, "queen-24", "origin/master")
			return e.job(24, e.work.Rev(t, "origin/master"))
		}},
		{"empty diff", KindNoCommits, "no diff", func(t *testing.T, e *env) Job {
			return e.job(25, e.branch(t, 25, map[string]string{}))
		}},
		{"workflow", KindWorkflow, ".github/workflows/ci.yml", func(t *testing.T, e *env) Job {
			return e.job(26, e.branch(t, 26, map[string]string{"src/a.rs": "a\n", ".github/workflows/ci.yml": "on: push\n"}))
		}},
		{"too many commits", KindTooLarge, "21 commits", func(t *testing.T, e *env) Job {
			return e.job(27, e.branch(t, 27, many(21)...))
		}},
		{"too many files", KindTooLarge, "26 files", func(t *testing.T, e *env) Job {
			return e.job(28, e.branch(t, 28, manyFiles))
		}},
		{"conflicts", KindConflicts, "README.md", func(t *testing.T, e *env) Job {
			head := e.branch(t, 29, map[string]string{"README.md": "# the bee's readme\n"})
			e.remote.Work.Commit(t, "master", map[string]string{"README.md": "# someone else's readme\n"}, "edit")
			e.remote.Work.Push(t, "master")
			return e.job(29, head)
		}},
		{"boundary", KindBoundary, "docsite/x.md", func(t *testing.T, e *env) Job {
			head := e.branch(t, 30, map[string]string{"docs/a.md": "a\n", "docsite/x.md": "x\n"})
			return e.job(30, head, "docs")
		}},
		{"no bundle", KindNoBundle, "queen-31", func(t *testing.T, e *env) Job {
			return e.job(31, strings.Repeat("a", 40))
		}},
		{"bundle on a base GitHub lacks", KindBadBundle, "bundle verify", func(t *testing.T, e *env) Job {
			e.work.Branch(t, "local-base", "origin/master")
			e.work.Commit(t, "local-base", map[string]string{"base.txt": "never pushed\n"}, "local")
			head := e.work.Commit(t, "queen-32", map[string]string{"a.txt": "a\n"}, "on local base")
			e.export.Base = "local-base"
			return e.job(32, head)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			job := c.setup(t, e)
			before := e.remote.Refs(t, "refs/")
			pushes := e.remote.Pushes()
			out, err := e.pub.Push(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			if out.State != StateRefused || out.Refusal == nil || out.Refusal.Kind != c.kind ||
				!strings.Contains(out.Refusal.Reason, c.reason) {
				t.Fatalf("outcome %+v refusal %+v, want %s naming %q", out, out.Refusal, c.kind, c.reason)
			}
			if e.remote.Pushes() != pushes || fmt.Sprint(e.remote.Refs(t, "refs/")) != fmt.Sprint(before) {
				t.Fatal("a refused branch changed the remote")
			}
			if len(e.gh.createdPRs()) != 0 {
				t.Fatal("a refused branch got a PR")
			}
			if refs := e.importRefs(t); refs != "" {
				t.Fatalf("private refs left: %s", refs)
			}
			if !strings.Contains(e.logs.String(), c.kind) {
				t.Fatalf("refusal not logged: %s", e.logs.String())
			}
		})
	}
}

func TestAcceptedHeadGate(t *testing.T) {
	e := newEnv(t)
	judged := e.branch(t, 40, map[string]string{"a.txt": "judged\n"})
	later := e.work.Commit(t, "queen-40", map[string]string{"a.txt": "after the verdict\n"}, "more")
	out, err := e.pub.Push(context.Background(), e.job(40, judged))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("accepted at %s, but the export has %s", judged[:12], later[:12])
	if out.State != StateRefused || out.Refusal.Kind != KindNotAccepted || out.Refusal.Reason != want {
		t.Fatalf("outcome %+v %+v, want %q", out, out.Refusal, want)
	}
	if e.remote.Ref(t, "queen-40") != "" {
		t.Fatal("an unjudged head reached the remote")
	}
}

// olderAttempt puts an earlier attempt of queen-<issue> on the remote and
// the accepted, later attempt in the export; it returns both heads.
func olderAttempt(t *testing.T, e *env, issue int64) (old, accepted string) {
	t.Helper()
	name := fmt.Sprintf("queen-%d", issue)
	e.remote.Work.Branch(t, name, "origin/master")
	old = e.remote.Work.CommitAt(t, name, map[string]string{"a.txt": "first try\n"}, "attempt 1",
		gittest.Epoch.Add(-24*time.Hour))
	e.remote.Work.Push(t, name)
	accepted = e.branch(t, issue, map[string]string{"a.txt": "second try\n"})
	return old, accepted
}

func TestAnOlderAttemptIsSuperseded(t *testing.T) {
	e := newEnv(t)
	old, accepted := olderAttempt(t, e, 50)
	out, err := e.pub.Push(context.Background(), e.job(50, accepted))
	if err != nil {
		t.Fatal(err)
	}
	tag := "queen-superseded/50/" + old[:12]
	if out.State != StatePROpened || out.Push != StateSuperseded || out.Superseded != old || out.Tag != "refs/tags/"+tag {
		t.Fatalf("outcome %+v", out)
	}
	if got := e.remote.Ref(t, "queen-50"); got != accepted {
		t.Fatalf("remote queen-50 at %s, want %s", got, accepted)
	}
	if got := e.remote.Ref(t, "refs/tags/"+tag); got != old {
		t.Fatalf("tag %s at %q, want the old tip %s", tag, got, old)
	}
	if len(e.gh.createdPRs()) != 1 {
		t.Fatal("want one PR")
	}
}

func TestANewerRemoteCommitIsNotReplaced(t *testing.T) {
	e := newEnv(t)
	accepted := e.branch(t, 51, map[string]string{"a.txt": "accepted\n"})
	e.remote.Work.Branch(t, "queen-51", "origin/master")
	theirs := e.remote.Work.CommitAt(t, "queen-51", map[string]string{"a.txt": "a person's fix\n"}, "fix",
		time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	e.remote.Work.Push(t, "queen-51")

	out, err := e.pub.Push(context.Background(), e.job(51, accepted))
	if err != nil {
		t.Fatal(err)
	}
	if out.State != StateRefused || out.Refusal.Kind != KindNotFastForward || !strings.Contains(out.Refusal.Reason, "not older") {
		t.Fatalf("outcome %+v %+v", out, out.Refusal)
	}
	if e.remote.Ref(t, "queen-51") != theirs || len(e.remote.Tags(t)) != 0 || len(e.gh.createdPRs()) != 0 {
		t.Fatal("the newer remote work was touched")
	}
}

func TestARemoteWithAnOpenPRIsLeftAlone(t *testing.T) {
	e := newEnv(t)
	old, accepted := olderAttempt(t, e, 52)
	e.gh.prs["queen-52"] = PRs{Open: 1, Numbers: []int{77}}
	out, err := e.pub.Push(context.Background(), e.job(52, accepted))
	if err != nil {
		t.Fatal(err)
	}
	if out.State != StateHasPR || out.PRNumber != 77 {
		t.Fatalf("outcome %+v", out)
	}
	if e.remote.Ref(t, "queen-52") != old || len(e.remote.Tags(t)) != 0 || len(e.gh.createdPRs()) != 0 {
		t.Fatal("the branch with an open PR was touched")
	}
}

// A GitHub read that failed is an outage: it decides nothing, so it comes
// back as a retryable error before any git work (no clone, no bundle, no
// push, no PR), whether the remote tip could be fast-forwarded or not.
func TestAFailedGitHubReadIsAnOutageBeforeAnyGitWork(t *testing.T) {
	for _, c := range []struct {
		name   string
		older  bool // the remote has an older attempt that is not an ancestor
		op     string
		breaks func(g *fakeGitHub)
	}{
		{"PR list, remote tip not an ancestor", true, "github BranchPRs", func(g *fakeGitHub) { g.prErr = errUnread }},
		{"PR list, fast-forward", false, "github BranchPRs", func(g *fakeGitHub) { g.prErr = errUnread }},
		{"branch head", true, "github BranchHead", func(g *fakeGitHub) { g.headErr = errUnread }},
		{"issue", false, "github Issue", func(g *fakeGitHub) { g.issueErr = errUnread }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var old, head string
			if c.older {
				old, head = olderAttempt(t, e, 53)
			} else {
				head = e.branch(t, 53, map[string]string{"a.txt": "a\n"})
			}
			e.gh.set(c.breaks)
			pushes := e.remote.Pushes()
			out, err := e.pub.Push(context.Background(), e.job(53, head))
			mustRetryable(t, err)
			if !strings.HasPrefix(err.Error(), c.op) {
				t.Fatalf("error %q, want it to name %s", err, c.op)
			}
			if out.State != "" || out.Refusal != nil {
				t.Fatalf("outcome %+v: a failed read decided something", out)
			}
			if e.cloned(t) || e.export.Requests("/queen/export/53") != 0 || e.remote.Pushes() != pushes ||
				e.remote.Ref(t, "queen-53") != old || len(e.remote.Tags(t)) != 0 || len(e.gh.createdPRs()) != 0 {
				t.Fatal("git work was done on a failed read")
			}

			// The read recovers: the retry publishes.
			e.gh.set(func(g *fakeGitHub) { g.prErr, g.headErr, g.issueErr = nil, nil, nil })
			out, err = e.pub.Push(context.Background(), e.job(53, head))
			if err != nil || out.State != StatePROpened || e.remote.Ref(t, "queen-53") != head {
				t.Fatalf("after recovery: %+v %v", out, err)
			}
		})
	}
}

func TestALeaseLostBetweenReadAndPushIsRetryable(t *testing.T) {
	e := newEnv(t)
	old, accepted := olderAttempt(t, e, 55)
	// Someone else's commit, on the remote already so SetRef can point at it.
	e.remote.Work.Branch(t, "elsewhere", "origin/master")
	other := e.remote.Work.Commit(t, "elsewhere", map[string]string{"b.txt": "b\n"}, "other")
	e.remote.Work.Push(t, "elsewhere")
	var once sync.Once
	e.remote.OnPush(func(int) { // the tag push: the branch moves before the lease push
		once.Do(func() { e.remote.SetRef(t, "queen-55", other) })
	})

	out, err := e.pub.Push(context.Background(), e.job(55, accepted))
	mustRetryable(t, err)
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("error %v, want ErrLeaseLost", err)
	}
	if out.State != "" || e.remote.Ref(t, "queen-55") != other {
		t.Fatalf("outcome %+v; remote at %s, want the other writer's %s", out, e.remote.Ref(t, "queen-55"), other)
	}
	if e.remote.Ref(t, "refs/tags/queen-superseded/55/"+old[:12]) != old {
		t.Fatal("the old tip was not kept before replacing")
	}
	if len(e.gh.createdPRs()) != 0 {
		t.Fatal("opened a PR after a lost lease")
	}
}

func TestABundleTimeoutIsRetryableAndNamesThePath(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 9, map[string]string{"a.txt": "a\n"})
	e.export.SlowIssue(9, 10*time.Second)
	e.client.BundleTimeout, e.client.Retries = 100*time.Millisecond, 1

	out, err := e.pub.Push(context.Background(), e.job(9, head))
	mustRetryable(t, err)
	msg := err.Error()
	if !strings.Contains(msg, "/queen/export/9") || strings.Contains(msg, exportToken) {
		t.Fatalf("error %q must name the path and not the token", msg)
	}
	if e.export.Requests("/queen/export/9") != 2 {
		t.Fatalf("%d attempts, want 2", e.export.Requests("/queen/export/9"))
	}
	if out.State != "" || e.remote.Ref(t, "queen-9") != "" {
		t.Fatal("a timed-out bundle decided something")
	}
}

func TestTheGitTokenNeverAppearsInErrors(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 10, map[string]string{"a.txt": "a\n"})
	const wrong = "ghs_WRONGtoken987654321"
	e.pub.Token = func(context.Context, string) (string, error) { return wrong, nil }
	_, err := e.pub.Push(context.Background(), e.job(10, head))
	mustRetryable(t, err)
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + wrong))
	if msg := err.Error(); strings.Contains(msg, wrong) || strings.Contains(msg, basic) || !strings.HasPrefix(msg, "git fetch") {
		t.Fatalf("error text %q", msg)
	}
	if logs := e.logs.String(); strings.Contains(logs, wrong) || strings.Contains(logs, basic) {
		t.Fatal("the token reached the logs")
	}
}

func TestTheExportTokenNeverAppearsInErrors(t *testing.T) {
	// A server that echoes the credential back in its error body.
	srv := newEchoServer(t)
	c, err := NewClient(srv+"/queen/export", exportToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Retries = 0
	_, err = c.Bundle(context.Background(), 3)
	if err == nil || strings.Contains(err.Error(), exportToken) || !strings.Contains(err.Error(), "GET /queen/export/3: status 500") {
		t.Fatalf("error %v", err)
	}
}

func TestDryRunPushesAndOpensNothing(t *testing.T) {
	e := newEnv(t)
	e.pub.DryRun = true
	fresh := e.branch(t, 60, map[string]string{"a.txt": "a\n"})
	old, accepted := olderAttempt(t, e, 61)
	refused := e.branch(t, 62, map[string]string{".github/workflows/x.yml": "x\n"})
	before := fmt.Sprint(e.remote.Refs(t, "refs/"))
	pushes := e.remote.Pushes()

	for _, c := range []struct {
		job   Job
		state State
		would string
	}{
		{e.job(60, fresh), StateDryRun, "push"},
		{e.job(61, accepted), StateDryRun, "supersede"},
		{e.job(62, refused), StateRefused, ""},
	} {
		out, err := e.pub.Push(context.Background(), c.job)
		if err != nil {
			t.Fatal(err)
		}
		if out.State != c.state || out.Would != c.would {
			t.Fatalf("issue %d: %+v, want %s %q", c.job.Issue, out, c.state, c.would)
		}
	}
	if e.remote.Pushes() != pushes || fmt.Sprint(e.remote.Refs(t, "refs/")) != before || len(e.gh.createdPRs()) != 0 {
		t.Fatal("a dry run changed the remote or opened a PR")
	}
	_ = old
}

func TestConcurrentIssuesShareOneCacheSafely(t *testing.T) {
	e := newEnv(t)
	heads := map[int64]string{}
	for i := int64(70); i < 76; i++ {
		heads[i] = e.branch(t, i, map[string]string{fmt.Sprintf("src/%d.rs", i): "x\n"})
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(heads))
	for issue, head := range heads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.pub.Push(context.Background(), e.job(issue, head))
			if err == nil && out.State != StatePROpened {
				err = fmt.Errorf("#%d: %+v", issue, out)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for issue, head := range heads {
		if got := e.remote.Ref(t, fmt.Sprintf("queen-%d", issue)); got != head {
			t.Fatalf("queen-%d at %q, want %s", issue, got, head)
		}
	}
	if n := len(e.gh.createdPRs()); n != len(heads) {
		t.Fatalf("%d PRs, want %d", n, len(heads))
	}
	if refs := e.importRefs(t); refs != "" {
		t.Fatalf("private refs left: %s", refs)
	}
}

func TestAJobNamingNoRepositoryIsAnError(t *testing.T) {
	e := newEnv(t)
	for _, j := range []Job{{Repo: "../x", Issue: 1}, {Repo: "a/b", Issue: 0}} {
		if _, err := e.pub.Push(context.Background(), j); err == nil || IsRetryable(err) {
			t.Fatalf("job %+v: %v", j, err)
		}
	}
	_ = http.StatusOK
}

// A worker killed mid-push leaves its private refs in the cache; the next
// task on that repository clears them.
func TestAKilledTasksPrivateRefsAreClearedByTheNext(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 6, map[string]string{"a/one.txt": "1\n"})
	if _, err := e.pub.Push(context.Background(), e.job(6, head)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.cache, filepath.FromSlash(e.remote.Repo)+".git")
	stale := "refs/queen-import/0123456789abcdef/queen-6"
	cmd := exec.Command("git", "--git-dir="+dir, "update-ref", stale, head)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plant a stale ref: %v: %s", err, out)
	}
	if refs := e.importRefs(t); !strings.Contains(refs, stale) {
		t.Fatalf("the stale ref was not planted: %q", refs)
	}
	next := e.branch(t, 7, map[string]string{"b/two.txt": "2\n"})
	if _, err := e.pub.Push(context.Background(), e.job(7, next)); err != nil {
		t.Fatal(err)
	}
	if refs := e.importRefs(t); refs != "" {
		t.Fatalf("private refs left after the next task: %s", refs)
	}
}

// GitHub answers that a PR already exists (one opened meanwhile): its
// number comes from a fresh read of the list. A read that fails, or one
// that shows no open PR yet, is an outage: never pr_opened with PR #0.
func TestAnExistingPRIsLookedUpNeverRecordedAsZero(t *testing.T) {
	exists := fmt.Errorf("422 validation failed: %w", ErrPRExists)
	for _, c := range []struct {
		name   string
		listed func(g *fakeGitHub) // what the list shows after the 422
		want   int                 // 0: a retryable error
	}{
		{"lookup fails", func(g *fakeGitHub) { g.prErr = errUnread }, 0},
		{"lookup shows none open yet", func(g *fakeGitHub) {}, 0},
		{"lookup finds it", func(g *fakeGitHub) { g.prs["queen-56"] = PRs{Open: 1, Numbers: []int{88}} }, 88},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			head := e.branch(t, 56, map[string]string{"a.txt": "a\n"})
			e.gh.onCreate = func(g *fakeGitHub) error {
				g.onCreate = nil
				c.listed(g)
				return exists
			}
			out, err := e.pub.Push(context.Background(), e.job(56, head))
			if c.want == 0 {
				mustRetryable(t, err)
				if out.State == StatePROpened || out.PRNumber != 0 {
					t.Fatalf("outcome %+v: recorded as opened without its number", out)
				}
				if out.State != StatePushed || e.remote.Ref(t, "queen-56") != head {
					t.Fatalf("outcome %+v: the push that happened is still reported", out)
				}
				return
			}
			if err != nil || out.State != StatePROpened || out.PRNumber != c.want {
				t.Fatalf("outcome %+v %v, want pr_opened #%d", out, err, c.want)
			}
		})
	}
}

// git prints what a remote answered on its stderr: here a remote that
// quotes the credential it was sent. Wherever git's output is cut, no
// piece of the token or of the header carrying it reaches the error.
func TestGitsStderrNeverCarriesTheCredential(t *testing.T) {
	e := newEnv(t)
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + gitToken))
	ctx := context.Background()
	for pad := 0; pad <= 480; pad += 6 {
		e.remote.EchoCredential(pad)
		r, release, err := e.pub.Git.open(ctx, e.remote.Repo, gitToken)
		if err != nil {
			t.Fatal(err)
		}
		ferr := r.fetch(ctx, "+refs/heads/master:"+r.ref("master"))
		release()
		mustRetryable(t, ferr)
		msg := ferr.Error()
		if !strings.HasPrefix(msg, "git fetch") || !strings.Contains(msg, "403") {
			t.Fatalf("error %q: want git's reason kept", msg)
		}
		if l := leak(msg, gitToken, basic); l != "" {
			t.Fatalf("padding %d: error %q holds %q of the credential", pad, msg, l)
		}
	}

	// Through the publisher, and its logs, too.
	e.remote.EchoCredential(120)
	head := e.branch(t, 57, map[string]string{"a.txt": "a\n"})
	_, err := e.pub.Push(ctx, e.job(57, head))
	mustRetryable(t, err)
	if l := leak(err.Error()+e.logs.String(), gitToken, basic); l != "" {
		t.Fatalf("error %q or the logs hold %q of the credential", err, l)
	}
}

// The remote refuses the tag that keeps the old tip: the branch is never
// replaced, since that would destroy the only copy of the remote's work.
func TestARefusedTagPushNeverReplacesTheBranch(t *testing.T) {
	e := newEnv(t)
	old, accepted := olderAttempt(t, e, 58)
	e.remote.RefuseRefs(t, "refs/tags/queen-superseded/")
	pushes := e.remote.Pushes()
	out, err := e.pub.Push(context.Background(), e.job(58, accepted))
	if err == nil || IsRetryable(err) || !strings.Contains(err.Error(), "refs/tags/queen-superseded/58/"+old[:12]) {
		t.Fatalf("error %v: want a failure naming the tag, not an outage to wait out", err)
	}
	if out.State != "" || out.PushedHead != "" {
		t.Fatalf("outcome %+v: nothing was published", out)
	}
	if e.remote.Ref(t, "queen-58") != old || len(e.remote.Tags(t)) != 0 {
		t.Fatalf("queen-58 at %s, tags %v: the old tip %s was not kept", e.remote.Ref(t, "queen-58"), e.remote.Tags(t), old)
	}
	if n := e.remote.Pushes() - pushes; n != 1 {
		t.Fatalf("%d pushes reached the remote, want only the refused tag", n)
	}
	if len(e.gh.createdPRs()) != 0 {
		t.Fatal("a PR was opened")
	}

	// The protection lifted: the old tip is kept, then replaced.
	e.remote.RefuseRefs(t, "")
	out, err = e.pub.Push(context.Background(), e.job(58, accepted))
	if err != nil || out.State != StatePROpened || out.Push != StateSuperseded || e.remote.Ref(t, "refs/tags/queen-superseded/58/"+old[:12]) != old {
		t.Fatalf("after the protection: %+v %v", out, err)
	}
}

// has_pr records the PR that stopped the push, not the lowest number on the
// branch: on a re-dispatched issue that is an earlier attempt's closed PR.
func TestHasPRRecordsTheAttemptsPRNotAnEarlierOne(t *testing.T) {
	e := newEnv(t)
	old, accepted := olderAttempt(t, e, 53)
	created := time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)
	listed := []dispatch.PR{
		{Number: 24, State: "closed", HeadSHA: old, CreatedAt: created},
		{Number: 77, State: "open", HeadSHA: old, CreatedAt: created},
	}
	e.gh.prs["queen-53"] = dispatch.Attempt{}.Count(PRs{Read: true, Listed: listed})
	out, err := e.pub.Push(context.Background(), e.job(53, accepted))
	if err != nil {
		t.Fatal(err)
	}
	if out.State != StateHasPR || out.PRNumber != 77 {
		t.Fatalf("outcome %+v, want has_pr naming #77, the open PR, not the earlier attempt's #24", out)
	}
}
