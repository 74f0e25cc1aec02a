package githubapp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A PR opened under a transferred repository's old name is opened on the
// repository as it is now: GitHub answers the POST 307 to
// /repositories/{id}/pulls, the request is sent again there with its
// body, and the PR's head is the repository under its new owner. Opening
// it again answers the PR already open. Every exchange is GitHub's
// documented request and answer.
func TestCreatePRAfterATransfer(t *testing.T) {
	s, a := setup(t)
	ctx := context.Background()
	s.SetBranch(repo, "queen-5", strings.Repeat("c", 40))
	s.RenameRepo(repo, "bees/t28")
	s.Record()
	n, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-5", "Fix the compiler", "Closes #5")
	if err != nil {
		t.Fatal(err)
	}
	prs := s.PRs("bees/t28")
	if len(prs) != 1 || prs[0].Number != n || prs[0].HeadRepo != "bees/t28" || prs[0].HeadRef != "queen-5" {
		t.Fatalf("PRs of bees/t28: %+v, want #%d from bees:queen-5", prs, n)
	}
	var redirected bool
	for _, e := range s.Recorded() {
		if e.Method == http.MethodPost && e.Path == "/repos/hive/t27/pulls" && e.Status == http.StatusTemporaryRedirect {
			redirected = true
		}
	}
	if !redirected {
		t.Fatal("the POST under the old name was not answered 307: the test proves nothing")
	}
	again, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-5", "Fix the compiler", "Closes #5")
	if err != nil || again != n || len(s.PRs("bees/t28")) != 1 {
		t.Fatalf("opened again: #%d %v, %d PRs; want #%d and still one", again, err, len(s.PRs("bees/t28")), n)
	}
	if got := s.PRs("bees/t28")[0]; got.HeadRepo != "bees/t28" {
		t.Fatalf("head repository %q", got.HeadRepo)
	}
	spec := restContract(t)
	for _, e := range s.Recorded() {
		checkREST(t, spec, e)
	}
}
