package export

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/gittest"
)

// fakeGit puts a git first on PATH that runs body (sh) instead of git for
// a command naming sub (e.g. "merge-tree") and is the real git otherwise;
// body may call "$REAL_GIT".
func fakeGit(t *testing.T, sub, body string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is required: %v", err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nREAL_GIT=%q\nfor a in \"$@\"; do\n  if [ \"$a\" = %q ]; then\n%s\n  fi\ndone\nexec \"$REAL_GIT\" \"$@\"\n", real, sub, body)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// A git merge-tree that fails in any way but git's documented conflict
// (exit 1, the merged tree's id, then the conflicted files) is an error of
// our own, retried, never the refusal conflicts: a git killed by the
// kernel, a full disk, a git too old for --write-tree, an exit 1 with
// nothing on stdout (git 2.39 answers so for a name it cannot resolve), a
// git that printed a conflict's lines but exited 128.
// Once git works again the branch is published.
func TestOnlyARealConflictIsRefused(t *testing.T) {
	for _, c := range []struct {
		name, body, says string
	}{
		{"killed", `    kill -KILL $$`, "signal: killed"},
		{"disk full", `    echo "fatal: unable to write loose object file: No space left on device" >&2; exit 128`, "No space left on device"},
		{"too old", "    echo \"error: unknown option 'write-tree'\" >&2; echo \"usage: git merge-tree <base-tree> <branch1> <branch2>\" >&2; exit 129", "usage: git merge-tree"},
		{"exit 1 without a conflict", `    echo "merge-tree: master - not something we can merge" >&2; exit 1`, "not something we can merge"},
		{"exit 1 without a tree", `    echo "README.md"; exit 1`, "exit status 1"},
		{"a conflict's output, exit 128", `    echo 4b825dc642cb6eb9a060e54bf8d69288fbee4904; echo README.md; exit 128`, "exit status 128"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			head := e.branch(t, 90, map[string]string{"src/a.rs": "fn a() {}\n"})
			fakeGit(t, "merge-tree", c.body)
			pushes := e.remote.Pushes()
			out, err := e.pub.Push(context.Background(), e.job(90, head))
			mustRetryable(t, err)
			if !strings.Contains(err.Error(), "git merge-tree") || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %q: want git merge-tree's failure, saying %q", err, c.says)
			}
			if out.State != "" || out.Refusal != nil {
				t.Fatalf("outcome %+v: a failed merge-tree decided something", out)
			}
			if e.remote.Pushes() != pushes || e.remote.Ref(t, "queen-90") != "" || len(e.gh.createdPRs()) != 0 {
				t.Fatal("something was pushed or opened on a failed merge-tree")
			}
			if refs := e.importRefs(t); refs != "" {
				t.Fatalf("private refs left: %s", refs)
			}

			t.Setenv("PATH", strings.SplitN(os.Getenv("PATH"), string(os.PathListSeparator), 2)[1])
			out, err = e.pub.Push(context.Background(), e.job(90, head))
			if err != nil || out.State != StatePROpened || e.remote.Ref(t, "queen-90") != head {
				t.Fatalf("with git working again: %+v %v, want pr_opened", out, err)
			}
		})
	}
}

// A cache whose object store lost an object merge-tree needs (a blob both
// sides changed): real git fails, and that is an error to retry, not a
// conflict. With the object back the branch is published.
func TestACorruptCacheIsNotAConflict(t *testing.T) {
	e := newEnv(t)
	lines := []string{"one", "two", "three", "four", "five", "six", "seven"}
	readme := func(first, last string) string {
		l := append([]string{first}, lines[1:6]...)
		return strings.Join(append(l, last), "\n") + "\n"
	}
	e.remote.Work.Commit(t, "master", map[string]string{"README.md": readme("one", "seven")}, "a longer readme")
	e.remote.Work.Push(t, "master")
	e.work.Git(t, "fetch", "--quiet", "origin")
	head := e.branch(t, 91, map[string]string{"README.md": readme("ONE", "seven")})
	e.remote.Work.Commit(t, "master", map[string]string{"README.md": readme("one", "SEVEN")}, "the end of the readme")
	e.remote.Work.Push(t, "master")
	blob := e.remote.Work.Git(t, "rev-parse", "master:README.md")

	// Another branch fills the cache with master as it is now.
	other := e.branch(t, 92, map[string]string{"src/b.rs": "fn b() {}\n"})
	if out, err := e.pub.Push(context.Background(), e.job(92, other)); err != nil || out.State != StatePROpened {
		t.Fatalf("#92: %+v %v", out, err)
	}
	obj := filepath.Join(e.cache, filepath.FromSlash(e.remote.Repo)+".git", "objects", blob[:2], blob[2:])
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatalf("master's README is not a loose object of the cache: %v", err)
	}
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}

	pushes := e.remote.Pushes()
	out, err := e.pub.Push(context.Background(), e.job(91, head))
	mustRetryable(t, err)
	if !strings.Contains(err.Error(), "git merge-tree") || out.State != "" || out.Refusal != nil {
		t.Fatalf("outcome %+v, error %v: want git merge-tree's failure, nothing decided", out, err)
	}
	if e.remote.Pushes() != pushes || e.remote.Ref(t, "queen-91") != "" {
		t.Fatal("a branch was pushed on a failed merge-tree")
	}

	if err := os.WriteFile(obj, data, 0o444); err != nil {
		t.Fatal(err)
	}
	out, err = e.pub.Push(context.Background(), e.job(91, head))
	if err != nil || out.State != StatePROpened || e.remote.Ref(t, "queen-91") != head {
		t.Fatalf("with the object back: %+v %v, want pr_opened", out, err)
	}
}

