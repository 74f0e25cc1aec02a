package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/tasks"
)

// The export holds QUEEN_EXPORT_REPO's work only: an export:push naming
// another repository, installed and with its own row accepted at the same
// head, is refused for good (archived with its reason) before anything is
// read, pushed or recorded; the export's queen-N never reaches it.
func TestExportPushOfAnotherRepositoryIsRefused(t *testing.T) {
	e := newEnv(t, options{export: true})
	const other = "queen/b28"
	if err := e.reg.Replace(e.ctx, []installs.Installation{{ID: instID, Repos: []string{repo, other}}}, true); err != nil {
		t.Fatal(err)
	}
	head := e.accepted(71, map[string]string{"src/private.rs": "fn private() {}\n"})
	patch := map[string]json.RawMessage{}
	for k, v := range map[string]string{"started": "true", "finished_at": `"2026-10-11T12:20:00Z"`,
		"review_state": `"accept"`, "judged_head": `"` + head + `"`} {
		patch[k] = json.RawMessage(v)
	}
	if _, err := e.ledger.Upsert(context.Background(), other, 71, patch, audit.API("test")); err != nil {
		t.Fatal(err)
	}
	task, err := tasks.NewExportPush(tasks.ExportPushPayload{Repo: other, Issue: 71, Head: head, Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	err = e.w.ExportPush(e.ctx, task)
	if !retry.IsPermanent(err) || !strings.Contains(err.Error(), "repo queen/b28 is not the export's repository queen/t27 (QUEEN_EXPORT_REPO)") {
		t.Fatalf("push of %s#71: %v, want a permanent refusal naming both repositories", other, err)
	}
	if e.pushes() != 0 || len(e.gh.PRs(other)) != 0 || e.exp.Requests("/queen/export/71") != 0 {
		t.Fatalf("%d pushes, %d PRs, %d bundle reads: nothing may be done for another repository",
			e.pushes(), len(e.gh.PRs(other)), e.exp.Requests("/queen/export/71"))
	}
	rec, err := e.ledger.Get(context.Background(), other, 71)
	if err != nil || rec.Export != nil {
		t.Fatalf("%s#71: %v, export %+v; want nothing recorded", other, err, rec.Export)
	}
}
