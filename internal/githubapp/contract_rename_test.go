package githubapp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// TestContractRenamedRepository: after a rename and a transfer, what the
// app sends under the old name (and where GitHub's 301 sends it) and what
// the sandbox answers are GitHub's documented requests and answers.
func TestContractRenamedRepository(t *testing.T) {
	spec := restContract(t)
	schema := graphQLContract(t)
	ctx := context.Background()
	s, a := setup(t)
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-1", HeadRepo: repo, State: "closed"})
	s.SetIssue(repo, 5, true, "Fix the compiler")
	s.SetBranch(repo, "queen-5", strings.Repeat("c", 40))
	s.RenameRepo(repo, "hive/t28")
	s.RenameRepo("hive/t28", "bees/t28")
	s.Record()
	if _, err := a.PRsForBranch(ctx, inst, "hive", "t27", "queen-1"); err != nil {
		t.Fatal(err)
	}
	a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1"})
	if _, _, err := a.Issue(ctx, inst, "hive", "t27", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-5"); err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Recorded() {
		if e.Path == "/graphql" {
			continue
		}
		checkREST(t, spec, e)
	}
	for _, r := range graphqlRequests(t, s.Recorded()) {
		if err := schema.Validate(r.Query, r.Variables); err != nil {
			t.Errorf("%v", err)
		}
		if err := schema.ValidateAnswer(r.Query, r.answer); err != nil {
			t.Errorf("%v", err)
		}
	}
}
