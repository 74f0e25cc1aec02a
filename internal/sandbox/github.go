package sandbox

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// Routes, as counted by Count.
const (
	RouteApp           = "GET /app"
	RouteMint          = "POST /app/installations/{id}/access_tokens"
	RouteInstallations = "GET /app/installations"
	RouteRepos         = "GET /installation/repositories"
	RouteListPulls     = "GET /repos/{owner}/{repo}/pulls"
	RouteCreatePull    = "POST /repos/{owner}/{repo}/pulls"
	RouteGraphQL       = "POST /graphql"
	RouteDeliveries    = "GET /app/hook/deliveries"
	RouteRedeliver     = "POST /app/hook/deliveries/{id}/attempts"
	RouteBranch        = "GET /repos/{owner}/{repo}/branches/{branch...}"
	RouteRef           = "GET /repos/{owner}/{repo}/git/ref/heads/{branch...}"
	RouteIssue         = "GET /repos/{owner}/{repo}/issues/{number}"
	RouteRepo          = "GET /repos/{owner}/{repo}"
)

// SecondaryRateLimitDocs is the documentation_url GitHub sends with a
// secondary rate limit.
const SecondaryRateLimitDocs = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"

const maxBody = 1 << 20

// PR is a pull request as the test sets it.
type PR struct {
	Number   int
	HeadRef  string
	HeadRepo string // "owner/name" of the head repository; "" = deleted fork (null)
	// HeadOwner is the head label's owner when HeadRepo is ""; ignored otherwise.
	HeadOwner string
	HeadSHA   string
	Base      string // default "master"
	State     string // "open" or "closed"
	MergedAt  *time.Time
	// CreatedAt is when the PR was opened: zero is when AddPR (or the
	// create route) first adds it, in whole seconds as GitHub stamps it;
	// replacing a PR keeps its time.
	CreatedAt time.Time
	Title     string
	Body      string
}

func (p PR) labelOwner() string {
	if p.HeadRepo != "" {
		owner, _ := ghrepo.Split(p.HeadRepo)
		return owner
	}
	return p.HeadOwner
}

// Delivery is one attempt of an App webhook delivery.
type Delivery struct {
	ID             int64
	GUID           string
	DeliveredAt    time.Time
	Redelivery     bool
	StatusCode     int // 0 is shown as status "pending"
	Event, Action  string
	InstallationID int64
	RepositoryID   int64
}

type installation struct {
	id        int64
	account   string
	repos     []string
	suspended *time.Time
}

type issue struct {
	open  bool
	title string
}

type token struct {
	installation int64
	expires      time.Time
}

type fault struct {
	prefix string
	status int
	header http.Header
	body   map[string]any
	raw    []byte // sent as is instead of body when set
	skip   int
	n      int
}

// GitHub is the stand-in for GitHub's REST and GraphQL API: it speaks
// GitHub's JSON shapes, checks the App JWT (RS256, signed by the key it
// generated) and installation tokens, counts requests per route and token
// mints, injects faults and delivers signed webhooks. Its methods are safe
// for concurrent use.
type GitHub struct {
	srv   *server
	key   *rsa.PrivateKey
	appID int64
	mux   *http.ServeMux

	mu            sync.Mutex
	counts        map[string]int
	queries       map[string]string
	mints         int
	installations []*installation
	tokens        map[string]token
	tokenTTL      time.Duration
	prs           map[string][]PR // by repo, lower case
	issues        map[string]map[int]issue
	branches      map[string]map[string]string
	remotes       map[string]*Remote // repositories whose branches are a git remote's
	hook          hook
	numbers       map[string]int
	deliveries    []Delivery
	nextDelivery  int64
	redelivered   []int64
	redeliverCode int
	faults        []*fault
	graphqlErrors map[string]bool
	listErrors    map[string]bool           // branches whose REST PR list fails
	prRefusals    map[string]map[string]any // head branch -> the 422 error its PR creation gets
	down          bool
	refuseApp     bool // RefuseApp
	remaining     int
	legacyTokens  bool
	resourceLimit int                  // aliases a GraphQL query may hold; 0: no limit
	spent         map[string]time.Time // resource -> the reset of its spent primary limit
	moved         moves
	empty         map[string]bool // repositories with no commit yet, lower case
}

