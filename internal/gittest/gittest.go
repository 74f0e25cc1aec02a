// Package gittest adapts the git parts of internal/sandbox to tests: real
// repositories served over smart HTTP (git http-backend behind a token
// check) and the Queen's export API built on real bundles, with helpers
// that fail the test instead of returning errors and folders the test's
// cleanup removes.
package gittest

import (
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/sandbox"
)

// Epoch is the committer time of the first commit a Work makes; each
// further commit is one minute later unless CommitAt names its time.
var Epoch = sandbox.Epoch

// Work is a non-bare repository to make commits in.
type Work struct{ *sandbox.Work }

// WorkOf adapts a sandbox repository.
func WorkOf(w *sandbox.Work) *Work { return &Work{w} }

// NewWork is a new repository whose master has one commit.
func NewWork(t testing.TB) *Work {
	t.Helper()
	w, err := sandbox.InitWork(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return WorkOf(w)
}

// Git runs git in the work tree and returns its trimmed stdout; a failure
// fails the test.
func (w *Work) Git(t testing.TB, args ...string) string {
	t.Helper()
	out, err := w.Work.Git(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryGit runs git and returns its error with stderr.
func (w *Work) TryGit(args ...string) (string, error) { return w.Work.Git(args...) }

// Branch points branch at from (a ref or commit), creating or moving it.
func (w *Work) Branch(t testing.TB, branch, from string) {
	t.Helper()
	if err := w.Work.Branch(branch, from); err != nil {
		t.Fatal(err)
	}
}

// Commit writes files on branch (created from HEAD when missing) and
// commits them; an empty content deletes the file. It returns the commit.
func (w *Work) Commit(t testing.TB, branch string, files map[string]string, msg string) string {
	t.Helper()
	sha, err := w.Work.Commit(branch, files, msg)
	if err != nil {
		t.Fatalf("commit on %s: %v", branch, err)
	}
	return sha
}

// CommitAt is Commit with the author and committer time when.
func (w *Work) CommitAt(t testing.TB, branch string, files map[string]string, msg string, when time.Time) string {
	t.Helper()
	sha, err := w.Work.CommitAt(branch, files, msg, when)
	if err != nil {
		t.Fatalf("commit on %s: %v", branch, err)
	}
	return sha
}

// Rev is the commit ref names, "" when it names none.
func (w *Work) Rev(t testing.TB, ref string) string {
	t.Helper()
	return w.Work.Rev(ref)
}

// Push pushes refspecs to origin and fails the test when git refuses.
func (w *Work) Push(t testing.TB, refspecs ...string) {
	t.Helper()
	if err := w.Work.Push(refspecs...); err != nil {
		t.Fatal(err)
	}
}

// Remote is a bare repository served over smart HTTP by git http-backend,
// answering 401 to any request without the token (as a Basic password or a
// Bearer header).
type Remote struct {
	*sandbox.Remote
	// Work is a clone with master checked out, pushing with the token.
	Work *Work
}

// RemoteOf adapts a sandbox remote.
func RemoteOf(r *sandbox.Remote) *Remote { return &Remote{Remote: r, Work: WorkOf(r.Work)} }

// NewRemote serves a new repository "queen/t27" whose master has one
// commit, and stops it when the test ends.
func NewRemote(t testing.TB, token string) *Remote {
	t.Helper()
	r, err := sandbox.NewRemote(t.TempDir(), sandbox.RemoteConfig{Repo: "queen/t27", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return RemoteOf(r)
}

// RefuseRefs declines pushes of refs starting with prefix; "" stops it.
func (r *Remote) RefuseRefs(t testing.TB, prefix string) {
	t.Helper()
	if err := r.Remote.RefuseRefs(prefix); err != nil {
		t.Fatal(err)
	}
}

// Clone is a new work clone of the repository (an empty one gets master
// on its first commit), with origin reachable using the token.
func (r *Remote) Clone(t testing.TB) *Work {
	t.Helper()
	w, err := r.Remote.Clone(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return WorkOf(w)
}

// Ref is the commit refs/heads/name (or the full ref name) points at on
// the remote, "" when there is none.
func (r *Remote) Ref(t testing.TB, name string) string {
	t.Helper()
	return r.Remote.Ref(name)
}

// Refs lists every ref of the remote under prefix (e.g. "refs/heads/").
func (r *Remote) Refs(t testing.TB, prefix string) map[string]string {
	t.Helper()
	refs, err := r.Remote.Refs(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// Tags lists the remote's tag names (without refs/tags/), sorted.
func (r *Remote) Tags(t testing.TB) []string {
	t.Helper()
	tags, err := r.Remote.Tags()
	if err != nil {
		t.Fatal(err)
	}
	return tags
}

// SetRef moves a ref on the remote directly, as someone else's push would.
func (r *Remote) SetRef(t testing.TB, name, sha string) {
	t.Helper()
	if err := r.Remote.SetRef(name, sha); err != nil {
		t.Fatal(err)
	}
}

// Export fakes the Queen's export API over a real work repository; see
// sandbox.Export.
type Export struct {
	*sandbox.Export
	Work *Work
}

// ExportOf adapts a sandbox export.
func ExportOf(e *sandbox.Export) *Export { return &Export{Export: e, Work: WorkOf(e.Work)} }

// NewExport serves work's branches until the test ends; work is usually a
// Remote's Clone, so that bundles are relative to history the remote has.
func NewExport(t testing.TB, token string, work *Work) *Export {
	t.Helper()
	e, err := sandbox.NewExport(token, work.Work)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return ExportOf(e)
}

// Stored makes GET {URL}/{issue} answer the stored fallback form (runner,
// at, no commit or file lists) even when the branch is gone from Work.
func (e *Export) Stored(t testing.TB, issue int64, runner string) {
	t.Helper()
	if err := e.Export.Stored(issue, runner); err != nil {
		t.Fatal(err)
	}
}
