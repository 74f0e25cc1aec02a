package githubapp_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
)

const (
	inst = int64(7)
	repo = "hive/t27"
)

func setup(t *testing.T) (*githubtest.Server, *githubapp.App) {
	t.Helper()
	s := githubtest.New(t)
	s.AddInstallation(inst, "hive", repo, "hive/t27-fork")
	return s, newApp(t, s)
}

func newApp(t *testing.T, s *githubtest.Server) *githubapp.App {
	t.Helper()
	a, err := githubapp.New(githubapp.Config{AppID: s.AppID(), PrivateKey: s.Key(), APIURL: s.URL()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func at(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func TestNewRejectsBadConfigNamingTheField(t *testing.T) {
	s := githubtest.New(t)
	secret := "MIIEsecretkeymaterial"
	bad := []byte("-----BEGIN RSA PRIVATE KEY-----\n" + secret + "\n-----END RSA PRIVATE KEY-----\n")
	cases := []struct {
		cfg   githubapp.Config
		field string
	}{
		{githubapp.Config{PrivateKey: s.Key()}, "AppID"},
		{githubapp.Config{AppID: 1}, "PrivateKey"},
		{githubapp.Config{AppID: 1, PrivateKey: bad}, "PrivateKey"},
		{githubapp.Config{AppID: 1, PrivateKey: []byte(secret)}, "PrivateKey"},
		{githubapp.Config{AppID: 1, PrivateKey: s.Key(), APIURL: "ftp://x/"}, "APIURL"},
		{githubapp.Config{AppID: 1, PrivateKey: s.Key(), APIURL: "https:///nohost/"}, "APIURL"},
		{githubapp.Config{AppID: 1, PrivateKey: s.Key(), GraphQLURL: "not a url"}, "GraphQLURL"},
	}
	for _, c := range cases {
		_, err := githubapp.New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("New(%s case) = %v, want an error naming %s", c.field, err, c.field)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "BEGIN") {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

func TestGraphQLURLDerivedFromAPIURL(t *testing.T) {
	s := githubtest.New(t)
	cases := map[string]string{
		"":                                 "https://api.github.com/graphql",
		"https://api.github.com/":          "https://api.github.com/graphql",
		"https://ghe.example/api/v3/":      "https://ghe.example/api/graphql",
		"https://ghe.example/api/v3":       "https://ghe.example/api/graphql",
		"https://ghe.example/gh/api/v3/":   "https://ghe.example/gh/api/graphql",
		"http://127.0.0.1:9999/":           "http://127.0.0.1:9999/graphql",
		"http://127.0.0.1:9999/prefix/":    "http://127.0.0.1:9999/prefix/graphql",
		"https://proxy.example/github/v3/": "https://proxy.example/github/v3/graphql",
	}
	for api, want := range cases {
		a, err := githubapp.New(githubapp.Config{AppID: 1, PrivateKey: s.Key(), APIURL: api})
		if err != nil {
			t.Fatalf("New(%q): %v", api, err)
		}
		if got := a.GraphQLURL(); got != want {
			t.Errorf("APIURL %q: GraphQLURL = %q, want %q", api, got, want)
		}
	}
	a, err := githubapp.New(githubapp.Config{AppID: 1, PrivateKey: s.Key(), APIURL: "https://ghe.example/api/v3/", GraphQLURL: "https://gql.example/x"})
	if err != nil {
		t.Fatal(err)
	}
	if a.GraphQLURL() != "https://gql.example/x" || a.APIURL() != "https://ghe.example/api/v3/" {
		t.Errorf("explicit URLs not kept verbatim: %q %q", a.APIURL(), a.GraphQLURL())
	}
}

func TestInstallationTokenMintedOnceAndReused(t *testing.T) {
	s, a := setup(t)
	ctx := context.Background()
	s.SetIssue(repo, 5, true, "Fix the compiler")
	s.SetBranch(repo, "queen-5", strings.Repeat("a", 40))

	tok1, err := a.InstallationToken(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.PRsForBranch(ctx, inst, "hive", "t27", "queen-5"); err != nil {
				t.Error(err)
			}
			if _, _, err := a.Issue(ctx, inst, "hive", "t27", 5); err != nil {
				t.Error(err)
			}
			if _, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-5"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-5"})
	tok2, err := a.InstallationToken(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Mints(); got != 1 {
		t.Errorf("mints after 27 calls on one installation = %d, want 1", got)
	}
	if tok1 != tok2 || !strings.HasPrefix(tok1, "ghs_") {
		t.Errorf("token not reused: %q then %q", tok1, tok2)
	}

	// A second installation has its own token.
	s.AddInstallation(8, "comb", "comb/x")
	if _, err := a.InstallationRepos(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if got := s.Mints(); got != 2 {
		t.Errorf("mints with two installations = %d, want 2", got)
	}
}

func TestTokenReMintedNearExpiry(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(inst, "hive", repo)
	// ghinstallation refreshes a minute before expiry: a 30s token is always due.
	s.SetTokenTTL(30 * time.Second)
	a := newApp(t, s)
	for range 3 {
		if _, err := a.InstallationToken(context.Background(), inst); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Mints(); got != 3 {
		t.Errorf("mints of an always-expiring token over 3 calls = %d, want 3", got)
	}
}

func TestPRsForBranchReadsAllPagesDropsForksAndCountsMerged(t *testing.T) {
	s, a := setup(t)
	want := struct{ open, merged, closed uint32 }{}
	var numbers []int
	for n := 1; n <= 230; n++ {
		pr := githubtest.PR{Number: n, HeadRef: "queen-5", HeadRepo: repo}
		switch n % 3 {
		case 0:
			pr.State, want.open = "open", want.open+1
		case 1:
			pr.State, pr.MergedAt, want.merged = "closed", at("2026-10-01T10:00:00Z"), want.merged+1
		case 2:
			pr.State, want.closed = "closed", want.closed+1
		}
		s.AddPR(repo, pr)
		numbers = append(numbers, n)
	}
	// Same owner, same branch name, other head repository: the list returns it.
	s.AddPR(repo, githubtest.PR{Number: 300, HeadRef: "queen-5", HeadRepo: "hive/t27-fork", State: "open"})
	// A deleted fork: null head repository.
	s.AddPR(repo, githubtest.PR{Number: 301, HeadRef: "queen-5", HeadOwner: "hive", State: "closed", MergedAt: at("2026-10-01T10:00:00Z")})
	// Other owners' forks and other branches.
	s.AddPR(repo, githubtest.PR{Number: 302, HeadRef: "queen-5", HeadRepo: "stranger/t27", State: "open"})
	s.AddPR(repo, githubtest.PR{Number: 303, HeadRef: "queen-6", HeadRepo: repo, State: "open"})

	st, err := a.PRsForBranch(context.Background(), inst, "hive", "t27", "queen-5")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Read || st.Open != want.open || st.Merged != want.merged || st.ClosedUnmerged != want.closed {
		t.Errorf("state = read %v open %d merged %d closed %d, want open %d merged %d closed %d",
			st.Read, st.Open, st.Merged, st.ClosedUnmerged, want.open, want.merged, want.closed)
	}
	if fmt.Sprint(st.Numbers) != fmt.Sprint(numbers) {
		t.Errorf("numbers = %v, want 1..230", st.Numbers)
	}
	if got := s.Count(githubtest.RouteListPulls); got != 3 {
		t.Errorf("pages read = %d, want 3", got)
	}
	q := s.LastQuery(githubtest.RouteListPulls)
	if q.Get("head") != "hive:queen-5" || q.Get("state") != "all" || q.Get("per_page") != "100" {
		t.Errorf("query = %v, want head=hive:queen-5 state=all per_page=100", q)
	}
}

func TestPRsForBranchFailedPageIsAnError(t *testing.T) {
	s, a := setup(t)
	for n := 1; n <= 150; n++ {
		s.AddPR(repo, githubtest.PR{Number: n, HeadRef: "queen-5", HeadRepo: repo, State: "closed"})
	}
	s.FailAfter(1, "/repos/hive/t27/pulls", http.StatusBadGateway, nil, 1)
	st, err := a.PRsForBranch(context.Background(), inst, "hive", "t27", "queen-5")
	if err == nil {
		t.Fatalf("second page failed but got %+v", st)
	}
	if st.Read || st.ClosedUnmerged != 0 {
		t.Errorf("failed read returned a partial summary: %+v", st)
	}
	if k := githubapp.Classify(err); k != githubapp.Retry {
		t.Errorf("Classify(502 page) = %v, want retry", k)
	}
}

func TestListBranchPRsGivesNumbersAndStates(t *testing.T) {
	s, a := setup(t)
	s.AddPR(repo, githubtest.PR{Number: 11, HeadRef: "queen-9", HeadRepo: repo, State: "closed", CreatedAt: *at("2026-10-01T08:00:00Z")})
	s.AddPR(repo, githubtest.PR{Number: 12, HeadRef: "queen-9", HeadRepo: repo, State: "closed", MergedAt: at("2026-10-02T00:00:00Z"), CreatedAt: *at("2026-10-01T09:00:00Z")})
	s.AddPR(repo, githubtest.PR{Number: 13, HeadRef: "queen-9", HeadRepo: repo, State: "open", CreatedAt: *at("2026-10-03T10:00:00Z")})
	prs, err := a.ListBranchPRs(context.Background(), inst, "hive", "t27", "queen-9")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(prs)
	want := fmt.Sprint([]githubapp.PR{
		{Number: 11, State: "closed", HeadRepo: repo, HeadSHA: fmt.Sprintf("%040x", 11), CreatedAt: *at("2026-10-01T08:00:00Z")},
		{Number: 12, State: "closed", Merged: true, HeadRepo: repo, HeadSHA: fmt.Sprintf("%040x", 12), CreatedAt: *at("2026-10-01T09:00:00Z")},
		{Number: 13, State: "open", HeadRepo: repo, HeadSHA: fmt.Sprintf("%040x", 13), CreatedAt: *at("2026-10-03T10:00:00Z")},
	})
	if got != want {
		t.Errorf("ListBranchPRs = %s\nwant %s", got, want)
	}
}

// A row's attempt is told by its PRs' head commits and creation times, so
// both reads carry them into the read they answer; a PR listed without
// them is an answer that cannot be used, never a PR of no attempt.
func TestPRReadsCarryHeadsAndCreationTimes(t *testing.T) {
	s, a := setup(t)
	head := strings.Repeat("c", 40)
	s.AddPR(repo, githubtest.PR{Number: 21, HeadRef: "queen-9", HeadRepo: repo, HeadSHA: head, State: "closed", CreatedAt: *at("2026-10-01T08:00:00Z")})
	want := dispatch.PR{Number: 21, State: "closed", HeadSHA: head, CreatedAt: *at("2026-10-01T08:00:00Z")}
	st, err := a.PRsForBranch(context.Background(), inst, "hive", "t27", "queen-9")
	if err != nil || len(st.Listed) != 1 || st.Listed[0] != want {
		t.Fatalf("REST read %+v, %v; want %+v listed", st, err, want)
	}
	r := a.BatchPRStates(context.Background(), inst, "hive", "t27", []string{"queen-9", "queen-10"})["queen-9"]
	if r.Err != nil || len(r.State.Listed) != 1 || r.State.Listed[0] != want {
		t.Fatalf("GraphQL read %+v; want %+v listed", r, want)
	}

	// The same PR without its creation time.
	body := `[{"number": 21, "state": "closed", "merged_at": null, "head": {"ref": "queen-9", "sha": "` + head +
		`", "repo": {"full_name": "hive/t27"}}, "base": {"ref": "master"}}]`
	s.AnswerNext("/repos/hive/t27/pulls", http.StatusOK, []byte(body), 1)
	if st, err := a.PRsForBranch(context.Background(), inst, "hive", "t27", "queen-9"); err == nil || githubapp.Classify(err) != githubapp.BadAnswer || st.Read {
		t.Fatalf("a PR without created_at read as %+v, %v; want an answer that cannot be used", st, err)
	}
}

func TestBatchPRStatesOneQueryPer100Branches(t *testing.T) {
	s, a := setup(t)
	var branches []string
	for i := 1; i <= 250; i++ {
		b := "queen-" + strconv.Itoa(i)
		branches = append(branches, b)
		switch i % 4 {
		case 1:
			s.AddPR(repo, githubtest.PR{HeadRef: b, HeadRepo: repo, State: "open"})
		case 2:
			s.AddPR(repo, githubtest.PR{HeadRef: b, HeadRepo: repo, State: "closed", MergedAt: at("2026-10-01T00:00:00Z")})
		case 3:
			s.AddPR(repo, githubtest.PR{HeadRef: b, HeadRepo: repo, State: "closed"})
		}
	}
	// Fork PRs with our branch names must not count.
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-4", HeadRepo: "stranger/t27", State: "closed", MergedAt: at("2026-10-01T00:00:00Z")})
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-8", HeadOwner: "gone", State: "open"})
	s.GraphQLError("queen-7")

	res := a.BatchPRStates(context.Background(), inst, "hive", "t27", append(branches, "queen-1"))
	if got := s.Count(githubtest.RouteGraphQL); got != 3 {
		t.Errorf("GraphQL requests for 250 branches = %d, want 3", got)
	}
	if len(res) != 250 {
		t.Fatalf("results = %d, want 250", len(res))
	}
	for i, b := range branches {
		r := res[b]
		if b == "queen-7" {
			if r.Err == nil || r.State.Read {
				t.Errorf("queen-7 errored on GitHub but reads %+v", r)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("%s: %v", b, r.Err)
			continue
		}
		var want [3]uint32
		switch (i + 1) % 4 {
		case 1:
			want[0] = 1
		case 2:
			want[1] = 1
		case 3:
			want[2] = 1
		}
		got := [3]uint32{r.State.Open, r.State.Merged, r.State.ClosedUnmerged}
		if !r.State.Read || got != want {
			t.Errorf("%s: open/merged/closed = %v, want %v", b, got, want)
		}
	}
}

func TestBatchPRStatesWholeRequestFailure(t *testing.T) {
	s, a := setup(t)
	var branches []string
	for i := 1; i <= 150; i++ {
		branches = append(branches, "queen-"+strconv.Itoa(i))
	}
	s.FailNext("/graphql", http.StatusBadGateway, nil, 1)
	res := a.BatchPRStates(context.Background(), inst, "hive", "t27", branches)
	unread := 0
	for _, b := range branches {
		if res[b].Err != nil {
			unread++
			if githubapp.Classify(res[b].Err) != githubapp.Retry {
				t.Errorf("%s: Classify = %v, want retry", b, githubapp.Classify(res[b].Err))
			}
		} else if !res[b].State.Read {
			t.Errorf("%s: no error and not read", b)
		}
	}
	if unread != 100 {
		t.Errorf("unread after one failed request of two = %d, want 100", unread)
	}

	// A repository the installation cannot see: GitHub's 200 with a
	// NOT_FOUND error on "repository" leaves every branch unread.
	res = a.BatchPRStates(context.Background(), inst, "other", "repo", []string{"queen-1", "queen-2"})
	for b, r := range res {
		if r.Err == nil || githubapp.Classify(r.Err) != githubapp.Permanent {
			t.Errorf("%s on an unreachable repository: %+v", b, r)
		}
	}
}

func TestBatchPRStatesFollowsUpBranchesWithMoreThan100PRs(t *testing.T) {
	s, a := setup(t)
	for range 101 {
		s.AddPR(repo, githubtest.PR{HeadRef: "queen-3", HeadRepo: repo, State: "closed"})
	}
	s.AddPR(repo, githubtest.PR{HeadRef: "queen-3", HeadRepo: repo, State: "open"})
	res := a.BatchPRStates(context.Background(), inst, "hive", "t27", []string{"queen-3"})
	r := res["queen-3"]
	if r.Err != nil || r.State.ClosedUnmerged != 101 || r.State.Open != 1 {
		t.Errorf("queen-3 = %+v, want 101 closed and 1 open", r)
	}
	if s.Count(githubtest.RouteListPulls) == 0 {
		t.Error("hasNextPage was not followed up with the REST list")
	}
}

func TestBranchHeadAndIssue(t *testing.T) {
	s, a := setup(t)
	ctx := context.Background()
	sha := strings.Repeat("b", 40)
	s.SetBranch(repo, "queen-5", sha)
	s.SetIssue(repo, 5, true, "Fix the compiler")
	s.SetIssue(repo, 6, false, "Done already")

	if got, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-5"); err != nil || got != sha {
		t.Errorf("BranchHead(queen-5) = %q, %v; want %s", got, err, sha)
	}
	if got, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-6"); err != nil || got != "" {
		t.Errorf("BranchHead(missing) = %q, %v; want \"\", nil", got, err)
	}
	s.FailNext("/repos/hive/t27/git", http.StatusServiceUnavailable, nil, 1)
	if got, err := a.BranchHead(ctx, inst, "hive", "t27", "queen-5"); err == nil || githubapp.Classify(err) != githubapp.Retry {
		t.Errorf("BranchHead on 503 = %q, %v; want a retry error", got, err)
	}

	if open, title, err := a.Issue(ctx, inst, "hive", "t27", 5); err != nil || !open || title != "Fix the compiler" {
		t.Errorf("Issue(5) = %v %q %v", open, title, err)
	}
	if open, _, err := a.Issue(ctx, inst, "hive", "t27", 6); err != nil || open {
		t.Errorf("Issue(6) = %v %v; want closed", open, err)
	}
	if _, _, err := a.Issue(ctx, inst, "hive", "t27", 99); err == nil || githubapp.Classify(err) != githubapp.Permanent {
		t.Errorf("Issue(missing) err = %v, want permanent", err)
	}
}

func TestCreatePRTreatsAlreadyExistsAsSuccess(t *testing.T) {
	s, a := setup(t)
	ctx := context.Background()
	s.SetIssue(repo, 5, true, "Fix the compiler")
	s.SetBranch(repo, "queen-5", strings.Repeat("c", 40))

	n, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-5", "Fix the compiler", "Closes #5")
	if err != nil {
		t.Fatal(err)
	}
	prs := s.PRs(repo)
	if len(prs) != 1 || prs[0].Number != n || prs[0].HeadRef != "queen-5" || prs[0].Base != "master" ||
		prs[0].Title != "Fix the compiler" || prs[0].Body != "Closes #5" || prs[0].State != "open" {
		t.Fatalf("created %+v (number %d)", prs, n)
	}
	if n <= 5 {
		t.Errorf("PR number %d reuses an issue number", n)
	}
	again, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-5", "Fix the compiler", "Closes #5")
	if err != nil || again != n {
		t.Errorf("second CreatePR = %d, %v; want the existing %d", again, err, n)
	}
	if got := s.Count(githubtest.RouteCreatePull); got != 2 || len(s.PRs(repo)) != 1 {
		t.Errorf("creates = %d, PRs = %d; want 2 attempts and 1 PR", got, len(s.PRs(repo)))
	}
	// A closed PR from the branch does not block a new one.
	s.AddPR(repo, githubtest.PR{Number: n, HeadRef: "queen-5", HeadRepo: repo, State: "closed"})
	third, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-5", "Fix the compiler", "Closes #5")
	if err != nil || third == n {
		t.Errorf("CreatePR after close = %d, %v; want a new PR", third, err)
	}
	// No such branch: GitHub's 422 "head invalid" is a refusal.
	if _, err := a.CreatePR(ctx, inst, "hive", "t27", "master", "queen-77", "x", "y"); err == nil || githubapp.Classify(err) != githubapp.Permanent {
		t.Errorf("CreatePR(missing head) err = %v, want permanent", err)
	}
}

func TestInstallationsAndReposReadAllPages(t *testing.T) {
	s := githubtest.New(t)
	var repos []string
	for i := range 130 {
		repos = append(repos, fmt.Sprintf("hive/r%d", i))
	}
	s.AddInstallation(1, "hive", repos...)
	for id := int64(2); id <= 120; id++ {
		s.AddInstallation(id, fmt.Sprintf("acct%d", id))
	}
	s.Suspend(50, true)
	a := newApp(t, s)
	ins, err := a.Installations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 120 || s.Count(githubtest.RouteInstallations) != 2 {
		t.Errorf("installations = %d in %d requests, want 120 in 2", len(ins), s.Count(githubtest.RouteInstallations))
	}
	for _, in := range ins {
		if in.Suspended != (in.ID == 50) {
			t.Errorf("installation %d suspended = %v", in.ID, in.Suspended)
		}
		if in.ID == 1 && in.Account != "hive" {
			t.Errorf("installation 1 account = %q", in.Account)
		}
	}
	rs, err := a.InstallationRepos(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 130 || rs[129].FullName != "hive/r129" || rs[0].ID == 0 {
		t.Errorf("repos = %d, last %+v", len(rs), rs[len(rs)-1])
	}
	// A suspended installation cannot mint: a refusal, not an outage.
	_, err = a.InstallationToken(context.Background(), 50)
	if err == nil || githubapp.Classify(err) != githubapp.Permanent {
		t.Errorf("token of a suspended installation: %v, want permanent", err)
	}
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	get := func(t *testing.T, s *githubtest.Server) error {
		a := newApp(t, s) // fresh: go-github remembers rate limits per client
		_, _, err := a.Issue(ctx, inst, "hive", "t27", 1)
		return err
	}
	fresh := func(t *testing.T) *githubtest.Server {
		s := githubtest.New(t)
		s.AddInstallation(inst, "hive", repo)
		s.SetIssue(repo, 1, true, "x")
		return s
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	t.Run("502", func(t *testing.T) {
		s := fresh(t)
		s.Down(true)
		err := get(t, s)
		if k := githubapp.Classify(err); k != githubapp.Retry {
			t.Errorf("Classify(%v) = %v, want retry", err, k)
		}
		if _, ok := githubapp.WaitFor(err); ok {
			t.Error("an outage is not a rate limit")
		}
	})
	t.Run("secondary 403 Retry-After", func(t *testing.T) {
		s := fresh(t)
		a := newApp(t, s)
		if _, err := a.InstallationToken(ctx, inst); err != nil {
			t.Fatal(err)
		}
		s.SecondaryRateLimit(1, 90*time.Second)
		_, _, err := a.Issue(ctx, inst, "hive", "t27", 1)
		d, ok := githubapp.WaitFor(err)
		if githubapp.Classify(err) != githubapp.RateLimited || !ok || d != 90*time.Second {
			t.Errorf("secondary: Classify %v, WaitFor %v %v; want rate_limited 90s", githubapp.Classify(err), d, ok)
		}
	})
	t.Run("secondary on token mint", func(t *testing.T) {
		s := fresh(t)
		s.SecondaryRateLimit(1, 45*time.Second)
		err := get(t, s)
		if d, ok := githubapp.WaitFor(err); !ok || d != 45*time.Second {
			t.Errorf("mint secondary: %v: WaitFor %v %v; want 45s", err, d, ok)
		}
	})
	t.Run("secondary message without Retry-After", func(t *testing.T) {
		s := fresh(t)
		s.SecondaryRateLimit(1, 0)
		err := get(t, s)
		if d, ok := githubapp.WaitFor(err); !ok || d != time.Minute || githubapp.NamedWait(err) {
			t.Errorf("secondary without wait: %v: WaitFor %v %v named %t; want 1m, not named", err, d, ok, githubapp.NamedWait(err))
		}
	})
	// GitHub's guidance: with no Retry-After and requests remaining, wait a
	// minute and longer at each repeat, never the hour until the reset.
	t.Run("429 without Retry-After", func(t *testing.T) {
		s := fresh(t)
		reset := time.Now().Add(time.Hour).Unix()
		s.FailNext("/repos/", http.StatusTooManyRequests, hdr("X-RateLimit-Remaining", "4000", "X-RateLimit-Reset", strconv.FormatInt(reset, 10)), 1)
		err := get(t, s)
		if d, ok := githubapp.WaitFor(err); !ok || d != time.Minute || githubapp.NamedWait(err) {
			t.Errorf("429 without Retry-After: %v: WaitFor %v %v named %t; want 1m, not named", err, d, ok, githubapp.NamedWait(err))
		}
	})
	t.Run("undecodable answer", func(t *testing.T) {
		s := fresh(t)
		s.AnswerNext("/repos/", http.StatusOK, []byte(`{"state": open}`), 1)
		err := get(t, s)
		if k := githubapp.Classify(err); k != githubapp.BadAnswer {
			t.Errorf("Classify(%v) = %v, want bad_answer", err, k)
		}
	})
	t.Run("graphql answer without data", func(t *testing.T) {
		s := fresh(t)
		s.AnswerNext("/graphql", http.StatusOK, []byte(`{"data": null}`), 1)
		err := newApp(t, s).BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1"})["queen-1"].Err
		if k := githubapp.Classify(err); k != githubapp.BadAnswer {
			t.Errorf("Classify(%v) = %v, want bad_answer", err, k)
		}
	})
	t.Run("429 Retry-After", func(t *testing.T) {
		s := fresh(t)
		s.FailNext("/repos/", http.StatusTooManyRequests, hdr("Retry-After", "30"), 1)
		err := get(t, s)
		if d, ok := githubapp.WaitFor(err); githubapp.Classify(err) != githubapp.RateLimited || !ok || d != 30*time.Second {
			t.Errorf("429: %v: WaitFor %v %v; want 30s", err, d, ok)
		}
	})
	t.Run("more than 100 pages", func(t *testing.T) {
		s := fresh(t)
		defer githubapp.SetMaxPages(2)()
		for i := 1; i <= 201; i++ {
			s.AddPR(repo, githubtest.PR{Number: i, HeadRef: "queen-7", HeadRepo: repo, State: "closed"})
		}
		_, err := newApp(t, s).ListBranchPRs(ctx, inst, "hive", "t27", "queen-7")
		if k := githubapp.Classify(err); k != githubapp.BadAnswer {
			t.Errorf("Classify(%v) = %v, want bad_answer", err, k)
		}
	})
	t.Run("primary", func(t *testing.T) {
		s := fresh(t)
		reset := time.Now().Add(10 * time.Minute).Unix()
		s.FailNext("/repos/", http.StatusForbidden, hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(reset, 10)), 1)
		err := get(t, s)
		d, ok := githubapp.WaitFor(err)
		if githubapp.Classify(err) != githubapp.RateLimited || !ok || d <= 5*time.Minute || d > 10*time.Minute {
			t.Errorf("primary: %v: WaitFor %v %v; want about 10m", err, d, ok)
		}
	})
	t.Run("primary 429", func(t *testing.T) {
		s := fresh(t)
		reset := time.Now().Add(10 * time.Minute).Unix()
		s.FailNext("/repos/", http.StatusTooManyRequests, hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(reset, 10)), 1)
		err := get(t, s)
		if d, ok := githubapp.WaitFor(err); !ok || d <= 5*time.Minute {
			t.Errorf("primary 429: %v: WaitFor %v %v", err, d, ok)
		}
	})
	for _, c := range []struct {
		status int
		want   githubapp.Kind
	}{{404, githubapp.Permanent}, {422, githubapp.Permanent}, {403, githubapp.Permanent}, {401, githubapp.Permanent}, {500, githubapp.Retry}, {503, githubapp.Retry}} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			s := fresh(t)
			s.FailNext("/repos/", c.status, nil, 1)
			err := get(t, s)
			if k := githubapp.Classify(err); k != c.want {
				t.Errorf("Classify(%d: %v) = %v, want %v", c.status, err, k, c.want)
			}
		})
	}
	t.Run("404 on app endpoint", func(t *testing.T) {
		s := fresh(t)
		err := newApp(t, s).Redeliver(ctx, 123456)
		if k := githubapp.Classify(err); k != githubapp.Permanent {
			t.Errorf("Classify(%v) = %v, want permanent", err, k)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		s := fresh(t)
		other := githubtest.New(t)
		a, err := githubapp.New(githubapp.Config{AppID: s.AppID(), PrivateKey: other.Key(), APIURL: s.URL()})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = a.Issue(ctx, inst, "hive", "t27", 1)
		if k := githubapp.Classify(err); k != githubapp.Permanent || s.Mints() != 0 {
			t.Errorf("Classify(%v) = %v (mints %d), want permanent", err, k, s.Mints())
		}
	})
	t.Run("network", func(t *testing.T) {
		s := fresh(t)
		a, err := githubapp.New(githubapp.Config{AppID: s.AppID(), PrivateKey: s.Key(), APIURL: "http://127.0.0.1:1/"})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = a.Issue(ctx, inst, "hive", "t27", 1)
		if k := githubapp.Classify(err); err == nil || k != githubapp.Retry {
			t.Errorf("Classify(%v) = %v, want retry", err, k)
		}
	})
	t.Run("graphql rate limited", func(t *testing.T) {
		ge := &githubapp.GraphQLError{Type: "RATE_LIMITED", Message: "API rate limit exceeded", Reset: time.Now().Add(3 * time.Minute)}
		err := fmt.Errorf("wrapped: %w", ge)
		if d, ok := githubapp.WaitFor(err); !ok || d <= time.Minute || d > 3*time.Minute {
			t.Errorf("GraphQL RATE_LIMITED: WaitFor %v %v", d, ok)
		}
	})
	if githubapp.Classify(nil) != githubapp.None {
		t.Error("Classify(nil) is not None")
	}
	if githubapp.Classify(context.DeadlineExceeded) != githubapp.Retry {
		t.Error("a timeout is not retry")
	}
}

func TestErrorsNeverShowTheToken(t *testing.T) {
	s, a := setup(t)
	ctx := context.Background()
	tok, err := a.InstallationToken(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, st := range []int{401, 403, 404, 422, 502} {
		s.FailNext("/repos/", st, nil, 1)
		_, _, err := a.Issue(ctx, inst, "hive", "t27", 1)
		errs = append(errs, err)
	}
	s.FailNext("/graphql", 500, nil, 1)
	errs = append(errs, a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1"})["queen-1"].Err)
	for _, err := range errs {
		if err == nil {
			t.Fatal("expected an error")
		}
		if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), "ghs_") {
			t.Errorf("error shows the token: %v", err)
		}
	}
}

// GitHub's error bodies are quoted into errors, and so into logs and rows:
// a body that echoes the token must not carry it on.
func TestErrorsScrubATokenGitHubEchoes(t *testing.T) {
	s, a := setup(t)
	ctx := context.Background()
	tok, err := a.InstallationToken(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"message":"Bad credentials: token %s (Authorization: token %s) refused","documentation_url":"https://docs.github.com/rest"}`, tok, tok[:20])
	s.AnswerNext("/repos/", http.StatusUnauthorized, []byte(body), 1)
	_, _, err = a.Issue(ctx, inst, "hive", "t27", 1)
	if err == nil || githubapp.Classify(err) != githubapp.Permanent {
		t.Fatalf("err %v: want a permanent refusal", err)
	}
	for n := 8; n <= len(tok); n++ {
		if strings.Contains(err.Error(), tok[:n]) || strings.Contains(err.Error(), tok[len(tok)-n:]) {
			t.Fatalf("error carries %d characters of the token: %v", n, err)
		}
	}
}

func TestDeliveriesPagingAndSince(t *testing.T) {
	s, a := setup(t)
	now := time.Now().UTC().Truncate(time.Second)
	for i := range 250 {
		s.AddDelivery(githubtest.Delivery{GUID: fmt.Sprintf("g%d", i), DeliveredAt: now.Add(-time.Duration(i) * time.Minute), StatusCode: 200, Event: "pull_request", Action: "closed"})
	}
	all, err := a.ListDeliveries(context.Background(), now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 250 || s.Count(githubtest.RouteDeliveries) != 3 {
		t.Errorf("listed %d in %d pages, want 250 in 3", len(all), s.Count(githubtest.RouteDeliveries))
	}
	if q := s.LastQuery(githubtest.RouteDeliveries); q.Get("per_page") != "100" || q.Get("cursor") == "" {
		t.Errorf("last query %v: want per_page=100 and a cursor", q)
	}
	if d := all[0]; d.GUID != "g0" || d.StatusCode != 200 || d.Event != "pull_request" || d.Action != "closed" || !d.DeliveredAt.Equal(now) {
		t.Errorf("first delivery = %+v", d)
	}
	before := s.Count(githubtest.RouteDeliveries)
	recent, err := a.ListDeliveries(context.Background(), now.Add(-30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 31 || s.Count(githubtest.RouteDeliveries)-before != 1 {
		t.Errorf("since 30m: %d deliveries in %d pages, want 31 in 1", len(recent), s.Count(githubtest.RouteDeliveries)-before)
	}
}

func TestToRedeliver(t *testing.T) {
	now := time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)
	d := func(id int64, guid string, ago time.Duration, code int) githubapp.Delivery {
		return githubapp.Delivery{ID: id, GUID: guid, DeliveredAt: now.Add(-ago), StatusCode: code}
	}
	ds := []githubapp.Delivery{
		d(1, "ok", 5*time.Hour, 200),
		d(2, "failed-then-ok", 4*time.Hour, 503), d(3, "failed-then-ok", 3*time.Hour, 202),
		d(4, "failed-twice", 4*time.Hour, 503), d(5, "failed-twice", 2*time.Hour, 500),
		d(6, "failed-once", 6*time.Hour, 0),
		d(7, "too-old", 73*time.Hour, 503),
		d(8, "ok-then-failed", 3*time.Hour, 200), d(9, "ok-then-failed", time.Hour, 502),
		d(10, "redirect", time.Hour, 301),
	}
	var got []int64
	for _, d := range githubapp.ToRedeliver(ds, now) {
		got = append(got, d.ID)
	}
	if fmt.Sprint(got) != "[6 5 10]" {
		t.Errorf("ToRedeliver = %v, want [6 5 10] (latest failed attempt per GUID without success, oldest first)", got)
	}
	if got := githubapp.ToRedeliver(nil, now); len(got) != 0 {
		t.Errorf("ToRedeliver(nil) = %v", got)
	}
}

type memStore struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *memStore) Get(_ context.Context, k string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k], nil
}

func (s *memStore) Set(_ context.Context, k, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[k] = v
	return nil
}

func (s *memStore) Claim(_ context.Context, k string, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		return false, nil
	}
	s.m[k] = "claimed"
	return true, nil
}

func (s *memStore) Unclaim(_ context.Context, k string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, k)
	return nil
}

func TestRedelivererRedeliversFailedGUIDsAndRemembers(t *testing.T) {
	s, a := setup(t)
	ctx := context.Background()
	now := time.Now().UTC()
	// 44 hours of deliveries; g0, g20 and g40 failed, and g20 was since
	// delivered by a successful redelivery.
	ids := map[string]int64{}
	for i := range 60 {
		code := 200
		if i%20 == 0 {
			code = 503
		}
		g := fmt.Sprintf("g%d", i)
		ids[g] = s.AddDelivery(githubtest.Delivery{GUID: g, DeliveredAt: now.Add(-time.Duration(i) * 45 * time.Minute), StatusCode: code})
	}
	s.AddDelivery(githubtest.Delivery{GUID: "g20", Redelivery: true, DeliveredAt: now.Add(-10 * time.Minute), StatusCode: 200})
	store := &memStore{m: map[string]string{}}
	r := &githubapp.Redeliverer{App: a, Store: store, Key: "k"}

	rep, err := r.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]int64{ids["g40"], ids["g0"]})
	if got := fmt.Sprint(s.Redelivered()); got != want || fmt.Sprint(rep.Redelivered) != want {
		t.Fatalf("redelivered %v (report %v), want g40 then g0: %v", got, rep.Redelivered, want)
	}
	if store.m["k"] == "" {
		t.Error("mark not stored after a complete run")
	}

	// The redeliveries succeeded: the next run lists only since the mark and
	// redelivers nothing.
	before := s.Count(githubtest.RouteDeliveries)
	rep, err = r.Run(ctx, now.Add(15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Redelivered) != 0 || len(s.Redelivered()) != 2 {
		t.Errorf("second run redelivered %v", rep.Redelivered)
	}
	if rep.Listed >= 60 || s.Count(githubtest.RouteDeliveries)-before != 1 {
		t.Errorf("second run listed %d deliveries; it should read only since its mark", rep.Listed)
	}

	// A failing receiver: the redelivery fails too, so the next run tries again.
	s.SetRedeliveryResult(503)
	s.AddDelivery(githubtest.Delivery{GUID: "late", DeliveredAt: now.Add(20 * time.Minute), StatusCode: 502})
	if _, err := r.Run(ctx, now.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, now.Add(45*time.Minute)); err != nil {
		t.Fatal(err)
	}
	red := s.Redelivered()
	if len(red) != 4 || red[2] == red[3] {
		t.Errorf("redelivered %v: want 'late' redelivered in both runs, the second time its failed redelivery", red)
	}

	// GitHub refusing the redelivery keeps the mark, so nothing is lost.
	mark := store.m["k"]
	s.AddDelivery(githubtest.Delivery{GUID: "later", DeliveredAt: now.Add(50 * time.Minute), StatusCode: 500})
	s.FailNext("/app/hook/deliveries/", http.StatusBadGateway, nil, 10)
	if _, err := r.Run(ctx, now.Add(time.Hour)); err == nil || githubapp.Classify(err) != githubapp.Retry {
		t.Errorf("run with a failing redeliver: %v, want a retry error", err)
	}
	if store.m["k"] != mark {
		t.Error("mark moved although a redelivery failed")
	}
}

func TestMetricsCountRequestsAndRateRemaining(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(inst, "hive", repo)
	s.SetIssue(repo, 1, true, "x")
	reg := prometheus.NewRegistry()
	m, err := githubapp.NewPromMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := githubapp.New(githubapp.Config{AppID: s.AppID(), PrivateKey: s.Key(), APIURL: s.URL(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		if _, _, err := a.Issue(ctx, inst, "hive", "t27", 1); err != nil {
			t.Fatal(err)
		}
	}
	a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1"})
	s.FailNext("/repos/", http.StatusBadGateway, nil, 1)
	_, _, _ = a.Issue(ctx, inst, "hive", "t27", 1)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range mt.GetLabel() {
				key += "{" + l.GetValue() + "}"
			}
			if mt.Counter != nil {
				got[key] = mt.GetCounter().GetValue()
			} else {
				got[key] = mt.GetGauge().GetValue()
			}
		}
	}
	if got["queen_github_requests_total{201}"] != 1 || got["queen_github_requests_total{200}"] != 4 || got["queen_github_requests_total{502}"] != 1 {
		t.Errorf("request counts = %v; want 1 mint (201), 4 reads (200), one 502", got)
	}
	if got["queen_github_rate_limit_remaining{core}"] <= 0 || got["queen_github_rate_limit_remaining{graphql}"] <= 0 {
		t.Errorf("rate remaining = %v; want core and graphql", got)
	}
}

// ghinstallation v2.12.0 is the release built against go-github v66; go mod
// tidy would move it, and the pair must stay together.
func TestGoModPinsGhinstallationWithGoGitHubV66(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mod := string(b)
	for _, want := range []string{"github.com/bradleyfalzon/ghinstallation/v2 v2.12.0\n", "github.com/google/go-github/v66 v66."} {
		if !strings.Contains(mod, want) {
			t.Errorf("go.mod lacks %q", strings.TrimSpace(want))
		}
	}
	// The linked ghinstallation speaks go-github v66's types: this does not
	// compile against a ghinstallation built on another go-github major.
	var tr ghinstallation.Transport
	var perms github.InstallationPermissions
	perms, _ = tr.Permissions()
	_ = perms
}

func TestGraphQLURLFor(t *testing.T) {
	for api, want := range map[string]string{
		"https://api.github.com/":           "https://api.github.com/graphql",
		"https://ghe.example.com/api/v3/":   "https://ghe.example.com/api/graphql",
		"http://127.0.0.1:9999/":            "http://127.0.0.1:9999/graphql",
		"http://127.0.0.1:9999/github/api/": "http://127.0.0.1:9999/github/api/graphql",
	} {
		if got := githubapp.GraphQLURLFor(api); got != want {
			t.Errorf("GraphQLURLFor(%q) = %q, want %q", api, got, want)
		}
	}
}
