package ledger

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

const repo = "hive/t27"

func TestReopenedPRUnfreesAcceptFree(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, repo, 7, accepted)

	res, err := f.l.RecordPRs(f.ctx, repo, 7, prs(0, 0, 1), audit.Webhook("d-close"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != DecisionFree || res.Row.Freed == nil || res.Row.Freed.Rule != dispatch.RuleAccept || res.Row.Freed.Delivery != "d-close" {
		t.Fatalf("closed-unmerged PR: outcome %q freed %+v; want free by accept_claim from d-close", res.Outcome, res.Row.Freed)
	}
	v := f.get(t, repo, 7).View(t0)
	if v.Live || v.ClaimsIssue || v.Stage != "done" || v.HoldsFiles || *v.AcceptClaim != "free" {
		t.Fatalf("freed view: %+v", v)
	}

	res, err = f.l.RecordPRs(f.ctx, repo, 7, prs(1, 0, 1), audit.Webhook("d-reopen"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != DecisionUnfree || res.Row.Freed != nil {
		t.Fatalf("reopened PR: outcome %q freed %+v; want unfree", res.Outcome, res.Row.Freed)
	}
	if v := f.get(t, repo, 7).View(t0); !v.Live || !v.ClaimsIssue || v.Claim != "accepted" {
		t.Fatalf("unfreed view: %+v", v)
	}
	h := f.history(t, repo, 7)
	if h[0].Decision != DecisionUnfree || h[0].Rule != dispatch.RuleAccept || h[0].Source != audit.Webhook("d-reopen") || !h[0].Outcome.Live {
		t.Fatalf("history head %+v; want the unfree", h[0])
	}

	// A person's free is not undone by a reopened PR.
	if _, err := f.l.Free(f.ctx, repo, 7, audit.Manual("alice", "abandoned"), 0); err != nil {
		t.Fatal(err)
	}
	res, err = f.l.RecordPRs(f.ctx, repo, 7, prs(2, 0, 1), audit.Webhook("d-open2"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Row.Freed == nil || res.Row.Freed.Rule != dispatch.RuleManual {
		t.Fatalf("manual free after another open PR: %+v; want kept free", res.Row.Freed)
	}
}

func TestFailedReadNeverFrees(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, repo, 8, accepted)
	before := f.get(t, repo, 8)
	res, err := f.l.RecordPRs(f.ctx, repo, 8, dispatch.PRState{Read: false, ClosedUnmerged: 3}, audit.Webhook("d"))
	if err != nil {
		t.Fatal(err)
	}
	after := f.get(t, repo, 8)
	if res.Outcome != OutcomeUnread || res.Wrote() || after.Freed != nil || after.Version != before.Version {
		t.Fatalf("unread PR list: outcome %q wrote %t freed %+v version %d->%d", res.Outcome, res.Wrote(), after.Freed, before.Version, after.Version)
	}
	// A freed row is not unfreed by a failed read either.
	if _, err := f.l.RecordPRs(f.ctx, repo, 8, prs(0, 0, 1), audit.Webhook("d1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.RecordPRs(f.ctx, repo, 8, dispatch.PRState{Read: false, Open: 1}, audit.Webhook("d2")); err != nil {
		t.Fatal(err)
	}
	if f.get(t, repo, 8).Freed == nil {
		t.Fatal("a failed read unfreed the row")
	}
}

func TestNewDispatchResetsRecordedFields(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, repo, 9, accepted)
	if _, err := f.l.RecordPRs(f.ctx, repo, 9, prs(0, 0, 2), audit.Webhook("d")); err != nil {
		t.Fatal(err)
	}
	rec := f.get(t, repo, 9)
	if _, err := f.l.RecordExport(f.ctx, repo, 9, dispatch.ExportState{State: "refused", Refusal: "protected path", Attempts: 1}, rec.Version, audit.Export("test")); err != nil {
		t.Fatal(err)
	}
	// The same dispatch written again keeps what was recorded.
	f.upsert(t, repo, 9, `{"dispatched_at": "2026-10-10T17:00:00Z", "judged_head": null}`)
	if rec := f.get(t, repo, 9); rec.PRs == nil || rec.Freed == nil || rec.Export == nil {
		t.Fatalf("same dispatch_at dropped recorded fields: %+v", rec)
	}

	res := f.upsert(t, repo, 9, `{"dispatched_at": "2026-10-10T19:30:00Z", "finished_at": null, "review_state": null}`)
	rec = f.get(t, repo, 9)
	if rec.PRs != nil || rec.Freed != nil || rec.WouldFree != nil || rec.Export != nil {
		t.Fatalf("new dispatch kept recorded fields: prs %+v freed %+v export %+v", rec.PRs, rec.Freed, rec.Export)
	}
	if v := rec.View(t0); v.Claim != "running" || !v.Live || !v.HoldsFiles {
		t.Fatalf("new dispatch view %+v", v)
	}
	if !strings.Contains(string(res.Entry.Inputs), `"new_dispatch":true`) {
		t.Fatalf("upsert entry inputs %s; want new_dispatch", res.Entry.Inputs)
	}
}

func TestUpsertRefusesUnknownFieldAndWritesNothing(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.l.Upsert(f.ctx, repo, 10, patch(t, `{"finished_at": null, "freed": {"rule": "manual"}}`), audit.API("api"))
	var fe *dispatch.FieldError
	if !errors.As(err, &fe) || fe.Field != "freed" {
		t.Fatalf("upsert with recorded field: %v; want a field error naming freed", err)
	}
	_, err = f.l.Upsert(f.ctx, repo, 10, patch(t, `{"send_backs": -1}`), audit.API("api"))
	if !errors.As(err, &fe) || fe.Field != "send_backs" {
		t.Fatalf("negative counter: %v", err)
	}
	if _, err := f.l.Get(f.ctx, repo, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused upserts created a row: %v", err)
	}
	if _, err := f.l.Upsert(f.ctx, "not a repo", 1, nil, audit.API("api")); err == nil {
		t.Fatal("bad repo accepted")
	}
}

func TestFlagsOffRecordWouldFreeAndStayLive(t *testing.T) {
	f := newFixture(t, Options{})
	res := f.upsert(t, repo, 11, sentBack)
	if res.Outcome != DecisionWouldFree || res.Row.WouldFree == nil || res.Row.WouldFree.Rule != dispatch.RuleSendBack || res.Row.Freed != nil {
		t.Fatalf("send-back under ceiling, flag off: outcome %q would %+v freed %+v", res.Outcome, res.Row.WouldFree, res.Row.Freed)
	}
	v := f.get(t, repo, 11).View(t0)
	if !v.Live || !v.ClaimsIssue || v.Stage != "send_back" || !v.HoldsFiles || v.WouldFree == nil || *v.SendBackClaim != "free" {
		t.Fatalf("flag-off view %+v", v)
	}
	// Deciding again records nothing new.
	if res, err := f.l.Evaluate(f.ctx, repo, 11, audit.Sweep("")); err != nil || res.Wrote() {
		t.Fatalf("second evaluation: %+v %v; want nothing written", res, err)
	}

	f.upsert(t, repo, 12, accepted)
	res, err := f.l.RecordPRs(f.ctx, repo, 12, prs(0, 0, 1), audit.Webhook("d"))
	if err != nil || res.Outcome != DecisionWouldFree || res.Row.Freed != nil || !res.Row.View(t0).Live {
		t.Fatalf("accept_claim flag off: %+v %v", res, err)
	}
	res, err = f.l.RecordPRs(f.ctx, repo, 12, prs(1, 0, 1), audit.Webhook("d2"))
	if err != nil || res.Outcome != DecisionWouldUnfree || res.Row.WouldFree != nil {
		t.Fatalf("reopen with flag off: %+v %v; want would_unfree", res, err)
	}
	h := f.history(t, repo, 12)
	got := []string{}
	for _, e := range h {
		got = append(got, e.Decision)
	}
	if !slices.Equal(got, []string{DecisionWouldUnfree, DecisionWouldFree, ""}) {
		t.Fatalf("decisions newest first %q", got)
	}
}

func TestFreeIsIdempotent(t *testing.T) {
	f := newFixture(t, Options{})
	f.upsert(t, repo, 13, accepted)
	first, err := f.l.Free(f.ctx, repo, 13, audit.Manual("alice", "duplicate of #12"), 0)
	if err != nil || first.Outcome != DecisionFree || first.Row.Freed.Rule != dispatch.RuleManual {
		t.Fatalf("free: %+v %v", first, err)
	}
	second, err := f.l.Free(f.ctx, repo, 13, audit.Manual("bob", "again"), 0)
	if err != nil || second.Outcome != OutcomeAlreadyFree || second.Wrote() {
		t.Fatalf("second free: %+v %v; want already free, nothing written", second, err)
	}
	rec := f.get(t, repo, 13)
	if rec.Version != first.Row.Version || rec.Freed.Evidence != "duplicate of #12" {
		t.Fatalf("second free changed the row: %+v", rec)
	}
	h := f.history(t, repo, 13)
	if h[0].Action != ActionFree || h[0].Source != audit.Manual("alice", "duplicate of #12") || len(h) != 2 {
		t.Fatalf("history %+v", h)
	}
}

func TestKeepPinsUntilNewDispatch(t *testing.T) {
	f := newFixture(t, Options{ReleaseDeadClaims: true, FreeClosedPR: true})
	if res := f.upsert(t, repo, 14, sentBack); res.Outcome != DecisionFree {
		t.Fatalf("send-back upsert outcome %q; want free", res.Outcome)
	}
	res, err := f.l.Keep(f.ctx, repo, 14, audit.Manual("alice", "bee is coming back"), 0)
	if err != nil || res.Row.Freed != nil || res.Row.Pin == nil || res.Row.Pin.Reason != "bee is coming back" {
		t.Fatalf("keep: %+v %v", res, err)
	}
	if v := res.Row.View(t0); !v.Live || v.Stage != "send_back" {
		t.Fatalf("kept view %+v", v)
	}
	if res, err := f.l.Evaluate(f.ctx, repo, 14, audit.Sweep("")); err != nil || res.Wrote() || res.Row.Freed != nil {
		t.Fatalf("sweep freed a kept row: %+v %v", res, err)
	}
	f.upsert(t, repo, 14, `{"criteria": ["builds"]}`)
	if rec := f.get(t, repo, 14); rec.Freed != nil || rec.Pin == nil {
		t.Fatalf("an upsert of the same dispatch dropped the keep: %+v", rec)
	}
	res = f.upsert(t, repo, 14, `{"dispatched_at": "2026-10-10T19:55:00Z"}`)
	if res.Outcome != DecisionFree || res.Row.Pin != nil {
		t.Fatalf("new dispatch: outcome %q pin %+v; want the pin gone and send_back_claim free", res.Outcome, res.Row.Pin)
	}
	h := f.history(t, repo, 14)
	var actions []string
	for _, e := range h {
		actions = append(actions, e.Action+"/"+e.Decision)
	}
	want := []string{"upsert/free", "upsert/", "keep/keep", "upsert/free"}
	if !slices.Equal(actions, want) {
		t.Fatalf("history %q; want %q", actions, want)
	}
	if !h[2].Outcome.Kept || h[0].Outcome.Kept {
		t.Fatalf("pin not recorded in outcomes: %+v", h)
	}
}

func TestDeleteIsAuditedAndVersionsContinue(t *testing.T) {
	f := newFixture(t, Options{})
	f.upsert(t, repo, 15, accepted)
	f.upsert(t, repo, 15, `{"send_backs": 1}`)
	res, err := f.l.Delete(f.ctx, repo, 15, audit.Source{Kind: audit.KindAPI, Writer: "api", Reason: "row removed by the Queen"})
	if err != nil || res.Outcome != OutcomeDeleted || res.Row != nil || res.Entry.Version != 3 {
		t.Fatalf("delete: %+v %v", res, err)
	}
	if _, err := f.l.Get(f.ctx, repo, 15); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := f.l.Delete(f.ctx, repo, 15, audit.Source{Kind: audit.KindAPI, Writer: "api", Reason: ""}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if rows, err := all(f.l, f.ctx, repo, IndexAccepted); err != nil || len(rows) != 0 {
		t.Fatalf("accepted after delete: %v %v", rows, err)
	}
	trail, err := f.l.Audit(f.ctx, 10)
	if err != nil || trail[0].Action != ActionDelete || trail[0].Source.Reason != "row removed by the Queen" || !trail[0].Outcome.Deleted {
		t.Fatalf("audit head %+v %v", trail, err)
	}
	// A row written again continues the version sequence, so nothing decided
	// on the old row can match it.
	res = f.upsert(t, repo, 15, accepted)
	if res.Outcome != OutcomeCreated || res.Row.Version != 4 {
		t.Fatalf("recreated row: outcome %q version %d; want created at 4", res.Outcome, res.Row.Version)
	}
	if _, err := f.l.RecordExport(f.ctx, repo, 15, dispatch.ExportState{State: "pushed"}, 2, audit.Export("test")); !errors.Is(err, ErrConflict) {
		t.Fatalf("export decided on the deleted row: %v; want ErrConflict", err)
	}
}

func TestRecordExportChecksVersion(t *testing.T) {
	f := newFixture(t, Options{})
	v1 := f.upsert(t, repo, 16, accepted).Row.Version
	f.upsert(t, repo, 16, `{"judged_head": "0123456789012345678901234567890123456789"}`)
	_, err := f.l.RecordExport(f.ctx, repo, 16, dispatch.ExportState{State: "pushed", PushedHead: "abc"}, v1, audit.Export("test"))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("stale export record: %v; want ErrConflict", err)
	}
	rec := f.get(t, repo, 16)
	if rec.Export != nil {
		t.Fatalf("stale export landed: %+v", rec.Export)
	}
	res, err := f.l.RecordExport(f.ctx, repo, 16, dispatch.ExportState{State: "refused", Refusal: "touches .github/", Attempts: 2}, rec.Version, audit.Export("test"))
	if err != nil || res.Outcome != "refused" || res.Row.Export.Refusal != "touches .github/" {
		t.Fatalf("export record: %+v %v", res, err)
	}
	if h := f.history(t, repo, 16); h[0].Action != ActionExport || h[0].Evidence != "touches .github/" || h[0].Outcome.Export != "refused" {
		t.Fatalf("export audit %+v", h[0])
	}
}

// A free decided on one version never lands once the row moved on: the
// decision is made again on the new row.
func TestStaleFreeNeverLands(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	for _, tc := range []struct {
		name   string
		issue  int64
		racing func() error
	}{
		{"reopened PR", 20, func() error {
			_, err := f.l.RecordPRs(f.ctx, repo, 20, prs(1, 0, 1), audit.Webhook("reopen"))
			return err
		}},
		{"new dispatch", 21, func() error {
			_, err := f.l.Upsert(f.ctx, repo, 21, patch(t, `{"dispatched_at": "2026-10-10T19:59:00Z", "finished_at": null, "review_state": null}`), audit.API("api"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.upsert(t, repo, tc.issue, accepted)
			if _, err := f.l.RecordPRs(f.ctx, repo, tc.issue, dispatch.PRState{Read: true, ClosedUnmerged: 1}, audit.Webhook("d")); err != nil {
				t.Fatal(err)
			}
			// Unfree by hand so that the stored state says closed-only but not freed.
			if _, err := f.l.Update(f.ctx, repo, tc.issue, func(rec *Record) (Change, error) {
				rec.Freed = nil
				return Change{Action: "test", Decision: DecisionUnfree}, nil
			}); err != nil {
				t.Fatal(err)
			}
			calls := 0
			res, err := f.l.Update(f.ctx, repo, tc.issue, func(rec *Record) (Change, error) {
				calls++
				if calls == 1 {
					if err := tc.racing(); err != nil {
						return Change{}, err
					}
				}
				d := dispatch.Decide(&rec.Row, t0)
				if d.RuleFrees() != dispatch.RuleAccept {
					return Change{None: true, Note: "live"}, nil
				}
				rec.Freed = &dispatch.FreeRecord{At: t0, Rule: dispatch.RuleAccept, Evidence: "closed"}
				return Change{Action: "test", Decision: DecisionFree}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := f.get(t, repo, tc.issue)
			if calls != 2 || res.Outcome != "live" || rec.Freed != nil {
				t.Fatalf("after the race: %d decisions, outcome %q, freed %+v; want the free re-decided as live", calls, res.Outcome, rec.Freed)
			}
			for _, e := range f.history(t, repo, tc.issue)[:1] {
				if e.Decision == DecisionFree {
					t.Fatalf("the stale free was audited: %+v", e)
				}
			}
		})
	}
}

func TestIndexesFollowRows(t *testing.T) {
	f := newFixture(t, Options{})
	issues := func(rows []*Record, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var s []int64
		for _, r := range rows {
			s = append(s, r.Issue)
		}
		return fmt.Sprint(s)
	}
	check := func(step, wantAccepted, wantSendBacks string) {
		t.Helper()
		if got := issues(all(f.l, f.ctx, repo, IndexAccepted)); got != wantAccepted {
			t.Fatalf("%s: accepted %s; want %s", step, got, wantAccepted)
		}
		if got := issues(all(f.l, f.ctx, repo, IndexSendBacks)); got != wantSendBacks {
			t.Fatalf("%s: send-backs %s; want %s", step, got, wantSendBacks)
		}
	}
	f.upsert(t, repo, 3, `{"review_state": "accept"}`)
	f.upsert(t, repo, 1, accepted)
	f.upsert(t, repo, 2, sentBack)
	f.upsert(t, "other/repo", 5, accepted)
	check("start", "[1]", "[2]")
	f.upsert(t, repo, 3, `{"finished_at": "2026-10-10T19:00:00Z"}`)
	check("3 finished", "[1 3]", "[2]")
	f.upsert(t, repo, 1, `{"review_state": "sendBack"}`)
	check("1 sent back", "[3]", "[1 2]")
	f.upsert(t, repo, 2, `{"finished_at": null}`)
	check("2 running again", "[3]", "[1]")
	if _, err := f.l.Delete(f.ctx, repo, 3, audit.Source{Kind: audit.KindAPI, Writer: "test", Reason: ""}); err != nil {
		t.Fatal(err)
	}
	check("3 deleted", "[]", "[1]")
	if got := issues(all(f.l, f.ctx, "other/repo", IndexAccepted)); got != "[5]" {
		t.Fatalf("other repo accepted %s", got)
	}

	repos, err := f.l.Repos(f.ctx)
	if err != nil || fmt.Sprint(repos) != "[hive/t27 other/repo]" {
		t.Fatalf("repos %v %v", repos, err)
	}
	for i := int64(10); i < 15; i++ {
		f.upsert(t, "other/repo", i, `{}`)
	}
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		rows, next, err := f.l.List(f.ctx, "", cursor, 2)
		if err != nil || pages > 10 {
			t.Fatalf("list: %v after %d pages", err, pages)
		}
		for _, r := range rows {
			all = append(all, r.Key())
		}
		if next == "" {
			break
		}
		cursor = next
	}
	want := "[hive/t27#1 hive/t27#2 other/repo#5 other/repo#10 other/repo#11 other/repo#12 other/repo#13 other/repo#14]"
	if fmt.Sprint(all) != want {
		t.Fatalf("list all %v; want %s", all, want)
	}
	rows, next, err := f.l.List(f.ctx, repo, "", 10)
	if err != nil || next != "" || issues(rows, nil) != "[1 2]" {
		t.Fatalf("list one repo %v %q %v", issues(rows, nil), next, err)
	}
	if _, _, err := f.l.List(f.ctx, repo, "other/repo#3", 10); err == nil {
		t.Fatal("a cursor of another repository was taken")
	}
}

func TestRestartKeepsRowsAndAudit(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{AppendOnly: true})
	c := testkit.NewClock(t0)
	l := New(srv.Client(), Options{Now: c.Now, FreeClosedPR: true})
	ctx := t.Context()
	var written []Result
	for i := int64(1); i <= 20; i++ {
		res, err := l.Upsert(ctx, repo, i, patch(t, accepted), audit.API("import"))
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, res)
	}
	res, err := l.RecordPRs(ctx, repo, 4, prs(0, 0, 1), audit.Webhook("d"))
	if err != nil || res.Outcome != DecisionFree {
		t.Fatalf("free before restart: %+v %v", res, err)
	}
	written = append(written, res)

	srv.Restart()

	for i := int64(1); i <= 20; i++ {
		rec, err := l.Get(ctx, repo, i)
		if err != nil {
			t.Fatalf("after restart: %v", err)
		}
		if (i == 4) != (rec.Freed != nil) || rec.FinishedAt == nil {
			t.Fatalf("after restart row %d: %+v", i, rec)
		}
	}
	trail, err := l.Audit(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != len(written) {
		t.Fatalf("audit after restart has %d entries; want %d", len(trail), len(written))
	}
	for i, res := range written {
		e := trail[len(trail)-1-i]
		if e.Issue != res.Entry.Issue || e.Version != res.Entry.Version || e.Outcome.Digest != res.Entry.Outcome.Digest {
			t.Fatalf("audit entry %d after restart %+v; want %+v", i, e, res.Entry)
		}
	}
	if rows, err := all(l, ctx, repo, IndexAccepted); err != nil || len(rows) != 20 {
		t.Fatalf("accepted index after restart: %d rows, %v", len(rows), err)
	}
	// Writes go on after the restart (the script cache was lost with it).
	if _, err := l.RecordPRs(ctx, repo, 4, prs(1, 0, 1), audit.Webhook("d2")); err != nil {
		t.Fatalf("write after restart: %v", err)
	}
}

// A script call that ran but whose reply was lost is retried by the client;
// the retry must report success and write nothing twice.
func TestRetriedWriteAppliesOnce(t *testing.T) {
	f := newFixture(t, Options{})
	k := f.l.keysOf(repo, 30)
	run := func(id string) []any {
		t.Helper()
		res, err := f.cas(f.srv.Client(), k, f.l.auditKey(), 0, 1, `{"repo":"hive/t27","issue":30}`, 30, id)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, again, other := run("w1"), run("w1"), run("w2")
	if first[0] != int64(1) || again[0] != int64(1) || again[1] != int64(1) || other[0] != int64(0) {
		t.Fatalf("first %v, retry %v, another writer %v; want applied, applied once, conflict", first, again, other)
	}
	if h := f.history(t, repo, 30); len(h) != 1 {
		t.Fatalf("history after a retried write has %d entries; want 1", len(h))
	}
	if a, err := f.l.Audit(f.ctx, 10); err != nil || len(a) != 1 {
		t.Fatalf("audit after a retried write: %d entries, %v", len(a), err)
	}
}

// A sweep's batch read can land after a webhook's newer read of a reopened
// PR: the older read must not free the claim the newer one keeps.
func TestAnOlderReadLandingLateDecidesNothing(t *testing.T) {
	f := newFixture(t, Options{FreeClosedPR: true})
	f.upsert(t, repo, 12, accepted)
	at := func(m int) *time.Time { x := t0.Add(time.Duration(m) * time.Minute); return &x }
	newer := prs(1, 0, 0)
	newer.ReadAt = at(3)
	if _, err := f.l.RecordPRs(f.ctx, repo, 12, newer, audit.Webhook("webhook")); err != nil {
		t.Fatal(err)
	}
	before := f.get(t, repo, 12)
	older := prs(0, 0, 1)
	older.ReadAt = at(2)
	res, err := f.l.RecordPRs(f.ctx, repo, 12, older, audit.Sweep(""))
	if err != nil {
		t.Fatal(err)
	}
	after := f.get(t, repo, 12)
	if res.Outcome != OutcomeStaleRead || res.Wrote() || after.Freed != nil || after.Version != before.Version || after.PRs.Open != 1 {
		t.Fatalf("older read: outcome %q wrote %t freed %+v prs %+v", res.Outcome, res.Wrote(), after.Freed, after.PRs)
	}
	// A read sent after the recorded one still decides.
	later := prs(0, 0, 1)
	later.ReadAt = at(4)
	if res, err := f.l.RecordPRs(f.ctx, repo, 12, later, audit.Sweep("")); err != nil || f.get(t, repo, 12).Freed == nil {
		t.Fatalf("newer closed read: %+v %v; want freed", res.Outcome, err)
	}
}
