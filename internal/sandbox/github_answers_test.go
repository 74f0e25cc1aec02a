package sandbox_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/redact"
)

// GitHub's stateless installation tokens: ghs_<APPID>_<JWT>; the old
// opaque form stays one option away, and both authenticate.
func TestMintsStatelessAndLegacyTokens(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	stateless := regexp.MustCompile(fmt.Sprintf(`^token ghs_%d_eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`, s.AppID()))
	tok := mint(t, s, 1)
	if !stateless.MatchString(tok) {
		t.Fatalf("token %q is not ghs_<APPID>_<JWT>", tok)
	}
	if got := redact.String(tok); strings.Contains(got, tok[len("token ghs_4242_"):][:10]) {
		t.Fatalf("the scrubber leaves the JWT of %q: %q", tok, got)
	}
	s.LegacyTokens(true)
	old := mint(t, s, 1)
	if !regexp.MustCompile(`^token ghs_[0-9a-f]{40}$`).MatchString(old) {
		t.Fatalf("legacy token %q", old)
	}
	for _, auth := range []string{tok, old} {
		if resp, _, _ := do(t, "GET", s.URL()+"installation/repositories", auth, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%.30s...: status %d", auth, resp.StatusCode)
		}
	}
}

// GitHub sends x-ratelimit-* on every answer, errors and limits included.
func TestEveryAnswerCarriesRateLimitHeaders(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	tok := mint(t, s, 1)
	s.SecondaryLimit(1, http.StatusTooManyRequests, 0)
	check := func(what string, resp *http.Response, resource string) {
		t.Helper()
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used", "X-RateLimit-Reset"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("%s: no %s", what, h)
			}
		}
		if got := resp.Header.Get("X-RateLimit-Resource"); got != resource {
			t.Errorf("%s: resource %q, want %q", what, got, resource)
		}
	}
	resp, obj, _ := do(t, "GET", s.URL()+"repos/hive/t27/pulls", tok, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "" || obj["message"] != githubtest.SecondaryLimitMessage {
		t.Errorf("429 without Retry-After: %d %v %v", resp.StatusCode, resp.Header, obj)
	}
	check("secondary 429", resp, "core")
	resp, _, _ = do(t, "GET", s.URL()+"repos/hive/t27/pulls", tok, nil)
	check("list", resp, "core")
	resp, _, _ = do(t, "GET", s.URL()+"repos/hive/nope/pulls", "token x", nil)
	check("401", resp, "core")
	s.GraphQLSecondaryLimit(1, http.StatusForbidden, 30*time.Second)
	resp, obj, _ = do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": "{}"})
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Retry-After") != "30" || obj["message"] != githubtest.SecondaryLimitMessage {
		t.Errorf("graphql secondary 403: %d %v %v", resp.StatusCode, resp.Header, obj)
	}
	check("graphql secondary 403", resp, "graphql")
	s.GraphQLSecondaryLimit(1, http.StatusOK, 0)
	resp, obj, _ = do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": "{}"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Retry-After") != "" || !strings.Contains(fmt.Sprint(obj["errors"]), "secondary rate limit") {
		t.Errorf("graphql secondary 200: %d %v %v", resp.StatusCode, resp.Header, obj)
	}
	reset := time.Now().Add(10 * time.Minute)
	s.GraphQLRateLimit(1, reset)
	resp, obj, _ = do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": "{}"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-RateLimit-Remaining") != "0" ||
		resp.Header.Get("X-RateLimit-Reset") != fmt.Sprint(reset.Unix()) || !strings.Contains(fmt.Sprint(obj["errors"]), "RATE_LIMITED") {
		t.Errorf("graphql primary: %d %v %v", resp.StatusCode, resp.Header, obj)
	}
	check("graphql primary", resp, "graphql")
}