// NewGitHub starts a GitHub stand-in on a loopback port. It generates an
// RSA key for an App whose id is AppID. Close stops it.
func NewGitHub() (*GitHub, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("sandbox: generate the App key: %w", err)
	}
	s := &GitHub{
		key:           key,
		appID:         4242,
		mux:           http.NewServeMux(),
		counts:        map[string]int{},
		queries:       map[string]string{},
		tokens:        map[string]token{},
		tokenTTL:      time.Hour,
		prs:           map[string][]PR{},
		issues:        map[string]map[int]issue{},
		branches:      map[string]map[string]string{},
		remotes:       map[string]*Remote{},
		moved:         moves{to: map[string]string{}, ids: map[string]int64{}},
		empty:         map[string]bool{},
		numbers:       map[string]int{},
		nextDelivery:  1000,
		redeliverCode: http.StatusOK,
		graphqlErrors: map[string]bool{},
		spent:         map[string]time.Time{},
		listErrors:    map[string]bool{},
		prRefusals:    map[string]map[string]any{},
		remaining:     5000,
	}
	s.routes()
	if s.srv, err = listen(http.HandlerFunc(s.serve)); err != nil {
		return nil, fmt.Errorf("sandbox: GitHub: %w", err)
	}
	return s, nil
}

// Close stops the server.
func (s *GitHub) Close() { s.srv.Close() }

// URL is the REST base URL, with the trailing slash (GITHUB_API_URL).
func (s *GitHub) URL() string { return s.srv.URL + "/" }

// GraphQLURL is the GraphQL endpoint (GITHUB_GRAPHQL_URL).
func (s *GitHub) GraphQLURL() string { return s.srv.URL + "/graphql" }

// AppID is the id of the App whose key the server holds.
func (s *GitHub) AppID() int64 { return s.appID }

// Key is the App's private key, PEM encoded (PKCS#1, as GitHub hands it out).
func (s *GitHub) Key() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(s.key)})
}

// AddInstallation installs the App on account with access to repos
// ("owner/name"). Installation tokens only reach those repositories.
func (s *GitHub) AddInstallation(id int64, account string, repos ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.installations {
		if in.id == id {
			in.account, in.repos = account, append([]string(nil), repos...)
			return
		}
	}
	s.installations = append(s.installations, &installation{id: id, account: account, repos: append([]string(nil), repos...)})
}

// Suspend suspends or unsuspends an installation; a suspended installation
// cannot mint tokens (403).
func (s *GitHub) Suspend(id int64, suspended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.installations {
		if in.id == id {
			in.suspended = nil
			if suspended {
				now := time.Now().UTC().Truncate(time.Second)
				in.suspended = &now
			}
		}
	}
}

// SetTokenTTL sets the lifetime of minted installation tokens (default 1h).
func (s *GitHub) SetTokenTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenTTL = d
}

// LegacyTokens makes later mints hand out the old opaque tokens (ghs_ and
// 40 hex digits) instead of the stateless ghs_<APPID>_<JWT> GitHub issues
// from 2026-04-27; both are seen for a while.
func (s *GitHub) LegacyTokens(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.legacyTokens = on
}

// newToken is an installation token in the current format; s.mu is held.
func (s *GitHub) newToken(installation int64, exp time.Time) string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	if s.legacyTokens {
		return "ghs_" + hex.EncodeToString(b)
	}
	return fmt.Sprintf("ghs_%d_%s", s.appID, s.signJWT(map[string]any{
		"iss": strconv.FormatInt(s.appID, 10), "installation_id": installation,
		"exp": exp.Unix(), "jti": hex.EncodeToString(b),
	}))
}

// AddPR adds a pull request to repo, replacing one with the same number.
// Number 0 takes the repository's next number.
func (s *GitHub) AddPR(repo string, pr PR) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addPR(repo, pr)
}

func (s *GitHub) addPR(repo string, pr PR) int {
	k := strings.ToLower(repo)
	if pr.Number == 0 {
		s.numbers[k]++
		pr.Number = s.numbers[k]
	}
	s.numbers[k] = max(s.numbers[k], pr.Number)
	if pr.State == "" {
		pr.State = "open"
	}
	if pr.Base == "" {
		pr.Base = "master"
	}
	if pr.HeadSHA == "" {
		pr.HeadSHA = fmt.Sprintf("%040x", pr.Number)
	}
	list := s.prs[k]
	for i := range list {
		if list[i].Number == pr.Number {
			if pr.CreatedAt.IsZero() {
				pr.CreatedAt = list[i].CreatedAt
			}
			list[i] = pr
			return pr.Number
		}
	}
	if pr.CreatedAt.IsZero() {
		pr.CreatedAt = time.Now().UTC().Truncate(time.Second)
	}
	s.prs[k] = append(list, pr)
	return pr.Number
}

// PRs returns the repository's pull requests, by number.
func (s *GitHub) PRs(repo string) []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]PR(nil), s.prs[strings.ToLower(repo)]...)
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// SetIssue creates or changes an issue.
func (s *GitHub) SetIssue(repo string, number int, open bool, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(repo)
	if s.issues[k] == nil {
		s.issues[k] = map[int]issue{}
	}
	s.issues[k][number] = issue{open: open, title: title}
	s.numbers[k] = max(s.numbers[k], number)
}

