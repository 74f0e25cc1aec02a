package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/tasks"
)

const judged = "4f2a9c0e1b7d3a5f6e8c9b0a1d2e3f4a5b6c7d8e"

var acceptedAtHead = `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "judged_head": "` + judged + `"}`

// queued lists the export:push tasks waiting in the queue, by task id.
func (e *env) queued(t *testing.T) map[string]tasks.ExportPushPayload {
	t.Helper()
	infos, err := e.insp.ListPendingTasks(tasks.Queue)
	if err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	out := map[string]tasks.ExportPushPayload{}
	for _, info := range infos {
		p, err := tasks.ParseExportPush(asynq.NewTask(info.Type, info.Payload))
		if err != nil {
			t.Fatalf("task %s: %v", info.ID, err)
		}
		out[info.ID] = p
	}
	return out
}

func TestExportPushEnqueuesTheJudgedHeadOnce(t *testing.T) {
	e := newEnv(t, envOpts{enqueue: true})
	e.put(t, "hive/t27", 9200, acceptedAtHead)
	const route = "/v1/repos/hive/t27/exports/9200/push"

	m := e.req(t, "POST", route, "").mustCode(t, 202, "")
	id := "export:push:hive/t27:9200:" + judged
	if m["task_id"] != id || m["already_enqueued"] != false || m["head"] != judged || m["dry_run"] != false ||
		m["repo"] != "hive/t27" || m["issue"] != 9200.0 {
		t.Fatalf("answer %v", m)
	}
	want := tasks.ExportPushPayload{Repo: "hive/t27", Issue: 9200, Head: judged, Manual: true}
	if q := e.queued(t); len(q) != 1 || q[id] != want {
		t.Fatalf("queue %+v, want one export:push of %+v", q, want)
	}

	// Asked again while it waits: the same task, nothing new.
	m = e.req(t, "POST", route, `{"dry_run": false}`).mustCode(t, 202, "")
	if m["task_id"] != id || m["already_enqueued"] != true {
		t.Fatalf("second push: %v, want the same task already enqueued", m)
	}

	// A dry run is a task of its own: it never stands in for the real push.
	m = e.req(t, "POST", route, `{"dry_run": true}`).mustCode(t, 202, "")
	if m["task_id"] != id+":dry-run" || m["already_enqueued"] != false || m["dry_run"] != true {
		t.Fatalf("dry run: %v", m)
	}
	q := e.queued(t)
	if len(q) != 2 || !q[id+":dry-run"].DryRun || q[id].DryRun {
		t.Fatalf("queue %+v, want the real push and the dry run", q)
	}
	// Nothing was written to the row.
	if rec := e.get(t, "hive/t27", 9200); rec.Version != 1 || rec.Export != nil {
		t.Fatalf("row after the pushes: version %d export %+v", rec.Version, rec.Export)
	}
}

func TestExportPushRefusals(t *testing.T) {
	e := newEnv(t, envOpts{enqueue: true})
	e.put(t, "hive/t27", 9111, sentBack10)
	e.put(t, "hive/t27", 9201, accepted) // no judged_head
	// A judged_head the API now refuses, as an older version stored it.
	e.put(t, "hive/t27", 9202, acceptedAtHead)
	if _, err := e.ledger.Update(context.Background(), "hive/t27", 9202, func(rec *ledger.Record) (ledger.Change, error) {
		old := strings.ToUpper(judged)
		rec.JudgedHead = &old
		return ledger.Change{Action: ledger.ActionUpsert}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.put(t, "hive/t27", 9203, working)
	e.put(t, "hive/t27", 9200, acceptedAtHead)

	for _, c := range []struct {
		path, body string
		code       int
		field      string
		says       string
	}{
		{"/v1/repos/hive/t27/exports/9999/push", "", 404, "", "no such dispatch row"},
		{"/v1/repos/hive/t27/exports/9111/push", "", 409, "", "hive/t27#9111 is not accepted (claim rejected)"},
		{"/v1/repos/hive/t27/exports/9203/push", "", 409, "", "is not accepted (claim running)"},
		{"/v1/repos/hive/t27/exports/9201/push", "", 409, "", "hive/t27#9201 is accepted but its judged_head is not 40 lowercase hex"},
		{"/v1/repos/hive/t27/exports/9202/push", "", 409, "", "judged_head is not 40 lowercase hex"},
		{"/v1/repos/hive/t27/exports/9200/push", `{"dry_run": "yes"}`, 400, "dry_run", "must be true or false"},
		{"/v1/repos/hive/t27/exports/9200/push", `{"dry_run": null}`, 400, "dry_run", "must be true or false"},
		{"/v1/repos/hive/t27/exports/9200/push", `{"dryrun": true}`, 400, "dryrun", "unknown field"},
		{"/v1/repos/hive/t27/exports/9200/push", `[true]`, 400, "", "not a JSON object"},
		{"/v1/repos/hive/t27/exports/9200/push?dry_run=true", "", 400, "dry_run", "unknown parameter"},
		{"/v1/repos/hive/t27/exports/0/push", "", 400, "issue", "not a positive whole number"},
	} {
		m := e.req(t, "POST", c.path, c.body).mustCode(t, c.code, c.field)
		if msg, _ := m["error"].(string); !strings.Contains(msg, c.says) {
			t.Errorf("POST %s %s: error %q, want it to say %q", c.path, c.body, msg, c.says)
		}
	}
	if r := e.req(t, "GET", "/v1/repos/hive/t27/exports/9200/push", ""); r.code != 405 || r.header.Get("Allow") != "POST" {
		t.Fatalf("GET on the push route: %d Allow %q", r.code, r.header.Get("Allow"))
	}
	if q := e.queued(t); len(q) != 0 {
		t.Fatalf("refused requests enqueued %v", q)
	}
}

func TestExportPushWithoutEnqueuer(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 9200, acceptedAtHead)
	m := e.req(t, "POST", "/v1/repos/hive/t27/exports/9200/push", "").mustCode(t, 503, "")
	if m["error"] != "export push not configured" {
		t.Fatalf("answer %v", m)
	}
}

func TestClaimViewCarriesTheExportState(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 9200, acceptedAtHead)
	if m := e.req(t, "GET", "/v1/repos/hive/t27/claims/9200", "").mustCode(t, 200, ""); m["export"] != nil {
		t.Fatalf("export before any attempt: %v, want null", m["export"])
	}
	st := dispatch.ExportState{State: "refused", Refusal: "workflow: touches .github/workflows/ci.yml", Attempts: 2,
		LastError: "GET /queen/export/9200: status 504", Version: 2}
	if _, err := e.ledger.RecordExport(context.Background(), "hive/t27", 9200, st, 1, audit.Export("test")); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"state": "refused", "refusal": st.Refusal, "attempts": 2.0, "last_error": st.LastError, "version": 2.0}
	check := func(where string, v any) {
		t.Helper()
		got, _ := v.(map[string]any)
		if len(got) != len(want) {
			t.Fatalf("%s: export %v, want %v", where, v, want)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: export.%s = %v, want %v", where, k, got[k], w)
			}
		}
	}
	check("GET claim", e.req(t, "GET", "/v1/repos/hive/t27/claims/9200", "").mustCode(t, 200, "")["export"])
	var list struct {
		Claims []map[string]any `json:"claims"`
	}
	e.req(t, "GET", "/v1/claims?repo=hive/t27", "").decode(t, &list)
	if len(list.Claims) != 1 {
		t.Fatalf("list: %v", list)
	}
	check("GET list", list.Claims[0]["export"])
}

