package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// gitFault puts a git first on the worker's PATH that fails every git
// merge-tree as a full disk does while the file it returns exists, and is
// the real git otherwise.
func (x *exStack) gitFault() (flag string) {
	x.t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		x.t.Fatalf("git is required: %v", err)
	}
	dir := x.t.TempDir()
	flag = filepath.Join(dir, "disk-full")
	script := fmt.Sprintf(`#!/bin/sh
for a in "$@"; do
  if [ "$a" = merge-tree ] && [ -e %q ]; then
    echo "fatal: unable to write loose object file: No space left on device" >&2
    exit 128
  fi
done
exec %q "$@"
`, flag, real)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		x.t.Fatal(err)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		x.t.Fatal(err)
	}
	x.workerEnv["PATH"] = dir + string(os.PathListSeparator) + os.Getenv("PATH")
	return flag
}

// A git merge-tree that fails for a reason of our own (the disk full) is
// an outage: the row waits retrying through several sweeps, never refused
// conflicts, nothing pushed, no task archived; once git works again the
// branch is published.
func TestExportGitFailureRetriesThenPublishes(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.webhook()
	flag := x.gitFault()
	head := x.branch(95, map[string]string{"src/s95.rs": "fn a() {}\n"})
	x.accept(95, head, nil)
	pushes0 := x.remote.Pushes()
	x.startWorker()

	x.waitStates("retrying", 95)
	if st := x.exports()[95]; !strings.Contains(st.LastError, "git merge-tree") || !strings.Contains(st.LastError, "No space left on device") || st.Refusal != "" {
		t.Fatalf("export state %+v, want retrying on git merge-tree's failure", st)
	}
	listings := x.exp.Requests("/queen/export")
	eventually(t, exLimit, "three more sweeps and retries", func() bool {
		x.runRetries()
		return x.exp.Requests("/queen/export") >= listings+3
	})
	lines, _ := x.status()
	if l := lines[repo+"#95"]; !strings.Contains(l, " retrying ") || strings.Contains(l, "conflicts") {
		t.Fatalf("queenctl export status: %q, want retrying", l)
	}
	for _, h := range x.history(95) {
		if h.Decision == "refused" {
			t.Fatal("the row was refused on a failed git merge-tree")
		}
	}
	if x.remote.Pushes() != pushes0 || x.remote.Ref(t, "queen-95") != "" || len(x.gh.PRs(repo)) != 0 {
		t.Fatal("something was pushed or opened on a failed git merge-tree")
	}

	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	eventually(t, exLimit, "#95 to publish once git works", func() bool {
		x.runRetries()
		return x.state(95) == "pr_opened"
	})
	x.checkPublished(map[int64]string{95: head})
	if a := x.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived: %s", len(a), a[0].LastErr)
	}
}

// GitHub refuses the PR for good: queenctl export status shows the row
// refused with GitHub's words, later sweeps spend no PR creation on it,
// and a person's queenctl export push publishes it once GitHub takes it.
func TestExportPRGitHubRefusesIsShownAndNotRetried(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.webhook()
	head := x.branch(96, map[string]string{"src/s96.rs": "fn a() {}\n"})
	x.gh.RefusePRs("queen-96", map[string]any{"resource": "PullRequest", "code": "custom", "message": "No commits between master and queen-96"})
	x.accept(96, head, nil)
	x.startWorker()

	x.waitStates("refused", 96)
	creations := x.gh.Count(githubtest.RouteCreatePull)
	listings := x.exp.Requests("/queen/export")
	eventually(t, exLimit, "three more sweeps", func() bool { return x.exp.Requests("/queen/export") >= listings+3 })
	if n := x.gh.Count(githubtest.RouteCreatePull); n != creations || n != 1 {
		t.Fatalf("%d PR creations after the refusal (%d before the sweeps), want the one refused", n, creations)
	}
	lines, rows := x.status()
	want := "refused " + exShort(head) + " - 1 pr-refused: GitHub answered 422 Validation Failed: No commits between master and queen-96 -"
	if l := lines[repo+"#96"]; !strings.Contains(l, want) {
		t.Fatalf("queenctl export status: %q, want %q", l, want)
	}
	if st := rows[96].Export; st == nil || st.PushedHead != head || !strings.HasPrefix(st.Refusal, "pr-refused: ") {
		t.Fatalf("queenctl export status --json: %+v", st)
	}

	x.gh.ClearFaults()
	if code, out, errOut := x.ctl("export", "push", fmt.Sprintf("%s#96", repo)); code != 0 {
		t.Fatalf("queenctl export push: exit %d: %s%s", code, out, errOut)
	}
	x.waitStates("pr_opened", 96)
	x.checkPublished(map[int64]string{96: head})
}
