package githubapp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestContractRateLimitAnswers: the sandbox's rate-limit answers, REST
// (403 and 429, with and without Retry-After, a spent primary limit) and
// GraphQL (the primary as 200, with and without a type, the secondary as
// 200 and 403, the resource limit's partial data),
// are GitHub's documented answers, x-ratelimit-* included.
func TestContractRateLimitAnswers(t *testing.T) {
	spec := restContract(t)
	schema := graphQLContract(t)
	ctx := context.Background()
	s, a := setup(t)
	s.SetIssue(repo, 5, true, "Fix the compiler")
	if _, err := a.InstallationToken(ctx, inst); err != nil {
		t.Fatal(err)
	}
	s.Record()
	s.SecondaryLimit(1, http.StatusForbidden, 0)
	_, _ = a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1")
	s.SecondaryLimit(1, http.StatusTooManyRequests, 30*time.Second)
	_, _, _ = a.Issue(ctx, inst, "hive", "t27", 5)
	b := []string{"queen-1", "queen-2"}
	// A primary limit holds the installation's resource until its reset:
	// each is sent by an App of its own.
	s.GraphQLRateLimit(1, time.Now().Add(time.Hour))
	newApp(t, s).BatchPRStates(ctx, inst, "hive", "t27", b)
	s.SpendRateLimit("graphql", time.Now().Add(time.Hour))
	newApp(t, s).BatchPRStates(ctx, inst, "hive", "t27", b)
	s.SpendRateLimit("core", time.Now().Add(time.Hour))
	_, _ = newApp(t, s).ListBranchPRs(ctx, inst, "hive", "t27", "queen-1")
	s.ClearFaults()
	s.GraphQLSecondaryLimit(1, http.StatusOK, 0)
	a.BatchPRStates(ctx, inst, "hive", "t27", b)
	s.GraphQLSecondaryLimit(1, http.StatusForbidden, 0)
	a.BatchPRStates(ctx, inst, "hive", "t27", b)
	s.ResourceLimit(1)
	a.BatchPRStates(ctx, inst, "hive", "t27", b)

	limited := map[int]int{}
	for _, e := range s.Recorded() {
		limited[e.Status]++
		if e.Path != "/graphql" {
			checkREST(t, spec, e)
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(e.Body, &q); err != nil {
			t.Fatal(err)
		}
		if e.Status == http.StatusOK {
			if err := schema.ValidateAnswer(q.Query, e.RespBody); err != nil {
				t.Errorf("%v", err)
			}
		}
	}
	if limited[http.StatusForbidden] < 3 || limited[http.StatusTooManyRequests] < 1 {
		t.Errorf("answers by status %v: want the 403s and the 429", limited)
	}
}
