package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/api/openapicheck"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
)

const (
	headA = "aaaaaaaaaaaa1111111111111111111111111111"
	headB = "bbbbbbbbbbbb2222222222222222222222222222"
)

// exportServer is claimsServer with the export push route wired to a
// task queue in the same Redis.
func exportServer(t *testing.T) (*ledger.Ledger, *asynq.Inspector) {
	t.Helper()
	now := func() time.Time { return claimsT0 }
	srv := redistest.Start(t)
	l := ledger.New(srv.Client(), ledger.Options{Now: now})
	insp := asynq.NewInspectorFromRedisClient(srv.Client())
	workers := export.Workers{RDB: srv.Client()}
	if err := workers.Announce(context.Background(), "test-worker"); err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{Ledger: l, Token: claimsToken, Now: now,
		Enqueuer: tasks.NewEnqueuer(asynq.NewClientFromRedisClient(srv.Client()), insp), ExportWorkers: workers,
		ExportRepo: "hive/t27"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(openapicheck.Handler(h, func(err error) { t.Errorf("openapi: %v", err) }))
	t.Cleanup(ts.Close)
	t.Setenv("QUEEN_API_URL", ts.URL)
	t.Setenv("QUEEN_API_TOKEN", claimsToken)
	return l, insp
}

func putRow(t *testing.T, l *ledger.Ledger, repo string, issue int64, body string) {
	t.Helper()
	var patch map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &patch); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Upsert(context.Background(), repo, issue, patch, audit.API("test")); err != nil {
		t.Fatalf("upsert %s#%d: %v", repo, issue, err)
	}
}

func recordExport(t *testing.T, l *ledger.Ledger, repo string, issue int64, st dispatch.ExportState) {
	t.Helper()
	rec, err := l.Get(context.Background(), repo, issue)
	if err != nil {
		t.Fatal(err)
	}
	st.Version = rec.Version + 1
	if _, err := l.RecordExport(context.Background(), repo, issue, st, rec.Version, audit.Export("test")); err != nil {
		t.Fatal(err)
	}
}

func acceptedBody(head string) string {
	return `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "judged_head": "` + head + `"}`
}

// exportRows writes one row of each kind status must show, and two it must not.
func exportRows(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	putRow(t, l, "hive/t27", 1, acceptedBody(headA)) // accepted, never tried
	putRow(t, l, "hive/t27", 2, acceptedBody(headA))
	recordExport(t, l, "hive/t27", 2, dispatch.ExportState{State: "pr_opened", PushedHead: headA, PRNumber: 17, Attempts: 1})
	putRow(t, l, "hive/t27", 3, acceptedBody(headB))
	recordExport(t, l, "hive/t27", 3, dispatch.ExportState{State: "refused", Attempts: 1,
		Refusal: "workflow: touches .github/workflows/ci.yml, left for a person"})
	putRow(t, l, "hive/t27", 4, acceptedBody(headB))
	recordExport(t, l, "hive/t27", 4, dispatch.ExportState{State: "retrying", Attempts: 12,
		LastError: "GET /queen/export/4: status 504: injected failure"})
	// Sent back after an attempt: the attempt still shows.
	putRow(t, l, "hive/t27", 5, acceptedBody(headB))
	recordExport(t, l, "hive/t27", 5, dispatch.ExportState{State: "dry_run", Attempts: 1})
	putRow(t, l, "hive/t27", 5, `{"review_state": "sendBack"}`)
	putRow(t, l, "hive/t27", 6, `{"started": true}`) // running: not shown
	putRow(t, l, "acme/web", 1, acceptedBody(headA)) // another repository
	putRow(t, l, "hive/t27", 7, `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "failed"}`)
	// Pushed; its PR waits for the installation's turn (the hour's PR
	// creations were spent).
	putRow(t, l, "hive/t27", 8, acceptedBody(headA))
	recordExport(t, l, "hive/t27", 8, dispatch.ExportState{State: "waiting", PushedHead: headA, Attempts: 3,
		Until: &waitingUntil, LastError: "github CreatePR: content-creating requests of this installation are paced"})
}