// A renamed repository's old name answers as GitHub's does: REST 301 (307
// for a write) to /repositories/{id}/..., which serves it; GraphQL resolves
// the old name and names the new one.
func TestRenamedRepositoryRedirects(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", State: "closed"})
	tok := mint(t, s, 1)
	s.RenameRepo("hive/t27", "bees/t28")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for method, want := range map[string]int{"GET": http.StatusMovedPermanently, "POST": http.StatusTemporaryRedirect} {
		req, _ := http.NewRequest(method, s.URL()+"repos/hive/t27/pulls?state=all", nil)
		req.Header.Set("Authorization", tok)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != want || !regexp.MustCompile(`/repositories/\d+/pulls\?state=all$`).MatchString(loc) {
			t.Errorf("%s old name: %d Location %q, want %d to /repositories/{id}/pulls", method, resp.StatusCode, loc, want)
		}
	}
	resp, _, list := do(t, "GET", s.URL()+"repos/hive/t27/pulls?state=all", tok, nil)
	if resp.StatusCode != http.StatusOK || len(list) != 1 {
		t.Fatalf("following the redirect: %d %v", resp.StatusCode, list)
	}
	pr := list[0].(map[string]any)
	head := pr["head"].(map[string]any)["repo"].(map[string]any)
	base := pr["base"].(map[string]any)["repo"].(map[string]any)
	if head["full_name"] != "bees/t28" || head["id"] != base["id"] {
		t.Errorf("head repo %v, base repo %v: want the new name and one id", head["full_name"], base["full_name"])
	}
	_, obj, _ := do(t, "POST", s.GraphQLURL(), tok, map[string]any{
		"query": `query($owner:String!,$name:String!,$h0:String!) { repository(owner:$owner,name:$name) {` +
			` b0: pullRequests(headRefName:$h0, states:[OPEN,CLOSED,MERGED], first:100) { nodes { number headRepository { nameWithOwner } isCrossRepository } pageInfo { hasNextPage } } } }`,
		"variables": map[string]string{"owner": "hive", "name": "t27", "h0": "queen-1"},
	})
	if got := fmt.Sprint(obj["data"]); !strings.Contains(got, "nameWithOwner:bees/t28") || !strings.Contains(got, "isCrossRepository:false") {
		t.Errorf("GraphQL by the old name: %v", obj)
	}
}

// Redelivering an unknown delivery answers 422, as documented, never 404.
func TestRedeliverUnknownIsValidationFailed(t *testing.T) {
	s := githubtest.New(t)
	resp, obj, _ := do(t, "POST", s.URL()+"app/hook/deliveries/999999/attempts", "Bearer "+jwtFor(t, s.Key(), "RS256", s.AppID()), nil)
	if resp.StatusCode != http.StatusUnprocessableEntity || obj["message"] != "Validation Failed" {
		t.Fatalf("unknown delivery: %d %v, want 422 Validation Failed", resp.StatusCode, obj)
	}
}

// A repository with no commit answers a ref read 409 "Git Repository is
// empty.", as GitHub does, until it has a branch; one with commits answers
// 404 for a branch it lacks.
func TestEmptyRepositoryRefIsConflict(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27", "hive/full")
	tok := mint(t, s, 1)
	s.EmptyRepo("hive/t27")
	s.SetBranch("hive/full", "master", strings.Repeat("a", 40))
	resp, obj, _ := do(t, "GET", s.URL()+"repos/hive/t27/git/ref/heads/queen-1", tok, nil)
	if resp.StatusCode != http.StatusConflict || obj["message"] != "Git Repository is empty." {
		t.Fatalf("empty repository: %d %v, want 409 Git Repository is empty.", resp.StatusCode, obj)
	}
	if resp, _, _ := do(t, "GET", s.URL()+"repos/hive/full/git/ref/heads/queen-1", tok, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing branch of a repository with commits: %d, want 404", resp.StatusCode)
	}
	s.SetBranch("hive/t27", "master", strings.Repeat("b", 40))
	if resp, _, _ := do(t, "GET", s.URL()+"repos/hive/t27/git/ref/heads/queen-1", tok, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after its first branch: %d, want 404", resp.StatusCode)
	}
}
