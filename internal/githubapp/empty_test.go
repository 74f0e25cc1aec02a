package githubapp_test

import (
	"context"
	"net/http"
	"testing"
)

// A repository with no commit has no branch: GitHub's 409 "Git Repository
// is empty." to the ref read is that answer, in GitHub's documented shape.
// Any other 409 decides nothing.
func TestBranchHeadOfAnEmptyRepository(t *testing.T) {
	spec := restContract(t)
	s, a := setup(t)
	ctx := context.Background()
	s.EmptyRepo(repo)
	s.Record()
	if got, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-5"); err != nil || got != "" {
		t.Fatalf("BranchHead in an empty repository = %q, %v; want \"\", nil", got, err)
	}
	rec := s.Recorded()
	if len(rec) == 0 || rec[len(rec)-1].Status != http.StatusConflict {
		t.Fatalf("the sandbox did not answer 409: %+v", rec)
	}
	for _, e := range rec {
		if err := spec.CheckResponse(e); err != nil {
			t.Errorf("%v", err)
		}
	}
	s.AnswerNext("/repos/hive/t27/git", http.StatusConflict, []byte(`{"message":"Conflict","documentation_url":"https://docs.github.com/rest"}`), 1)
	if got, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-5"); err == nil {
		t.Fatalf("BranchHead on another 409 = %q, nil; want an error", got)
	}
}