// The export runs in the workers: with none running with QUEEN_EXPORT_URL
// a push request is refused, naming the variable, and nothing is queued.
func TestExportPushWithoutAnExportWorker(t *testing.T) {
	e := newEnv(t, envOpts{enqueue: true, noExportWorker: true})
	e.put(t, "hive/t27", 9200, acceptedAtHead)
	const route = "/v1/repos/hive/t27/exports/9200/push"
	m := e.req(t, "POST", route, "").mustCode(t, 409, "QUEEN_EXPORT_URL")
	if m["error"] != "QUEEN_EXPORT_URL is not set on any running worker" {
		t.Fatalf("answer %v", m)
	}
	if q := e.queued(t); len(q) != 0 {
		t.Fatalf("queued %v with no worker to run it", q)
	}
	// A worker with the export starts.
	if err := (export.Workers{RDB: e.redis.Client()}).Announce(context.Background(), "worker-1"); err != nil {
		t.Fatal(err)
	}
	e.req(t, "POST", route, "").mustCode(t, 202, "")
	if q := e.queued(t); len(q) != 1 {
		t.Fatalf("queue %v, want the push", q)
	}
	// Redis cannot say: unavailable, not a decision.
	e.redis.Stop()
	e.req(t, "POST", route, "").mustCode(t, 503, "")
}

func TestNewNeedsExportWorkersWithAnEnqueuer(t *testing.T) {
	e := newEnv(t, envOpts{})
	_, err := api.New(api.Config{Ledger: e.ledger, Token: token, Enqueuer: tasks.NewEnqueuer(nil, nil)})
	if err == nil || !strings.Contains(err.Error(), "ExportWorkers") {
		t.Fatalf("New with an Enqueuer and no ExportWorkers: %v", err)
	}
}

// The export holds QUEEN_EXPORT_REPO's work only: a push request for any
// other repository is a 400 naming repo (and the export's), whatever that
// repository's row says, and nothing is queued. The repository is compared
// as GitHub does, case aside.
func TestExportPushIsScopedToTheExportRepository(t *testing.T) {
	e := newEnv(t, envOpts{enqueue: true})
	e.put(t, "hive/t27", 9200, acceptedAtHead)
	e.put(t, "hive/b28", 9200, acceptedAtHead)
	e.put(t, "hive/t27x", 9200, acceptedAtHead)
	for _, other := range []string{"hive/b28", "hive/t27x"} {
		for _, body := range []string{"", `{"dry_run": true}`} {
			m := e.req(t, "POST", "/v1/repos/"+other+"/exports/9200/push", body).mustCode(t, 400, "repo")
			if want := other + " is not the export's repository hive/t27 (QUEEN_EXPORT_REPO)"; !strings.Contains(m["error"].(string), want) {
				t.Errorf("push of %s: %v, want it to say %q", other, m["error"], want)
			}
		}
	}
	if q := e.queued(t); len(q) != 0 {
		t.Fatalf("refused pushes queued %v", q)
	}
	e.req(t, "POST", "/v1/repos/Hive/T27/exports/9200/push", "").mustCode(t, 202, "")

	// A webhook that does not know the export's repository pushes nothing.
	e = newEnv(t, envOpts{enqueue: true, exportRepo: "-"})
	e.put(t, "hive/t27", 9200, acceptedAtHead)
	e.req(t, "POST", "/v1/repos/hive/t27/exports/9200/push", "").mustCode(t, 409, "QUEEN_EXPORT_REPO")
	if q := e.queued(t); len(q) != 0 {
		t.Fatalf("queued %v without QUEEN_EXPORT_REPO", q)
	}
}