var waitingUntil = time.Date(2026, 10, 11, 13, 0, 0, 0, time.UTC)

func TestExportStatusTable(t *testing.T) {
	l, _ := exportServer(t)
	exportRows(t, l)
	claimsPageSize = 3 // status follows every page
	t.Cleanup(func() { claimsPageSize = apiwire.MaxLimit })

	code, out, errOut := ctl("export", "status", "--repo", "hive/t27")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	got := lines(out)
	if f := strings.Fields(got[0]); strings.Join(f, " ") != "ROW STATE HEAD PR ATTEMPTS REFUSAL LAST_ERROR" {
		t.Fatalf("header %q", got[0])
	}
	want := []string{
		"hive/t27#1 not_tried - - 0 - -",
		"hive/t27#2 pr_opened aaaaaaaaaaaa #17 1 - -",
		"hive/t27#3 refused - - 1 workflow: touches .github/workflows/ci.yml, left for a person -",
		"hive/t27#4 retrying - - 12 - GET /queen/export/4: status 504: injected failure",
		"hive/t27#5 dry_run - - 1 - -",
		"hive/t27#8 waiting until 2026-10-11T13:00:00Z aaaaaaaaaaaa - 3 - github CreatePR: content-creating requests of this installation are paced",
	}
	if len(got) != len(want)+2 {
		t.Fatalf("want a header, %d rows and the summary:\n%s", len(want), out)
	}
	for i, w := range want {
		if line := strings.Join(strings.Fields(got[i+1]), " "); line != w {
			t.Errorf("row %d: %q, want %q", i+1, line, w)
		}
	}
	if s := got[len(got)-1]; s != "6 rows: 1 dry_run, 1 not_tried, 1 pr_opened, 1 refused, 1 retrying, 1 waiting" {
		t.Errorf("summary %q", s)
	}

	// Every repository without --repo.
	code, out, _ = ctl("export", "status")
	if code != 0 || !strings.Contains(out, "acme/web#1 ") || !strings.HasSuffix(out, "7 rows: 1 dry_run, 2 not_tried, 1 pr_opened, 1 refused, 1 retrying, 1 waiting\n") {
		t.Fatalf("all repositories: exit %d\n%s", code, out)
	}
}