// LinkRemote makes repo's branches those of the git remote r, as on
// GitHub, where the REST view of a branch is the repository's ref: branch
// and ref reads and PR creation read r's refs/heads. SetBranch no longer
// applies to repo.
func (s *GitHub) LinkRemote(repo string, r *Remote) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remotes[strings.ToLower(repo)] = r
}

// SetBranch points a branch at sha; "" deletes it.
func (s *GitHub) SetBranch(repo, branch, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(repo)
	if s.branches[k] == nil {
		s.branches[k] = map[string]string{}
	}
	if sha == "" {
		delete(s.branches[k], branch)
		return
	}
	s.branches[k][branch] = sha
	delete(s.empty, k)
}

// EmptyRepo makes repo a repository with no commit yet, as GitHub has
// them after "create repository" without a README: no branch, and its ref
// reads answer 409 "Git Repository is empty." until SetBranch gives it
// one. A repository linked to a Remote is empty while the remote has no
// branch, without this.
func (s *GitHub) EmptyRepo(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(repo)
	delete(s.branches, k)
	s.empty[k] = true
}

// emptyRepo reports whether repo has no commit yet.
func (s *GitHub) emptyRepo(repo string) bool {
	k := strings.ToLower(repo)
	s.mu.Lock()
	r := s.remotes[k]
	empty := s.empty[k]
	s.mu.Unlock()
	if r != nil {
		heads, err := r.Refs("refs/heads/")
		return err == nil && len(heads) == 0
	}
	return empty
}

// AddDelivery records a webhook delivery attempt; ID 0 takes the next id.
func (s *GitHub) AddDelivery(d Delivery) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.ID == 0 {
		s.nextDelivery++
		d.ID = s.nextDelivery
	}
	s.nextDelivery = max(s.nextDelivery, d.ID)
	s.deliveries = append(s.deliveries, d)
	return d.ID
}

// Redelivered lists the delivery ids asked to be redelivered, in order.
func (s *GitHub) Redelivered() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.redelivered...)
}

// SetRedeliveryResult sets the status code recorded for a redelivery attempt
// (default 200).
func (s *GitHub) SetRedeliveryResult(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redeliverCode = code
}

// FailNext answers the next n requests whose path starts with pathPrefix with
// status and header, and a GitHub-shaped error body; n < 0 answers every one
// until ClearFaults, an outage of unknown length.
func (s *GitHub) FailNext(pathPrefix string, status int, header http.Header, n int) {
	s.FailAfter(0, pathPrefix, status, header, n)
}

// FailAfter is FailNext once skip matching requests have been served
// normally (e.g. fail the second page of a list).
func (s *GitHub) FailAfter(skip int, pathPrefix string, status int, header http.Header, n int) {
	msg := http.StatusText(status)
	if header.Get("X-RateLimit-Remaining") == "0" {
		msg = "API rate limit exceeded for installation."
	}
	s.addFault(&fault{prefix: pathPrefix, status: status, header: header, n: n, skip: skip,
		body: map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"}})
}

// AnswerNext answers the next n requests whose path starts with pathPrefix
// with status and exactly raw as the body (an answer that does not decode).
func (s *GitHub) AnswerNext(pathPrefix string, status int, raw []byte, n int) {
	s.AnswerNextWith(pathPrefix, status, nil, raw, n)
}

// AnswerNextWith is AnswerNext with header set on the answer too.
func (s *GitHub) AnswerNextWith(pathPrefix string, status int, header http.Header, raw []byte, n int) {
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for k, v := range header {
		h[k] = v
	}
	s.addFault(&fault{prefix: pathPrefix, status: status, raw: raw, n: n, header: h})
}

// LastQuery is the query string of the last request to route.
func (s *GitHub) LastQuery(route string) url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _ := url.ParseQuery(s.queries[route])
	return v
}

// SecondaryLimitMessage is how GitHub words a secondary rate limit.
const SecondaryLimitMessage = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."

// SecondaryRateLimit answers the next n requests (n < 0: until ClearFaults),
// whatever their path, with GitHub's secondary rate limit: 403, its message
// and Retry-After (none when retryAfter is 0).
func (s *GitHub) SecondaryRateLimit(n int, retryAfter time.Duration) {
	s.SecondaryLimit(n, http.StatusForbidden, retryAfter)
}

// SecondaryLimit is SecondaryRateLimit answered with status: 403 or 429
// as GitHub sends both. Without Retry-After the answer still carries
// requests remaining and the primary window's reset, up to an hour out:
// that reset is no wait GitHub named.
func (s *GitHub) SecondaryLimit(n, status int, retryAfter time.Duration) {
	s.addFault(&fault{prefix: "/", status: status, header: retryAfterHeader(retryAfter), n: n, body: map[string]any{
		"message": SecondaryLimitMessage, "documentation_url": SecondaryRateLimitDocs,
	}})
}

// GraphQLSecondaryLimit answers the next n GraphQL requests with a
// secondary limit as GitHub's GraphQL API does: status 200 with the message
// in "errors", or 403 with it as REST does; Retry-After none when 0.
func (s *GitHub) GraphQLSecondaryLimit(n, status int, retryAfter time.Duration) {
	body := map[string]any{"message": SecondaryLimitMessage, "documentation_url": SecondaryRateLimitDocs}
	if status == http.StatusOK {
		body = map[string]any{"errors": []any{map[string]any{"message": SecondaryLimitMessage}}}
	}
	s.addFault(&fault{prefix: "/graphql", status: status, header: retryAfterHeader(retryAfter), n: n, body: body})
}

// GraphQLRateLimit answers the next n GraphQL requests with the primary
// limit as GitHub's GraphQL API does: HTTP 200, an error of type
// RATE_LIMITED, x-ratelimit-remaining 0 and the reset.
func (s *GitHub) GraphQLRateLimit(n int, reset time.Time) {
	h := http.Header{}
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Used", strconv.Itoa(rateLimit))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	s.addFault(&fault{prefix: "/graphql", status: http.StatusOK, header: h, n: n, body: map[string]any{
		"errors": []any{map[string]any{"type": "RATE_LIMITED", "message": "API rate limit already exceeded for installation."}},
	}})
}

