package sandbox_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
)

func jwtFor(t *testing.T, keyPEM []byte, alg string, iss int64) string {
	t.Helper()
	block, _ := pem.Decode(keyPEM)
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now().Unix()
	signing := enc(map[string]string{"alg": alg, "typ": "JWT"}) + "." +
		enc(map[string]any{"iat": now - 30, "exp": now + 90, "iss": fmt.Sprint(iss)})
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func do(t *testing.T, method, url, auth string, body any) (*http.Response, map[string]any, []any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var obj map[string]any
	var arr []any
	if json.Unmarshal(raw, &obj) != nil {
		_ = json.Unmarshal(raw, &arr)
	}
	return resp, obj, arr
}

func mint(t *testing.T, s *githubtest.Server, inst int64) string {
	t.Helper()
	resp, obj, _ := do(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", s.URL(), inst),
		"Bearer "+jwtFor(t, s.Key(), "RS256", s.AppID()), nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("mint: %d %v", resp.StatusCode, obj)
	}
	return "token " + obj["token"].(string)
}

func TestMintAcceptsOnlyTheAppsRS256JWT(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	other := githubtest.New(t)
	url := s.URL() + "app/installations/1/access_tokens"
	for name, auth := range map[string]string{
		"none":      "",
		"other key": "Bearer " + jwtFor(t, other.Key(), "RS256", s.AppID()),
		"other app": "Bearer " + jwtFor(t, s.Key(), "RS256", s.AppID()+1),
		"alg":       "Bearer " + jwtFor(t, s.Key(), "RS512", s.AppID()),
	} {
		if resp, _, _ := do(t, "POST", url, auth, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
	}
	if s.Mints() != 0 {
		t.Fatalf("mints = %d after refused JWTs", s.Mints())
	}
	resp, obj, _ := do(t, "POST", url, "Bearer "+jwtFor(t, s.Key(), "RS256", s.AppID()), nil)
	exp, _ := time.Parse(time.RFC3339, fmt.Sprint(obj["expires_at"]))
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(fmt.Sprint(obj["token"]), "ghs_") || exp.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("mint = %d %v", resp.StatusCode, obj)
	}
	if s.Mints() != 1 || s.Count(githubtest.RouteMint) != 5 {
		t.Errorf("mints = %d, requests = %d; want 1 and 5", s.Mints(), s.Count(githubtest.RouteMint))
	}
}

func TestPullsHeadFilterLikeGitHub(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	tok := mint(t, s, 1)
	for i := 1; i <= 5; i++ {
		s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", State: "closed"})
	}
	s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-2", HeadRepo: "hive/t27", State: "open"})
	s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-1", HeadRepo: "fork/t27", State: "open"})
	base := s.URL() + "repos/hive/t27/pulls"

	_, _, all := do(t, "GET", base+"?head=queen-1&state=all", tok, nil)
	if len(all) != 7 {
		t.Errorf("bare head returned %d PRs, want all 7 (GitHub ignores it)", len(all))
	}
	_, _, open := do(t, "GET", base, tok, nil)
	if len(open) != 2 {
		t.Errorf("default state returned %d PRs, want the 2 open", len(open))
	}
	resp, _, page := do(t, "GET", base+"?head=hive:queen-1&state=all&per_page=2", tok, nil)
	if len(page) != 2 || !strings.Contains(resp.Header.Get("Link"), `&page=2&per_page=2&state=all>; rel="next"`) ||
		!strings.Contains(resp.Header.Get("Link"), `&page=3&per_page=2&state=all>; rel="last"`) {
		t.Errorf("page 1: %d PRs, Link %q", len(page), resp.Header.Get("Link"))
	}
	pr := page[0].(map[string]any)
	head := pr["head"].(map[string]any)
	if head["label"] != "hive:queen-1" || head["repo"].(map[string]any)["full_name"] != "hive/t27" || pr["merged_at"] != nil {
		t.Errorf("PR shape: %v", pr)
	}
	if _, has := pr["merged"]; has {
		t.Error("list items carry no merged field on GitHub")
	}
	if resp, _, _ := do(t, "GET", s.URL()+"repos/other/repo/pulls", tok, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("repository outside the installation: %d, want 404", resp.StatusCode)
	}
	if resp, _, _ := do(t, "GET", base, "token ghs_forged", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged token: %d, want 401", resp.StatusCode)
	}
}

func TestGraphQLTakesBranchesOnlyAsVariables(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	tok := mint(t, s, 1)
	s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", State: "open"})
	inline := `query($owner:String!,$name:String!) { repository(owner:$owner,name:$name) {
		b0: pullRequests(headRefName:"queen-1", states:[OPEN,CLOSED,MERGED], first:100) { nodes { number } pageInfo { hasNextPage } } } }`
	_, obj, _ := do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": inline, "variables": map[string]string{"owner": "hive", "name": "t27"}})
	if obj["errors"] == nil || obj["data"] != nil {
		t.Errorf("inline branch answered %v, want errors", obj)
	}
	good := strings.Replace(inline, `"queen-1"`, `$h0`, 1)
	good = strings.Replace(good, `$name:String!)`, `$name:String!,$h0:String!)`, 1)
	_, obj, _ = do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": good, "variables": map[string]string{"owner": "hive", "name": "t27", "h0": "queen-1"}})
	b0 := obj["data"].(map[string]any)["repository"].(map[string]any)["b0"].(map[string]any)
	if n := len(b0["nodes"].([]any)); n != 1 || obj["errors"] != nil {
		t.Errorf("variable form answered %v", obj)
	}
	tooMany := strings.Replace(good, "first:100", "first:101", 1)
	_, obj, _ = do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": tooMany, "variables": map[string]string{"owner": "hive", "name": "t27", "h0": "queen-1"}})
	if obj["errors"] == nil {
		t.Error("first:101 accepted; GitHub caps it at 100")
	}
	if s.Count(githubtest.RouteGraphQL) != 3 {
		t.Errorf("GraphQL count = %d, want 3", s.Count(githubtest.RouteGraphQL))
	}
}

// A PR's creation time and head commit come back as GitHub gives them:
// created_at and head.sha in REST, createdAt and headRefOid in GraphQL
// only when the query selects them. Closing a PR (replacing it) keeps the
// time it was opened.
func TestPullsCarryCreationTimeAndHeadCommit(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	tok := mint(t, s, 1)
	opened := time.Date(2026, 10, 11, 9, 30, 0, 0, time.UTC)
	head := strings.Repeat("ab", 20)
	n := s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", HeadSHA: head, State: "open", CreatedAt: opened})
	s.AddPR("hive/t27", githubtest.PR{Number: n, HeadRef: "queen-1", HeadRepo: "hive/t27", HeadSHA: head, State: "closed"})
	before := time.Now().UTC().Truncate(time.Second)
	fresh := s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", State: "open"})
	if got := s.PRs("hive/t27"); got[0].CreatedAt != opened || got[0].State != "closed" || got[1].CreatedAt.Before(before) {
		t.Fatalf("PRs %+v: want #%d closed and still opened at %s, #%d opened now", got, n, opened, fresh)
	}

	_, _, list := do(t, "GET", s.URL()+"repos/hive/t27/pulls?head=hive:queen-1&state=all", tok, nil)
	byNumber := map[float64]map[string]any{}
	for _, item := range list {
		pr := item.(map[string]any)
		byNumber[pr["number"].(float64)] = pr
	}
	pr := byNumber[float64(n)]
	if pr["created_at"] != "2026-10-11T09:30:00Z" || pr["head"].(map[string]any)["sha"] != head {
		t.Errorf("REST #%d: created_at %v head %v", n, pr["created_at"], pr["head"])
	}

	query := func(fields string) map[string]any {
		q := `query($owner:String!,$name:String!,$h0:String!) { repository(owner:$owner,name:$name) {
			b0: pullRequests(headRefName:$h0, states:[OPEN,CLOSED,MERGED], first:100) { nodes { ` + fields + ` } pageInfo { hasNextPage } } } }`
		_, obj, _ := do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": q, "variables": map[string]string{"owner": "hive", "name": "t27", "h0": "queen-1"}})
		b0 := obj["data"].(map[string]any)["repository"].(map[string]any)["b0"].(map[string]any)
		return b0["nodes"].([]any)[0].(map[string]any)
	}
	if node := query("number state mergedAt createdAt headRefOid headRepository { nameWithOwner }"); node["createdAt"] != "2026-10-11T09:30:00Z" || node["headRefOid"] != head {
		t.Errorf("GraphQL node %v", node)
	}
	if node := query("number state mergedAt headRepository { nameWithOwner }"); node["createdAt"] != nil || node["headRefOid"] != nil {
		t.Errorf("GraphQL answered fields the query did not select: %v", node)
	}
}

func TestFaults(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	s.SetIssue("hive/t27", 3, true, "t")
	tok := mint(t, s, 1)
	url := s.URL() + "repos/hive/t27/issues/3"

	s.FailAfter(1, "/repos/", http.StatusServiceUnavailable, http.Header{"Retry-After": {"7"}}, 2)
	var codes []int
	for range 4 {
		resp, _, _ := do(t, "GET", url, tok, nil)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "7" {
			t.Error("fault header missing")
		}
	}
	if fmt.Sprint(codes) != "[200 503 503 200]" {
		t.Errorf("codes = %v, want [200 503 503 200]", codes)
	}
	s.SecondaryRateLimit(1, 30*time.Second)
	resp, obj, _ := do(t, "GET", url, tok, nil)
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "30" || obj["documentation_url"] != githubtest.SecondaryRateLimitDocs {
		t.Errorf("secondary: %d %v %v", resp.StatusCode, resp.Header, obj)
	}
	s.Down(true)
	if resp, _, _ := do(t, "GET", url, tok, nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("down: %d", resp.StatusCode)
	}
	s.Down(false)
	if resp, obj, _ := do(t, "GET", url, tok, nil); resp.StatusCode != 200 || obj["state"] != "open" || obj["title"] != "t" {
		t.Errorf("up again: %d %v", resp.StatusCode, obj)
	}
	if s.Count(githubtest.RouteIssue) != 7 {
		t.Errorf("issue requests counted %d, want 7", s.Count(githubtest.RouteIssue))
	}
}

// An open-ended fault lasts until ClearFaults, which also ends the branch
// faults and Down.
func TestClearFaultsEndsEveryFault(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	s.SetIssue("hive/t27", 3, true, "t")
	s.AddPR("hive/t27", githubtest.PR{HeadRef: "queen-1", HeadRepo: "hive/t27", State: "open"})
	tok := mint(t, s, 1)
	issue := s.URL() + "repos/hive/t27/issues/3"
	pulls := s.URL() + "repos/hive/t27/pulls?state=all&head=hive:queen-1"
	query := `query($owner:String!,$name:String!,$h0:String!) { repository(owner:$owner,name:$name) {
		b0: pullRequests(headRefName:$h0, states:[OPEN,CLOSED,MERGED], first:100) { nodes { number } pageInfo { hasNextPage } } } }`
	graphql := func() map[string]any {
		_, obj, _ := do(t, "POST", s.GraphQLURL(), tok, map[string]any{"query": query,
			"variables": map[string]string{"owner": "hive", "name": "t27", "h0": "queen-1"}})
		return obj
	}

	s.FailNext("/repos/hive/t27/issues", http.StatusGatewayTimeout, http.Header{}, -1)
	for i := range 5 {
		if resp, _, _ := do(t, "GET", issue, tok, nil); resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("request %d of an open-ended fault: %d, want 504", i+1, resp.StatusCode)
		}
	}
	s.UnreadablePRs("queen-1")
	if resp, _, _ := do(t, "GET", pulls, tok, nil); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("unreadable branch: %d, want 500", resp.StatusCode)
	}
	if obj := graphql(); obj["errors"] == nil {
		t.Fatalf("unreadable branch over GraphQL: %v, want errors", obj)
	}

	s.ClearFaults()
	if resp, _, _ := do(t, "GET", issue, tok, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("after ClearFaults: %d, want 200", resp.StatusCode)
	}
	if resp, _, list := do(t, "GET", pulls, tok, nil); resp.StatusCode != http.StatusOK || len(list) != 1 {
		t.Errorf("pulls after ClearFaults: %d, %d PRs; want 200 and 1", resp.StatusCode, len(list))
	}
	if obj := graphql(); obj["errors"] != nil {
		t.Errorf("GraphQL after ClearFaults: %v", obj)
	}

	s.SecondaryRateLimit(-1, time.Second)
	s.Down(true)
	s.ClearFaults()
	if resp, _, _ := do(t, "GET", issue, tok, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("after clearing a limit and Down: %d, want 200", resp.StatusCode)
	}
}