// A git bundle verify killed before it answered (the kernel's OOM killer)
// decided nothing about the bundle: an error to retry, not bad-bundle.
func TestAKilledBundleVerifyIsNotABadBundle(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 93, map[string]string{"src/a.rs": "fn a() {}\n"})
	fakeGit(t, "verify", `    kill -KILL $$`)
	out, err := e.pub.Push(context.Background(), e.job(93, head))
	mustRetryable(t, err)
	if !strings.Contains(err.Error(), "git bundle") || out.State != "" || out.Refusal != nil {
		t.Fatalf("outcome %+v, error %v: want git bundle's failure, nothing decided", out, err)
	}
}

// countObjects reads git count-objects -v of the cache's clone.
func (e *env) countObjects(t testing.TB) (loose, packs int) {
	t.Helper()
	cmd := exec.Command("git", "--git-dir="+filepath.Join(e.cache, filepath.FromSlash(e.remote.Repo)+".git"), "count-objects", "-v")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return countObjects(string(out))
}

// inCache reports whether the cache's clone holds object sha.
func (e *env) inCache(t testing.TB, sha string) bool {
	t.Helper()
	cmd := exec.Command("git", "--git-dir="+filepath.Join(e.cache, filepath.FromSlash(e.remote.Repo)+".git"), "cat-file", "-e", sha)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	return cmd.Run() == nil
}

// Each task's imported objects are unreachable once its private refs are
// gone; past the bound the clone is collected: what earlier tasks imported
// is dropped, master's history is kept (packed), and later pushes work.
func TestTheCacheIsCollectedPastItsBound(t *testing.T) {
	e := newEnv(t)
	e.pub.Git.GCLoose, e.pub.Git.GCPacks = 12, 3
	var heads []string
	for i := int64(1); i <= 8; i++ {
		head := e.branch(t, 100+i, map[string]string{fmt.Sprintf("src/m%d/a.rs", i): fmt.Sprintf("fn m%d() {}\n", i)})
		out, err := e.pub.Push(context.Background(), e.job(100+i, head))
		if err != nil || out.State != StatePROpened {
			t.Fatalf("#%d: %+v %v", 100+i, out, err)
		}
		heads = append(heads, head)
		if loose, packs := e.countObjects(t); loose > e.pub.Git.GCLoose || packs > e.pub.Git.GCPacks {
			t.Fatalf("after #%d the cache holds %d loose objects and %d packs, over its bound of %d and %d",
				100+i, loose, packs, e.pub.Git.GCLoose, e.pub.Git.GCPacks)
		}
	}
	if e.inCache(t, heads[0]) {
		t.Fatalf("the first task's import %s is still in the cache: never collected", heads[0])
	}
	if master := e.remote.Ref(t, "master"); !e.inCache(t, master) {
		t.Fatalf("master %s was collected", master)
	}
}

// A task killed while importing leaves its bundle file behind: the next
// task on the repository deletes it, as it does the task's private refs.
func TestALeftoverBundleFileIsDeleted(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 110, map[string]string{"src/a.rs": "fn a() {}\n"})
	if out, err := e.pub.Push(context.Background(), e.job(110, head)); err != nil || out.State != StatePROpened {
		t.Fatalf("#110: %+v %v", out, err)
	}
	dir := filepath.Join(e.cache, filepath.FromSlash(e.remote.Repo)+".git")
	left := []string{filepath.Join(dir, "queen-bundle-123.bundle"), filepath.Join(e.cache, "bundle-456.bundle")}
	for _, f := range left {
		if err := os.WriteFile(f, []byte("a killed task's bundle"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	head = e.branch(t, 111, map[string]string{"src/b.rs": "fn b() {}\n"})
	if out, err := e.pub.Push(context.Background(), e.job(111, head)); err != nil || out.State != StatePROpened {
		t.Fatalf("#111: %+v %v", out, err)
	}
	for _, f := range left {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", f, err)
		}
	}
}

// A dry run asks git merge-base --is-ancestor whether the remote tip is an
// ancestor: only its answer "no" (exit 1) counts. A git that failed
// otherwise is an error to retry, never a not-fast-forward refusal of a
// branch that fast-forwards.
func TestADryRunsFailedAncestorReadIsNotARefusal(t *testing.T) {
	e := newEnv(t)
	e.pub.DryRun = true
	e.remote.Work.Branch(t, "queen-65", "origin/master")
	tip := e.remote.Work.CommitAt(t, "queen-65", map[string]string{"a.txt": "first\n"}, "attempt 1", gittest.Epoch)
	e.remote.Work.Push(t, "queen-65")
	e.work.Git(t, "fetch", "--quiet", "origin")
	e.work.Branch(t, "queen-65", tip)
	// Committed before the tip: MaySupersede would keep the tip, so only
	// the ancestry read stands between this fast-forward and a refusal.
	head := e.work.CommitAt(t, "queen-65", map[string]string{"a.txt": "second\n"}, "attempt 2", gittest.Epoch.Add(-time.Hour))
	fakeGit(t, "--is-ancestor", `    echo "fatal: unable to read tree" >&2; exit 128`)
	out, err := e.pub.Push(context.Background(), e.job(65, head))
	mustRetryable(t, err)
	if out.State != "" || out.Refusal != nil || !strings.Contains(err.Error(), "git merge-base") {
		t.Fatalf("outcome %+v, error %v: want git merge-base's failure, nothing decided", out, err)
	}

	t.Setenv("PATH", strings.SplitN(os.Getenv("PATH"), string(os.PathListSeparator), 2)[1])
	out, err = e.pub.Push(context.Background(), e.job(65, head))
	if err != nil || out.State != StateDryRun || out.Would != "push" {
		t.Fatalf("with git working: %+v %v, want a dry run that would push", out, err)
	}
}