func retryAfterHeader(d time.Duration) http.Header {
	h := http.Header{}
	if d > 0 {
		h.Set("Retry-After", strconv.Itoa(int(d/time.Second)))
	}
	return h
}

func (s *GitHub) addFault(f *fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// GraphQLError makes every GraphQL read of branch fail with a field error
// (HTTP 200, its alias null, an entry in "errors" whose path names it).
func (s *GitHub) GraphQLError(branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.graphqlErrors[branch] = true
}

// UnreadablePRs makes every read of branch's PR list fail: the REST list
// filtered on the branch answers 500 and GraphQL reads error (GraphQLError),
// as when GitHub cannot serve one repository's pulls.
func (s *GitHub) UnreadablePRs(branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.graphqlErrors[branch] = true
	s.listErrors[branch] = true
}

// RefusePRs answers every PR creation from head with GitHub's 422
// Validation Failed carrying e as its one entry of "errors", e.g.
// {"resource": "PullRequest", "code": "custom", "message": "No commits
// between master and queen-5"}, until ClearFaults.
func (s *GitHub) RefusePRs(head string, e map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prRefusals[head] = e
}

// ClearFaults ends every fault set so far: the queued and open-ended
// failures (FailNext, FailAfter, AnswerNext, SecondaryRateLimit), the
// branches that GraphQLError and UnreadablePRs broke, RefusePRs and Down.
func (s *GitHub) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
	s.graphqlErrors = map[string]bool{}
	s.listErrors = map[string]bool{}
	s.prRefusals = map[string]map[string]any{}
	s.down = false
	s.resourceLimit = 0
	s.spent = map[string]time.Time{}
}

// SpendRateLimit spends the installations' primary limit of resource
// ("core" or "graphql") until reset (or ClearFaults): each of their
// requests is answered as GitHub answers it, x-ratelimit-remaining 0 and
// the reset, with 403 and a message on REST, and on GraphQL with HTTP 200
// and {"errors":[{"message":"API rate limit exceeded for installation ID
// N."}]}, no type: only the headers say it is the primary limit.
func (s *GitHub) SpendRateLimit(resource string, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spent[resource] = reset
}

// resourceOf is the rate-limit resource GitHub counts r against.
func resourceOf(r *http.Request) string {
	if r.URL.Path == "/graphql" {
		return "graphql"
	}
	return "core"
}

// limitSpent answers r as GitHub does once its installation's primary
// limit is spent (SpendRateLimit); false when it is not.
func (s *GitHub) limitSpent(w http.ResponseWriter, r *http.Request) bool {
	resource := resourceOf(r)
	s.mu.Lock()
	reset, ok := s.spent[resource]
	s.mu.Unlock()
	if !ok || !time.Now().Before(reset) {
		return false
	}
	in := s.tokenInstallation(r)
	if in == nil {
		return false // the App's own requests (JWT) have a budget of their own
	}
	h := w.Header()
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Used", strconv.Itoa(rateLimit))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	msg := fmt.Sprintf("API rate limit exceeded for installation ID %d.", in.id)
	if resource == "graphql" {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []any{map[string]any{"message": msg}}})
		return true
	}
	writeJSON(w, http.StatusForbidden, map[string]any{"message": msg,
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit"})
	return true
}

// RefuseApp makes GitHub refuse the App's JWT while on (401 to every call
// signed with it, GET /app and token mints), as it does for a key it does
// not know.
func (s *GitHub) RefuseApp(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseApp = on
}

// Down makes every request answer 502 while on.
func (s *GitHub) Down(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = on
}

// Count is the number of requests that reached route (one of the Route
// constants), failed ones included.
func (s *GitHub) Count(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[route]
}

// LiveToken reports whether tok is an installation token this server
// minted and that has not expired, as GitHub's git front would check.
func (s *GitHub) LiveToken(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	return ok && time.Now().Before(t.expires)
}

// Tokens are every installation token minted so far, expired or not.
func (s *GitHub) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.tokens))
	for tok := range s.tokens {
		out = append(out, tok)
	}
	return out
}

