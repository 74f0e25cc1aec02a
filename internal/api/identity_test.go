package api_test

import (
	"net/http"
	"testing"
)

// One branch per row: a PUT naming another than queen-<issue> is refused
// with the field named, and nothing is written. Before, the export opened a
// PR on queen-<issue> that accept_claim, reading the row's own branch, never
// watched.
func TestPutRefusesAnotherBranch(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.req(t, "PUT", path("hive/t27", 42, "dispatches"), `{"branch": "feature-x", "started": true}`).mustCode(t, http.StatusBadRequest, "branch")
	e.absent(t, "hive/t27", 42)
	e.put(t, "hive/t27", 42, `{"branch": "queen-42", "started": true}`)
	if rec := e.get(t, "hive/t27", 42); rec.BranchName() != "queen-42" {
		t.Fatalf("branch %q", rec.BranchName())
	}
}

// GitHub names are case-insensitive: the Queen's Queen/T27 and a reader's
// queen/t27 are one row, shown with the spelling the Queen wrote.
func TestRepositorySpellingsAreOneRow(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "Queen/T27", 42, `{"started": true}`)
	v := e.req(t, "GET", path("queen/t27", 42, "claims"), "").mustCode(t, http.StatusOK, "")
	if v["repo"] != "Queen/T27" {
		t.Fatalf("repo %v; want the Queen's spelling", v["repo"])
	}
	if got := e.put(t, "QUEEN/t27", 42, `{"send_backs": 1}`); got["outcome"] != "updated" {
		t.Fatalf("second spelling: outcome %v; want the same row updated", got["outcome"])
	}
}
