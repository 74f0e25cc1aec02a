package githubapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/contract"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/sandbox"
)

// gqlRequest is a recorded GraphQL request's body, and the answer.
type gqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
	answer    []byte
}

func graphqlRequests(t *testing.T, ex []sandbox.Exchange) []gqlRequest {
	t.Helper()
	var out []gqlRequest
	for _, e := range ex {
		if e.Path != "/graphql" {
			continue
		}
		var r gqlRequest
		if err := json.Unmarshal(e.Body, &r); err != nil {
			t.Fatalf("GraphQL request body: %v", err)
		}
		r.answer = e.RespBody
		out = append(out, r)
	}
	return out
}

func branches(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("queen-%d", i+1)
	}
	return out
}

// TestContractGraphQLQueriesValidate: every query BatchPRStates sends, for
// 1, 2, 100 and 101 branches and with a branch past one page, validates
// with its variables against GitHub's published schema, and the sandbox's
// answer has the shape the schema gives it.
func TestContractGraphQLQueriesValidate(t *testing.T) {
	schema := graphQLContract(t)
	s, a := setup(t)
	for range 101 {
		s.AddPR(repo, githubtest.PR{HeadRef: "queen-1", HeadRepo: repo, State: "closed"})
	}
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-2", HeadRepo: repo, State: "open"})
	s.Record()
	for _, n := range []int{1, 2, 100, 101} {
		res := a.BatchPRStates(context.Background(), inst, "hive", "t27", branches(n))
		if r := res["queen-1"]; r.Err != nil || r.State.ClosedUnmerged != 101 {
			t.Fatalf("%d branches: queen-1 = %+v, want 101 closed PRs read", n, r)
		}
	}
	reqs := graphqlRequests(t, s.Recorded())
	// One query each for 1, 2 and 100 branches, two for 101.
	if len(reqs) != 5 {
		t.Fatalf("GraphQL requests = %d, want 5", len(reqs))
	}
	for i, r := range reqs {
		if err := schema.Validate(r.Query, r.Variables); err != nil {
			t.Errorf("query %d (%d variables): %v", i, len(r.Variables), err)
		}
		if err := schema.ValidateAnswer(r.Query, r.answer); err != nil {
			t.Errorf("answer %d: %v", i, err)
		}
	}
}

// TestContractGraphQLRefusesBrokenQueries shows the check above is not
// vacuous: the app's own query, broken by a bad field, a bad enum value,
// a wrong variable type or a wrong variable value, is refused.
func TestContractGraphQLRefusesBrokenQueries(t *testing.T) {
	schema := graphQLContract(t)
	s, a := setup(t)
	s.Record()
	a.BatchPRStates(context.Background(), inst, "hive", "t27", branches(2))
	reqs := graphqlRequests(t, s.Recorded())
	if len(reqs) != 1 {
		t.Fatalf("GraphQL requests = %d, want 1", len(reqs))
	}
	good := reqs[0]
	if err := schema.Validate(good.Query, good.Variables); err != nil {
		t.Fatalf("the unbroken query is refused: %v", err)
	}
	replace := func(old, new string) string {
		if !strings.Contains(good.Query, old) {
			t.Fatalf("the app's query no longer holds %q: update this test", old)
		}
		return strings.Replace(good.Query, old, new, 1)
	}
	vars := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range good.Variables {
			m[k] = v
		}
		m[k] = v
		return m
	}
	cases := map[string]struct {
		query string
		vars  map[string]any
	}{
		"bad field":           {replace("headRefOid", "headRefSha"), good.Variables},
		"bad enum value":      {replace("MERGED", "LANDED"), good.Variables},
		"wrong variable type": {replace("$owner:String!", "$owner:Int!"), good.Variables},
		"wrong value type":    {good.Query, vars("owner", 42)},
		"missing variable":    {good.Query, vars("h1", nil)},
	}
	for name, c := range cases {
		if err := schema.Validate(c.query, c.vars); err == nil {
			t.Errorf("%s: the broken query passed", name)
		}
	}

	// And the answer check: the sandbox's answer passes, broken ones fail.
	if err := schema.ValidateAnswer(good.Query, good.answer); err != nil {
		t.Fatalf("the unbroken answer is refused: %v", err)
	}
	answers := map[string]string{
		"bad enum value":   `{"data":{"repository":{"b0":{"nodes":[{"number":1,"state":"DONE","mergedAt":null,"createdAt":"2026-01-01T00:00:00Z","headRefOid":"a","headRepository":null}],"pageInfo":{"hasNextPage":false}},"b1":{"nodes":[],"pageInfo":{"hasNextPage":false}}}}}`,
		"number a string":  `{"data":{"repository":{"b0":{"nodes":[{"number":"1","state":"OPEN","mergedAt":null,"createdAt":"2026-01-01T00:00:00Z","headRefOid":"a","headRepository":null}],"pageInfo":{"hasNextPage":false}},"b1":{"nodes":[],"pageInfo":{"hasNextPage":false}}}}}`,
		"pageInfo missing": `{"data":{"repository":{"b0":{"nodes":[]},"b1":{"nodes":[],"pageInfo":{"hasNextPage":false}}}}}`,
		"field not asked":  `{"data":{"repository":{"b0":{"nodes":[],"pageInfo":{"hasNextPage":false},"totalCount":0},"b1":{"nodes":[],"pageInfo":{"hasNextPage":false}}}}}`,
		"null non-null":    `{"data":{"repository":{"b0":{"nodes":[],"pageInfo":null},"b1":{"nodes":[],"pageInfo":{"hasNextPage":false}}}}}`,
	}
	for name, a := range answers {
		if err := schema.ValidateAnswer(good.Query, []byte(a)); err == nil {
			t.Errorf("answer %s: passed", name)
		}
	}
}

// graphQLContract is GitHub's published GraphQL schema, vendored.
func graphQLContract(t *testing.T) *contract.GraphQL {
	t.Helper()
	schema, err := contract.LoadGraphQL()
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// restContract is GitHub's published REST description, vendored.
func restContract(t *testing.T) *contract.REST {
	t.Helper()
	spec, err := contract.LoadREST()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// checkREST holds a recorded REST exchange to the documented operation:
// the request, and the answer for its status.
func checkREST(t *testing.T, spec *contract.REST, e sandbox.Exchange) {
	t.Helper()
	if err := spec.CheckRequest(e); err != nil {
		t.Errorf("%v", err)
	}
	if err := spec.CheckResponse(e); err != nil {
		t.Errorf("%v", err)
	}
}