// Mints is the number of installation tokens minted.
func (s *GitHub) Mints() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mints
}

func (s *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if s.redirectMoved(w, r) {
		return
	}
	s.byID(r)
	_, pattern := s.mux.Handler(r)
	s.mu.Lock()
	s.counts[pattern]++
	s.queries[pattern] = r.URL.RawQuery
	down := s.down
	var f *fault
	for i, c := range s.faults {
		if strings.HasPrefix(r.URL.Path, c.prefix) {
			if c.skip > 0 {
				c.skip--
				break
			}
			f = c
			if c.n < 0 {
				break // until ClearFaults
			}
			if c.n--; c.n <= 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
			break
		}
	}
	s.mu.Unlock()
	s.rateHeaders(w, r)
	if down {
		writeJSON(w, http.StatusBadGateway, map[string]any{"message": "Server Error"})
		return
	}
	if s.limitSpent(w, r) {
		return
	}
	if f != nil {
		for k, v := range f.header {
			w.Header()[k] = v
		}
		if f.raw != nil {
			w.WriteHeader(f.status)
			_, _ = w.Write(f.raw)
			return
		}
		writeJSON(w, f.status, f.body)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *GitHub) routes() {
	s.mux.HandleFunc(RouteApp, s.app(s.getApp))
	s.mux.HandleFunc(RouteMint, s.mint)
	s.mux.HandleFunc(RouteInstallations, s.app(s.listInstallations))
	s.mux.HandleFunc(RouteDeliveries, s.app(s.listDeliveries))
	s.mux.HandleFunc(RouteRedeliver, s.app(s.redeliver))
	s.mux.HandleFunc(RouteRepos, s.inst(s.listRepos))
	s.mux.HandleFunc(RouteListPulls, s.repo(s.listPulls))
	s.mux.HandleFunc(RouteCreatePull, s.repo(s.createPull))
	s.mux.HandleFunc(RouteBranch, s.repo(s.getBranch))
	s.mux.HandleFunc(RouteRef, s.repo(s.getRef))
	s.mux.HandleFunc(RouteIssue, s.repo(s.getIssue))
	s.mux.HandleFunc(RouteRepo, s.repo(func(w http.ResponseWriter, r *http.Request, repo string) {
		writeJSON(w, http.StatusOK, fullRepoShape(s.repoJSON(repo)))
	}))
	s.mux.HandleFunc(RouteGraphQL, s.inst(s.graphql))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { notFound(w) })
}

// app requires the App JWT.
func (s *GitHub) app(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkJWT(r); err != nil {
			writeJSON(w, http.StatusUnauthorized, map[string]any{
				"message": "A JSON web token could not be decoded", "documentation_url": "https://docs.github.com/rest",
			})
			return
		}
		h(w, r)
	}
}

// inst requires a live installation token and passes its installation.
func (s *GitHub) inst(h func(http.ResponseWriter, *http.Request, *installation)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in := s.tokenInstallation(r)
		if in == nil {
			writeJSON(w, http.StatusUnauthorized, map[string]any{
				"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest",
			})
			return
		}
		h(w, r, in)
	}
}

// repo requires an installation token that reaches {owner}/{repo}; GitHub
// answers 404 for a repository the token cannot see.
func (s *GitHub) repo(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return s.inst(func(w http.ResponseWriter, r *http.Request, in *installation) {
		full := r.PathValue("owner") + "/" + r.PathValue("repo")
		for _, name := range in.repos {
			if strings.EqualFold(name, full) {
				h(w, r, name)
				return
			}
		}
		notFound(w)
	})
}

func (s *GitHub) tokenInstallation(r *http.Request) *installation {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "token ")
	if !ok {
		tok, ok = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok || time.Now().After(t.expires) {
		return nil
	}
	for _, in := range s.installations {
		if in.id == t.installation {
			return in
		}
	}
	return nil
}

// rateLimit is the primary limit of the sandbox's hour, per resource as
// GitHub counts it.
const rateLimit = 5000

// rateHeaders sets GitHub's x-ratelimit-* headers, which GitHub sends on
// every REST and GraphQL answer, errors and rate limits included (a fault
// may set its own over them).
func (s *GitHub) rateHeaders(w http.ResponseWriter, r *http.Request) {
	resource := resourceOf(r)
	s.mu.Lock()
	s.remaining = max(s.remaining-1, 1)
	rem := s.remaining
	s.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(rateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(rem))
	h.Set("X-RateLimit-Used", strconv.Itoa(rateLimit-rem))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", resource)
}

