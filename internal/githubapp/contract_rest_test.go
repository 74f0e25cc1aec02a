package githubapp_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// TestContractRESTRequestsAndAnswers drives the app through its REST paths
// against the sandbox and holds every request to a documented operation
// (method, path, query parameters and values, body) and every answer to
// the documented response for its status.
func TestContractRESTRequestsAndAnswers(t *testing.T) {
	spec := restContract(t)
	s, a := setup(t)
	ctx := context.Background()
	s.SetIssue(repo, 5, true, "Fix the compiler")
	s.SetBranch(repo, "queen-5", strings.Repeat("c", 40))
	for range 101 {
		s.AddPR(repo, githubtest.PR{HeadRef: "queen-9", HeadRepo: repo, State: "closed", MergedAt: at("2026-10-01T00:00:00Z")})
	}
	now := time.Now().UTC().Truncate(time.Second)
	id := s.AddDelivery(githubtest.Delivery{GUID: "g1", DeliveredAt: now, StatusCode: 503, Event: "pull_request", Action: "closed"})
	s.Record()

	if _, err := a.Installations(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.InstallationRepos(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if _, err := a.InstallationToken(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PRsForBranch(ctx, inst, "hive", "t27", "queen-9"); err != nil { // two pages
		t.Fatal(err)
	}
	if _, err := a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-none"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-5"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-6"); err != nil { // 404
		t.Fatal(err)
	}
	if _, _, err := a.Issue(ctx, inst, "hive", "t27", 5); err != nil {
		t.Fatal(err)
	}
	_, _, _ = a.Issue(ctx, inst, "hive", "t27", 99) // 404
	if _, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-5", "Fix the compiler", "Closes #5"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-5", "Fix the compiler", "Closes #5"); err != nil { // 422 exists
		t.Fatal(err)
	}
	_, _ = a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-77", "x", "y") // 422 no head
	if _, err := a.ListDeliveries(ctx, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.Redeliver(ctx, id); err != nil {
		t.Fatal(err)
	}

	seen := map[string]bool{}
	rest := 0
	for _, e := range s.Recorded() {
		if e.Path == "/graphql" {
			continue
		}
		rest++
		op, err := spec.Operation(e)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		seen[op] = true
		checkREST(t, spec, e)
	}
	want := []string{
		"POST /app/installations/{installation_id}/access_tokens", "GET /app/installations", "GET /installation/repositories",
		"GET /repos/{owner}/{repo}/pulls", "POST /repos/{owner}/{repo}/pulls", "GET /repos/{owner}/{repo}/git/ref/{ref}",
		"GET /repos/{owner}/{repo}/issues/{issue_number}", "GET /app/hook/deliveries", "POST /app/hook/deliveries/{delivery_id}/attempts",
	}
	var missing []string
	for _, op := range want {
		if !seen[op] {
			missing = append(missing, op)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the drive sent no %v (of %d REST requests)", missing, rest)
	}
}