func TestExportStatusJSON(t *testing.T) {
	l, _ := exportServer(t)
	exportRows(t, l)
	code, out, errOut := ctl("export", "status", "--json", "--repo=hive/t27")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got struct {
		Exports []exportRow `json:"exports"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Exports) != 6 {
		t.Fatalf("%d rows, want 6:\n%s", len(got.Exports), out)
	}
	if r := got.Exports[0]; r.Issue != 1 || r.Claim != "accepted" || r.Export != nil {
		t.Errorf("row 1: %+v, want accepted with a null export", r)
	}
	if r := got.Exports[1]; r.Export == nil || r.Export.State != "pr_opened" || r.Export.PushedHead != headA || r.Export.PRNumber != 17 {
		t.Errorf("row 2: %+v", r)
	}
	if r := got.Exports[4]; r.Claim != "failed" || r.Export == nil || r.Export.State != "dry_run" {
		t.Errorf("row 5 (sent back after a dry run): %+v", r)
	}
	if r := got.Exports[5]; r.Export == nil || r.Export.State != "waiting" || r.Export.Until == nil || !r.Export.Until.Equal(waitingUntil) {
		t.Errorf("row 8 (waiting for its turn): %+v, want waiting until %v", r, waitingUntil)
	}
	// No rows is an empty list, not null.
	if code, out, _ = ctl("export", "status", "--json", "--repo", "none/here"); code != 0 || !strings.Contains(out, `"exports": []`) {
		t.Fatalf("no rows: exit %d\n%s", code, out)
	}
}

func TestExportPushCommand(t *testing.T) {
	l, insp := exportServer(t)
	exportRows(t, l)
	putRow(t, l, "hive/b28", 3, acceptedBody(headB))

	code, out, errOut := ctl("export", "push", "--dry-run", "hive/t27#3")
	if code != 0 || errOut != "" ||
		out != "hive/t27#3: export dry run enqueued at bbbbbbbbbbbb (task export:push:hive/t27:3:"+headB+":dry-run)\n" {
		t.Fatalf("dry run: exit %d, stderr %q, stdout %q", code, errOut, out)
	}
	code, out, _ = ctl("export", "push", "hive/t27#3")
	if code != 0 || out != "hive/t27#3: export push enqueued at bbbbbbbbbbbb (task export:push:hive/t27:3:"+headB+")\n" {
		t.Fatalf("push: exit %d, %q", code, out)
	}
	code, out, _ = ctl("export", "push", "hive/t27#3", "--dry-run")
	if code != 0 || !strings.Contains(out, "export dry run already enqueued") {
		t.Fatalf("second dry run: exit %d, %q", code, out)
	}
	infos, err := insp.ListPendingTasks(tasks.Queue)
	if err != nil || len(infos) != 2 {
		t.Fatalf("pending %d tasks (%v), want the real push and the dry run", len(infos), err)
	}
	for _, info := range infos {
		p, err := tasks.ParseExportPush(asynq.NewTask(info.Type, info.Payload))
		if err != nil || p.Repo != "hive/t27" || p.Issue != 3 || p.Head != headB || !p.Manual || p.DryRun != strings.HasSuffix(info.ID, ":dry-run") {
			t.Errorf("task %s: %+v %v", info.ID, p, err)
		}
	}

	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"export", "push", "hive/t27#6"}, 1, "queenctl: export push: hive/t27#6: hive/t27#6 is not accepted (claim running): only accepted work is pushed\n"},
		{[]string{"export", "push", "hive/t27#99"}, 1, "queenctl: export push: hive/t27#99: no such dispatch row\n"},
		// The export holds hive/t27's work: hive/b28's accepted #3 is refused
		// with the export's repository named, as the API answers it.
		{[]string{"export", "push", "hive/b28#3"}, 1, "queenctl: export push: hive/b28#3: repo: hive/b28 is not the export's repository hive/t27 (QUEEN_EXPORT_REPO): only its rows are pushed\n"},
		{[]string{"export", "push", "--dry-run", "hive/b28#3"}, 1, "is not the export's repository hive/t27"},
		{[]string{"export", "push"}, 2, "want exactly one owner/name#N"},
		{[]string{"export", "push", "hive/t27"}, 2, `"hive/t27" is not owner/name#N`},
		{[]string{"export", "push", "hive/t27#1", "--force"}, 2, "flag provided but not defined: -force"},
		{[]string{"export", "status", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"export", "status", "--repo", "nobody"}, 2, `--repo "nobody" is not owner/name`},
		{[]string{"export", "shove"}, 2, `unknown subcommand "shove"`},
	} {
		code, _, errOut := ctl(c.args...)
		if code != c.code || !strings.Contains(errOut, c.stderr) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q on one line", c.args, code, errOut, c.code, c.stderr)
		}
	}
	if infos, _ := insp.ListPendingTasks(tasks.Queue); len(infos) != 2 {
		t.Fatalf("refused commands enqueued: %d pending", len(infos))
	}
}

func TestExportCommandNeedsTheAPIToken(t *testing.T) {
	t.Setenv("QUEEN_API_TOKEN", "")
	code, _, errOut := ctl("export", "status")
	if code != 2 || errOut != "queenctl: export status: QUEEN_API_TOKEN: is required (or QUEEN_API_TOKEN_FILE)\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