func (s *GitHub) mint(w http.ResponseWriter, r *http.Request) {
	if err := s.checkJWT(r); err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{
			"message": "A JSON web token could not be decoded", "documentation_url": "https://docs.github.com/rest",
		})
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	var in *installation
	for _, c := range s.installations {
		if c.id == id {
			in = c
		}
	}
	if in == nil || in.suspended != nil {
		s.mu.Unlock()
		if in == nil {
			notFound(w)
			return
		}
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "This installation has been suspended"})
		return
	}
	exp := time.Now().Add(s.tokenTTL).UTC().Truncate(time.Second)
	tok := s.newToken(id, exp)
	s.mints++
	s.tokens[tok] = token{installation: id, expires: exp.Add(time.Second)}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":                tok,
		"expires_at":           exp.Format(time.RFC3339),
		"permissions":          map[string]string{"contents": "write", "issues": "read", "metadata": "read", "pull_requests": "write"},
		"repository_selection": "selected",
	})
}

func (s *GitHub) listInstallations(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	all := make([]any, 0, len(s.installations))
	for _, in := range s.installations {
		all = append(all, s.installationJSON(in))
	}
	s.mu.Unlock()
	page, ok := paginate(w, r, all)
	if ok {
		writeJSON(w, http.StatusOK, page)
	}
}

func (s *GitHub) installationJSON(in *installation) map[string]any {
	var suspended any
	if in.suspended != nil {
		suspended = in.suspended.Format(time.RFC3339)
	}
	return installationShape(map[string]any{
		"id":                   in.id,
		"account":              accountShape(map[string]any{"login": in.account, "id": in.id * 10, "type": "Organization"}),
		"app_id":               s.appID,
		"target_id":            in.id * 10,
		"target_type":          "Organization",
		"repository_selection": "selected",
		"access_tokens_url":    s.srv.URL + "/app/installations/" + strconv.FormatInt(in.id, 10) + "/access_tokens",
		"repositories_url":     s.srv.URL + "/installation/repositories",
		"permissions":          map[string]string{"contents": "write", "issues": "read", "metadata": "read", "pull_requests": "write"},
		"events":               []string{"pull_request", "installation", "installation_repositories"},
		"created_at":           "2026-01-01T00:00:00Z",
		"updated_at":           "2026-01-01T00:00:00Z",
		"suspended_at":         suspended,
		"suspended_by":         nil,
	})
}

func (s *GitHub) listRepos(w http.ResponseWriter, r *http.Request, in *installation) {
	s.mu.Lock()
	all := make([]any, 0, len(in.repos))
	for _, name := range in.repos {
		all = append(all, s.repoJSON(name))
	}
	s.mu.Unlock()
	page, ok := paginate(w, r, all)
	if ok {
		writeJSON(w, http.StatusOK, map[string]any{
			"total_count": len(all), "repository_selection": "selected", "repositories": page,
		})
	}
}

func (s *GitHub) repoJSON(full string) map[string]any {
	owner, name := ghrepo.Split(full)
	id := s.repoID(full)
	return repoShape(map[string]any{
		"id":             id,
		"node_id":        "R_" + strconv.FormatInt(id, 36),
		"name":           name,
		"full_name":      full,
		"private":        false,
		"owner":          map[string]any{"login": owner, "type": "Organization"},
		"html_url":       "https://github.com/" + full,
		"url":            s.srv.URL + "/repos/" + full,
		"default_branch": "master",
		"archived":       false,
	})
}

func (s *GitHub) prJSON(repo string, p PR) map[string]any {
	ts := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return t.UTC().Format(time.RFC3339)
	}
	var closed *time.Time
	if p.State == "closed" {
		c := p.CreatedAt // no later than anything the tests know of
		if p.MergedAt != nil {
			c = *p.MergedAt
		}
		closed = &c
	}
	var headRepo any
	if p.HeadRepo != "" {
		headRepo = s.repoJSON(p.HeadRepo)
	}
	baseOwner, _ := ghrepo.Split(repo)
	return prShape(map[string]any{
		"url":        fmt.Sprintf("%srepos/%s/pulls/%d", s.URL(), repo, p.Number),
		"id":         int64(p.Number) + 9_000_000,
		"node_id":    fmt.Sprintf("PR_%d", p.Number),
		"html_url":   fmt.Sprintf("https://github.com/%s/pull/%d", repo, p.Number),
		"number":     p.Number,
		"state":      p.State,
		"locked":     false,
		"title":      p.Title,
		"body":       p.Body,
		"user":       map[string]any{"login": p.labelOwner(), "type": "User"},
		"created_at": ts(&p.CreatedAt),
		"updated_at": ts(&p.CreatedAt),
		"closed_at":  ts(closed),
		"merged_at":  ts(p.MergedAt),
		"draft":      false,
		"head": map[string]any{
			"label": p.labelOwner() + ":" + p.HeadRef, "ref": p.HeadRef, "sha": p.HeadSHA,
			"user": map[string]any{"login": p.labelOwner()}, "repo": headRepo,
		},
		"base": map[string]any{
			"label": baseOwner + ":" + p.Base, "ref": p.Base, "sha": strings.Repeat("0", 40),
			"user": map[string]any{"login": baseOwner}, "repo": s.repoJSON(repo),
		},
		"author_association": "CONTRIBUTOR",
	})
}

