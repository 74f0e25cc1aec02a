package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/queen-app/queen-app/internal/contract"
	"github.com/queen-app/queen-app/internal/githubtest"
)

// checkContract holds every request the built binaries sent the sandbox
// GitHub since gh.Record, and every answer, to GitHub's published
// contracts: GraphQL queries and answers to the schema, REST requests to a documented
// operation and answers to its documented response.
func checkContract(t *testing.T, gh *githubtest.Server) (graphql, rest int) {
	t.Helper()
	schema, err := contract.LoadGraphQL()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := contract.LoadREST()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range gh.Recorded() {
		if e.Path == "/graphql" {
			graphql++
			var q struct {
				Query     string         `json:"query"`
				Variables map[string]any `json:"variables"`
			}
			if err := json.Unmarshal(e.Body, &q); err != nil {
				t.Errorf("GraphQL request body: %v", err)
				continue
			}
			if err := schema.Validate(q.Query, q.Variables); err != nil {
				t.Errorf("GraphQL query: %v", err)
			}
			if err := schema.ValidateAnswer(q.Query, e.RespBody); err != nil {
				t.Errorf("GraphQL answer: %v", err)
			}
			continue
		}
		rest++
		if err := spec.CheckRequest(e); err != nil {
			t.Errorf("%v", err)
		}
		if err := spec.CheckResponse(e); err != nil {
			t.Errorf("%v", err)
		}
	}
	t.Logf("contract: %d GraphQL and %d REST exchanges checked", graphql, rest)
	return graphql, rest
}

// TestContractExportEndToEnd: the worker exporting accepted branches (PR
// list, create, installation token, installations) sends only documented
// requests and gets only documented answers.
func TestContractExportEndToEnd(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.gh.Record()
	x.webhook()
	heads := map[int64]string{}
	for i := int64(201); i <= 203; i++ {
		heads[i] = x.branch(i, map[string]string{fmt.Sprintf("src/c%d.rs", i): "fn c() {}\n"})
		x.accept(i, heads[i], map[string]any{"owned_paths": []string{"src/"}})
	}
	x.startWorker()
	x.waitStates("pr_opened", exIssues(heads)...)
	if _, rest := checkContract(t, x.gh); rest == 0 || x.gh.Count(githubtest.RouteCreatePull) < 3 {
		t.Errorf("%d REST requests, %d PR creations recorded; want the export's", rest, x.gh.Count(githubtest.RouteCreatePull))
	}
}

// TestContractFreeEndToEnd: the worker reading PR states for its sweep
// (GraphQL) and for a webhook sends only documented requests and queries.
func TestContractFreeEndToEnd(t *testing.T) {
	t.Parallel()
	// One sweep at the worker's start; the next is an hour away.
	f := newFreeStack(t, map[string]string{frFlag: "on", "QUEEN_SWEEP_INTERVAL": "1h"})
	f.gh.Record()
	f.webhook()
	f.acceptRow(9211)
	f.closedPR(9211, 601, false)
	f.startWorker(nil)
	eventually(t, frLimit, "a claim sweep ran", func() bool {
		return f.metric("queen_sweep_runs_total", `sweep="claim"`) >= 1
	})
	f.waitFreed(9211)
	f.acceptRow(9212)
	f.closedPR(9212, 602, false)
	id := f.deliverPR(9212, 602, "closed", false, "d-contract-1")
	f.waitFreed(9212)
	f.waitDone(id)
	if graphql, rest := checkContract(t, f.gh); graphql == 0 || rest == 0 {
		t.Errorf("%d GraphQL and %d REST requests recorded; want the sweep's and the webhook's", graphql, rest)
	}
}
