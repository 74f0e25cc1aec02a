package worker

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/testkit"
)

// exportEntries counts the row's history entries written by export:push.
func (e *env) exportEntries(issue int64) int {
	e.t.Helper()
	hist, err := e.ledger.History(e.ctx, repo, issue, 50)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, h := range hist {
		if h.Action == ledger.ActionExport {
			n++
		}
	}
	return n
}

// During an outage every waiting attempt finds the row's export state
// unchanged and writes nothing: one version and one audit entry for the
// whole outage, so a person's --version override stays good.
func TestExportOutageWritesTheRowOnce(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(14, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.exp.Fail(http.StatusServiceUnavailable, -1)
	attempt := func() {
		t.Helper()
		if err := e.w.ExportPush(e.ctx, pushTask(t, 14, head)); !isWait(err) {
			t.Fatalf("export down: %v, want a wait", err)
		}
	}
	attempt()
	first := e.get(14)
	if st := first.Export; st == nil || st.State != StateRetrying || st.Attempts != 1 || !strings.Contains(st.LastError, "503") {
		t.Fatalf("export state %+v, want the first failed attempt recorded", st)
	}
	for i := 0; i < 4; i++ {
		attempt()
	}
	if rec := e.get(14); rec.Version != first.Version || e.exportEntries(14) != 1 {
		t.Fatalf("after 5 waiting attempts: version %d→%d, %d export entries; want the first record only",
			first.Version, rec.Version, e.exportEntries(14))
	}
	// A person decided on the version they read before those attempts.
	freed, err := e.ledger.Free(e.ctx, repo, 14, audit.Manual("queenctl", "the bee is gone"), first.Version)
	if err != nil {
		t.Fatalf("free --version %d during the outage: %v", first.Version, err)
	}
	for i := 0; i < 3; i++ {
		attempt()
	}
	if _, err := e.ledger.Keep(e.ctx, repo, 14, audit.Manual("queenctl", "still wanted"), freed.Row.Version); err != nil {
		t.Fatalf("keep --version %d during the outage: %v", freed.Row.Version, err)
	}
	if n := e.exportEntries(14); n != 1 {
		t.Fatalf("%d export entries during the outage, want 1", n)
	}

	e.exp.Fail(0, 0)
	if err := e.w.ExportPush(e.ctx, pushTask(t, 14, head)); err != nil {
		t.Fatal(err)
	}
	e.checkPublished(map[int64]string{14: head})
	if st := e.get(14).Export; st.Attempts != 2 || e.exportEntries(14) != 2 {
		t.Fatalf("export state %+v, %d entries: want the outage and the publication", st, e.exportEntries(14))
	}
}

// A failed row (an error a retry cannot fix: here the remote declines the
// tag that keeps the old tip) is re-queued by the sweep only after a
// backoff from its failure, which grows with its attempts.
func TestExportFailedRowBacksOffAcrossSweeps(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC))
	e := newEnv(t, options{export: true, clock: clock})
	e.olderAttempt(15)
	head := e.accepted(15, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.remote.RefuseRefs(t, "refs/tags/queen-superseded/")

	fail := func(attempts int) {
		t.Helper()
		if err := e.w.ExportPush(e.ctx, pushTask(t, 15, head)); err == nil || isWait(err) {
			t.Fatalf("declined tag: %v, want a failure", err)
		}
		st := e.get(15).Export
		if st == nil || st.State != StateFailed || st.Attempts != attempts || st.At == nil || !st.At.Equal(clock.Now()) {
			t.Fatalf("export state %+v, want failed (attempt %d) at %s", st, attempts, clock.Now())
		}
	}
	sweep := func(want int) {
		t.Helper()
		rep := e.exportSweep()
		if rep.Enqueued+rep.Queued != want || rep.Backoff != 1-want {
			t.Fatalf("sweep at %s: %+v, want %d enqueued", clock.Now(), rep, want)
		}
	}
	fail(1)
	sweep(0)
	clock.Add(FailedBackoff - time.Second)
	sweep(0)
	clock.Add(time.Second)
	sweep(1)

	// The next failure waits twice as long.
	if _, err := e.insp.DeleteAllPendingTasks("default"); err != nil {
		t.Fatal(err)
	}
	fail(2)
	clock.Add(FailedBackoff)
	sweep(0)
	clock.Add(FailedBackoff)
	sweep(1)

	// A person's push does not wait for the backoff.
	e.remote.RefuseRefs(t, "")
	e.pushManually(15, head)
	if st := e.get(15).Export; st.State != string(export.StatePROpened) || st.At != nil {
		t.Fatalf("after the manual push: %+v", st)
	}
}

// An outcome is recorded only on the dispatch it was published for, and
// only while that row is still accepted at the head: a row that moved in
// between (the Queen's write landing while the PR was being opened) keeps
// what the Queen wrote.
func TestExportOutcomeNotRecordedOnARowThatMoved(t *testing.T) {
	for _, c := range []struct {
		name  string
		patch map[string]any
	}{
		{"a new dispatch", map[string]any{"dispatched_at": "2026-10-12T08:00:00Z"}},
		{"no longer accepted", map[string]any{"review_state": "sendBack"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, options{export: true})
			head := e.accepted(16, map[string]string{"src/a.rs": "fn a() {}\n"})
			patch := map[string]json.RawMessage{}
			for k, v := range c.patch {
				b, _ := json.Marshal(v)
				patch[k] = b
			}
			e.pushUpsertingAtPRCreation(t, 16, head, patch)
			if st := e.get(16).Export; st != nil {
				t.Fatalf("export state %+v recorded on a row that moved on", st)
			}
			if n := e.exportEntries(16); n != 0 {
				t.Fatalf("%d export entries, want none", n)
			}
		})
	}
}

// A remote that declines the branch push itself (a protected branch) is a
// failure recorded and backed off from, never an outage waited on forever.
func TestExportDeclinedBranchPushFails(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(16, map[string]string{"src/b.rs": "fn b() {}\n"})
	e.remote.RefuseRefs(t, "refs/heads/queen-")
	err := e.w.ExportPush(e.ctx, pushTask(t, 16, head))
	if err == nil || isWait(err) {
		t.Fatalf("declined branch push: %v, want a failure", err)
	}
	if st := e.get(16).Export; st == nil || st.State != StateFailed || !strings.Contains(st.LastError, "declined") {
		t.Fatalf("export state %+v, want failed naming the refusal", st)
	}
	if e.remote.Ref(t, "queen-16") != "" {
		t.Fatal("the declined branch reached the remote")
	}
}