// listPulls filters like GitHub: head is "owner:branch" (a bare branch
// matches nothing, so the filter is ignored and every PR comes back), state
// defaults to open, newest first.
func (s *GitHub) listPulls(w http.ResponseWriter, r *http.Request, repo string) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
		return
	}
	headOwner, headRef, filtered := strings.Cut(q.Get("head"), ":")
	s.mu.Lock()
	list := append([]PR(nil), s.prs[strings.ToLower(repo)]...)
	broken := filtered && s.listErrors[headRef]
	s.mu.Unlock()
	if broken {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "Server Error"})
		return
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Number > list[j].Number })
	all := []any{}
	for _, p := range list {
		if state != "all" && p.State != state {
			continue
		}
		if filtered && (p.HeadRef != headRef || !strings.EqualFold(p.labelOwner(), headOwner)) {
			continue
		}
		all = append(all, s.prJSON(repo, p))
	}
	page, ok := paginate(w, r, all)
	if ok {
		writeJSON(w, http.StatusOK, page)
	}
}

func (s *GitHub) createPull(w http.ResponseWriter, r *http.Request, repo string) {
	var in struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
		return
	}
	owner, _ := ghrepo.Split(repo)
	head := in.Head
	if o, b, ok := strings.Cut(in.Head, ":"); ok {
		if !strings.EqualFold(o, owner) {
			validation(w, map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"})
			return
		}
		head = b
	}
	if in.Title == "" || in.Base == "" || head == "" {
		validation(w, map[string]any{"resource": "PullRequest", "code": "missing_field", "field": "title"})
		return
	}
	sha, ok := s.branch(repo, head)
	if !ok {
		validation(w, map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.prRefusals[head]; ok {
		validation(w, e)
		return
	}
	k := strings.ToLower(repo)
	for _, p := range s.prs[k] {
		if p.State == "open" && p.HeadRef == head && strings.EqualFold(p.HeadRepo, repo) {
			validation(w, map[string]any{"resource": "PullRequest", "code": "custom",
				"message": "A pull request already exists for " + owner + ":" + head + "."})
			return
		}
	}
	n := s.addPR(repo, PR{HeadRef: head, HeadRepo: repo, HeadSHA: sha, Base: in.Base,
		State: "open", Title: in.Title, Body: in.Body})
	for _, p := range s.prs[k] {
		if p.Number == n {
			writeJSON(w, http.StatusCreated, prFullShape(s.prJSON(repo, p)))
		}
	}
}

func validation(w http.ResponseWriter, e map[string]any) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            []any{e},
		"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
		"status":            "422",
	})
}

func (s *GitHub) branch(repo, name string) (string, bool) {
	k := strings.ToLower(repo)
	s.mu.Lock()
	r := s.remotes[k]
	sha, ok := s.branches[k][name]
	s.mu.Unlock()
	if r != nil {
		sha = r.Ref(name)
		return sha, sha != ""
	}
	return sha, ok
}

func (s *GitHub) getBranch(w http.ResponseWriter, r *http.Request, repo string) {
	name := r.PathValue("branch")
	sha, ok := s.branch(repo, name)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Branch not found", "documentation_url": "https://docs.github.com/rest/branches/branches#get-a-branch"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name":      name,
		"commit":    map[string]any{"sha": sha, "url": s.URL() + "repos/" + repo + "/commits/" + sha},
		"protected": false,
	})
}

// EmptyRepoMessage is GitHub's 409 to a ref read of a repository with no
// commit yet.
const EmptyRepoMessage = "Git Repository is empty."

func (s *GitHub) getRef(w http.ResponseWriter, r *http.Request, repo string) {
	name := r.PathValue("branch")
	sha, ok := s.branch(repo, name)
	if !ok {
		if s.emptyRepo(repo) {
			writeJSON(w, http.StatusConflict, map[string]any{"message": EmptyRepoMessage,
				"documentation_url": "https://docs.github.com/rest/git/refs#get-a-reference", "status": "409"})
			return
		}
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"ref":     "refs/heads/" + name,
		"node_id": "REF_" + name,
		"url":     s.URL() + "repos/" + repo + "/git/refs/heads/" + name,
		"object":  map[string]any{"sha": sha, "type": "commit", "url": s.URL() + "repos/" + repo + "/git/commits/" + sha},
	})
}

func (s *GitHub) getIssue(w http.ResponseWriter, r *http.Request, repo string) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil {
		notFound(w)
		return
	}
	s.mu.Lock()
	is, ok := s.issues[strings.ToLower(repo)][n]
	s.mu.Unlock()
	if !ok {
		notFound(w)
		return
	}
	state := "closed"
	if is.open {
		state = "open"
	}
	writeJSON(w, http.StatusOK, issueShape(map[string]any{
		"url":      fmt.Sprintf("%srepos/%s/issues/%d", s.URL(), repo, n),
		"id":       int64(n) + 7_000_000,
		"number":   n,
		"state":    state,
		"title":    is.title,
		"body":     "",
		"html_url": fmt.Sprintf("https://github.com/%s/issues/%d", repo, n),
		"labels":   []any{},
		"user":     map[string]any{"login": "queen", "type": "User"},
	}))
}

// listDeliveries answers newest first, with cursor paging ("v1_<id>": the
// deliveries older than id).
func (s *GitHub) listDeliveries(w http.ResponseWriter, r *http.Request) {
	perPage := 30
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
		perPage = min(v, 100)
	}
	s.mu.Lock()
	list := append([]Delivery(nil), s.deliveries...)
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool {
		if !list[i].DeliveredAt.Equal(list[j].DeliveredAt) {
			return list[i].DeliveredAt.After(list[j].DeliveredAt)
		}
		return list[i].ID > list[j].ID
	})
	start := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		id, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "invalid cursor"})
			return
		}
		start = len(list)
		for i, d := range list {
			if d.ID == id {
				start = i + 1
			}
		}
	}
	end := min(start+perPage, len(list))
	out := make([]any, 0, end-start)
	for _, d := range list[start:end] {
		status := "OK"
		switch {
		case d.StatusCode == 0:
			status = "pending"
		case d.StatusCode/100 != 2:
			status = "Invalid HTTP Response: " + strconv.Itoa(d.StatusCode)
		}
		out = append(out, map[string]any{
			"id":              d.ID,
			"guid":            d.GUID,
			"delivered_at":    d.DeliveredAt.UTC().Format(time.RFC3339),
			"redelivery":      d.Redelivery,
			"duration":        0.27,
			"status":          status,
			"status_code":     d.StatusCode,
			"event":           d.Event,
			"action":          d.Action,
			"installation_id": d.InstallationID,
			"repository_id":   d.RepositoryID,
			"throttled_at":    nil,
		})
	}
	if end < len(list) {
		u := *r.URL
		q := u.Query()
		q.Set("cursor", "v1_"+strconv.FormatInt(list[end-1].ID, 10))
		q.Set("per_page", strconv.Itoa(perPage))
		u.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.srv.URL, u.RequestURI()))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *GitHub) redeliver(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	var orig *Delivery
	for i := range s.deliveries {
		if s.deliveries[i].ID == id {
			orig = &s.deliveries[i]
		}
	}
	if orig == nil {
		// GitHub documents 400 and 422 for this route, never 404.
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"message": "Validation Failed", "errors": []any{map[string]any{"resource": "HookDelivery", "field": "id", "code": "invalid"}},
			"documentation_url": "https://docs.github.com/rest/apps/webhooks#redeliver-a-delivery-for-an-app-webhook",
		})
		return
	}
	s.redelivered = append(s.redelivered, id)
	s.nextDelivery++
	d := *orig
	// An attempt is always later than the one it repeats, even when the test
	// dated that one in the future.
	when := time.Now().UTC()
	if !when.After(orig.DeliveredAt) {
		when = orig.DeliveredAt.Add(time.Second)
	}
	d.ID, d.Redelivery, d.StatusCode, d.DeliveredAt = s.nextDelivery, true, s.redeliverCode, when
	s.deliveries = append(s.deliveries, d)
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

// paginate serves GitHub's page/per_page paging with a Link header.
func paginate(w http.ResponseWriter, r *http.Request, all []any) ([]any, bool) {
	q := r.URL.Query()
	perPage, page := 30, 1
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
			return nil, false
		}
		perPage = min(n, 100)
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
			return nil, false
		}
		page = n
	}
	last := max((len(all)+perPage-1)/perPage, 1)
	link := func(p int, rel string) string {
		u := *r.URL
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(perPage))
		u.RawQuery = v.Encode()
		return fmt.Sprintf(`<http://%s%s>; rel="%s"`, r.Host, u.RequestURI(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(page-1, "prev"), link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	start := min((page-1)*perPage, len(all))
	return all[start:min(start+perPage, len(all))], true
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
