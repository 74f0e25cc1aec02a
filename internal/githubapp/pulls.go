package githubapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
)

// maxPages bounds a paged read (100 per page); a longer list is an error,
// never a partial answer. A variable only so tests can reach the bound.
var maxPages = 100

// PR is one pull request whose head is a branch of the base repository.
type PR struct {
	Number    int
	State     string // "open" or "closed"
	Merged    bool   // merged_at is set
	HeadRepo  string // full name of the head repository
	HeadSHA   string
	CreatedAt time.Time
}

// Pull is p as a dispatch row's attempt reads it.
func (p PR) Pull() dispatch.PR {
	return dispatch.PR{Number: p.Number, State: p.State, Merged: p.Merged, HeadSHA: p.HeadSHA, CreatedAt: p.CreatedAt}
}

// errNoAttemptFacts: a PR listed without its head commit or its creation
// time cannot be told to be an attempt's or an earlier one's, so the read
// decides nothing.
var errNoAttemptFacts = errors.New("a pull request without its head commit or creation time")

// errNoHeadRepository: a PR listed without what tells a fork's from the
// base repository's (isCrossRepository; REST's head and base repository
// ids) cannot be counted or dropped.
var errNoHeadRepository = errors.New("a pull request without its head and base repository ids")

// ListBranchPRs lists every PR, in any state, whose head is branch of
// owner/repo itself: GET /repos/{o}/{r}/pulls?head=owner:branch&state=all,
// all pages. PRs from forks (or a deleted fork: a null head repository) are
// dropped. Any failed page fails the whole read, and so does a PR listed
// without its head commit or creation time.
func (a *App) ListBranchPRs(ctx context.Context, installationID int64, owner, repo, branch string) ([]PR, error) {
	op := "GET /repos/" + owner + "/" + repo + "/pulls?head=" + owner + ":" + branch
	in, err := a.installation(installationID)
	if err != nil {
		return nil, err
	}
	opts := &github.PullRequestListOptions{
		State:       "all",
		Head:        owner + ":" + branch,
		ListOptions: github.ListOptions{PerPage: 100},
	}
	var out []PR
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fail(op, badAnswer(fmt.Errorf("more than %d pages", maxPages)))
		}
		prs, resp, err := in.gh.PullRequests.List(ctx, owner, repo, opts)
		if err != nil {
			return nil, fail(op, err)
		}
		if page == 1 {
			// A transferred repository's PRs are headed by its new owner:
			// the old owner's head filter matches none of them.
			to, err := a.transferredTo(ctx, in, owner, resp)
			if err != nil {
				return nil, fail(op, err)
			}
			if to != "" {
				o, r := ghrepo.Split(to)
				return a.ListBranchPRs(ctx, installationID, o, r, branch)
			}
		}
		for _, p := range prs {
			head := p.GetHead()
			if head == nil || head.GetRef() != branch || head.Repo == nil {
				continue // a deleted fork's
			}
			// A fork's PR by id, never by name: a renamed or transferred
			// repository's PRs name it by its new name.
			base := p.GetBase().GetRepo().GetID()
			if head.Repo.GetID() == 0 || base == 0 {
				return nil, fail(op, badAnswer(fmt.Errorf("#%d: %w", p.GetNumber(), errNoHeadRepository)))
			}
			if head.Repo.GetID() != base {
				continue
			}
			if head.GetSHA() == "" || p.GetCreatedAt().IsZero() {
				return nil, fail(op, badAnswer(fmt.Errorf("#%d: %w", p.GetNumber(), errNoAttemptFacts)))
			}
			out = append(out, PR{
				Number:    p.GetNumber(),
				State:     p.GetState(),
				Merged:    !p.GetMergedAt().IsZero(),
				HeadRepo:  head.Repo.GetFullName(),
				HeadSHA:   head.GetSHA(),
				CreatedAt: p.GetCreatedAt().UTC(),
			})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}

// transferredTo is the repository's new full name when GitHub redirected a
// request for it (a rename or transfer answers 301 to /repositories/{id})
// to a repository of another owner than owner; "" when it did not.
func (a *App) transferredTo(ctx context.Context, in *installation, owner string, resp *github.Response) (string, error) {
	if resp == nil || resp.Response == nil || resp.Request == nil {
		return "", nil
	}
	_, rest, ok := strings.Cut(resp.Request.URL.Path, "/repositories/")
	if !ok {
		return "", nil
	}
	idText, _, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return "", nil
	}
	r, _, err := in.gh.Repositories.GetByID(ctx, id)
	if err != nil {
		return "", err
	}
	if strings.EqualFold(r.GetOwner().GetLogin(), owner) || r.GetFullName() == "" {
		return "", nil // renamed only: the head filter still holds
	}
	return r.GetFullName(), nil
}

// PRsForBranch reads the PR state of branch: counts of open, merged and
// closed-unmerged PRs of the base repository, their numbers, and the PRs.
func (a *App) PRsForBranch(ctx context.Context, installationID int64, owner, repo, branch string) (dispatch.PRState, error) {
	sent := time.Now().UTC() // a read is as old as its request
	prs, err := a.ListBranchPRs(ctx, installationID, owner, repo, branch)
	if err != nil {
		return dispatch.PRState{}, err
	}
	return Summarize(prs, sent), nil
}

// Summarize is prs as a read PRState: every PR counted (no attempt known
// here) and listed, for the ledger to count again for the row's attempt
// and the export for its judged head (dispatch.Attempt).
func Summarize(prs []PR, readAt time.Time) dispatch.PRState {
	listed := make([]dispatch.PR, len(prs))
	for i, p := range prs {
		listed[i] = p.Pull()
	}
	return dispatch.Attempt{}.Count(dispatch.PRState{Read: true, ReadAt: &readAt, Listed: listed})
}

// BatchResult is one branch's answer of BatchPRStates: State (and the PRs
// it counts, by number) when read, Err when not (the branch is unread and
// nothing may be decided from it).
type BatchResult struct {
	State dispatch.PRState
	PRs   []PR
	Err   error
}

// graphQLBatch is GitHub's limit on first: and the number of aliases per query.
const graphQLBatch = 100

// BatchPRStates reads the PR state of many branches of owner/repo with one
// GraphQL query per 100 branches. A branch whose part of the answer errored
// is unread (Err set) while the others are read; a failed request leaves its
// whole batch unread. A branch with more than 100 PRs is read again through
// PRsForBranch. Fork PRs are dropped.
func (a *App) BatchPRStates(ctx context.Context, installationID int64, owner, repo string, branches []string) map[string]BatchResult {
	out := make(map[string]BatchResult, len(branches))
	var uniq []string
	for _, b := range branches {
		if _, ok := out[b]; !ok {
			out[b] = BatchResult{}
			uniq = append(uniq, b)
		}
	}
	in, err := a.installation(installationID)
	for start := 0; start < len(uniq); start += graphQLBatch {
		chunk := uniq[start:min(start+graphQLBatch, len(uniq))]
		if err != nil {
			for _, b := range chunk {
				out[b] = BatchResult{Err: err}
			}
			continue
		}
		a.batch(ctx, in, installationID, owner, repo, chunk, out)
	}
	return out
}

type gqlConnection struct {
	Nodes []struct {
		Number         int        `json:"number"`
		State          string     `json:"state"`
		MergedAt       *time.Time `json:"mergedAt"`
		CreatedAt      *time.Time `json:"createdAt"`
		HeadRefOid     string     `json:"headRefOid"`
		HeadRepository *struct {
			NameWithOwner string `json:"nameWithOwner"`
		} `json:"headRepository"`
		IsCrossRepository *bool `json:"isCrossRepository"`
	} `json:"nodes"`
	PageInfo struct {
		HasNextPage bool `json:"hasNextPage"`
	} `json:"pageInfo"`
}

type gqlError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

func (a *App) batch(ctx context.Context, in *installation, installationID int64, owner, repo string, chunk []string, out map[string]BatchResult) {
	op := "POST graphql " + owner + "/" + repo
	var q strings.Builder
	q.WriteString("query($owner:String!,$name:String!")
	vars := map[string]string{"owner": owner, "name": repo}
	for i, b := range chunk {
		fmt.Fprintf(&q, ",$h%d:String!", i)
		vars["h"+strconv.Itoa(i)] = b
	}
	q.WriteString(") { repository(owner:$owner,name:$name) {")
	for i := range chunk {
		fmt.Fprintf(&q, " b%d: pullRequests(headRefName:$h%d, states:[OPEN,CLOSED,MERGED], first:%d) {"+
			" nodes { number state mergedAt createdAt headRefOid headRepository { nameWithOwner } isCrossRepository } pageInfo { hasNextPage } }", i, i, graphQLBatch)
	}
	q.WriteString(" } }")

	all := func(err error) {
		err = fail(op, err)
		for _, b := range chunk {
			out[b] = BatchResult{Err: err}
		}
	}
	body, err := json.Marshal(map[string]any{"query": q.String(), "variables": vars})
	if err != nil {
		all(err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.graphqlURL, bytes.NewReader(body))
	if err != nil {
		all(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	sent := time.Now().UTC() // a read is as old as its request
	resp, err := in.http.Do(req)
	if err != nil {
		all(err)
		return
	}
	defer resp.Body.Close()
	if err := github.CheckResponse(resp); err != nil {
		all(in.limits.answered(req, resp, err))
		return
	}
	paged := readBatch(op, owner+"/"+repo, chunk, resp.Body, resp.Header, sent, out)
	for _, b := range chunk {
		if r := out[b]; r.Err != nil {
			out[b] = BatchResult{Err: in.limits.answered(req, resp, r.Err)}
		}
	}
	if len(chunk) > 1 && resourceLimited(out[chunk[0]].Err) {
		// GitHub's resource limits answer a query too costly as a whole;
		// its halves are read apart, down to single branches, before the
		// error counts: a 100-branch batch failed as a retry, forever.
		half := len(chunk) / 2
		a.batch(ctx, in, installationID, owner, repo, chunk[:half], out)
		a.batch(ctx, in, installationID, owner, repo, chunk[half:], out)
		return
	}
	for _, b := range paged {
		sent := time.Now().UTC()
		prs, err := a.ListBranchPRs(ctx, installationID, owner, repo, b)
		if err != nil {
			out[b] = BatchResult{Err: err}
			continue
		}
		out[b] = BatchResult{State: Summarize(prs, sent), PRs: prs}
	}
}

// readBatch decodes GraphQL's answer to the query of chunk (aliases b0, b1,
// ...) into one result per branch in out, but for the branches whose PRs run
// past one page: those it returns, in chunk's order, for the caller to read
// another way. full is the base repository (its PRs alone count), op names the
// request in errors, h is the answer's header (its rate limit) and sent when
// the request left.
func readBatch(op, full string, chunk []string, body io.Reader, h http.Header, sent time.Time, out map[string]BatchResult) (paged []string) {
	all := func(err error) {
		err = fail(op, err)
		for _, b := range chunk {
			out[b] = BatchResult{Err: err}
		}
	}
	var ans struct {
		Data *struct {
			Repository map[string]*gqlConnection `json:"repository"`
		} `json:"data"`
		Errors []gqlError `json:"errors"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 32<<20)).Decode(&ans); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			all(fmt.Errorf("answer cut short: %w", err)) // the connection, not the answer
		} else {
			all(badAnswer(fmt.Errorf("decode answer: %w", err)))
		}
		return nil
	}

	alias := make(map[string]int, len(chunk))
	for i := range chunk {
		alias["b"+strconv.Itoa(i)] = i
	}
	aliasErr := map[int]*GraphQLError{}
	for _, e := range ans.Errors {
		ge := graphQLError(e.Type, e.Message, h)
		for _, p := range e.Path {
			ge.Path = append(ge.Path, fmt.Sprint(p))
		}
		if len(ge.Path) >= 2 && ge.Path[0] == "repository" {
			if i, ok := alias[ge.Path[1]]; ok {
				if aliasErr[i] == nil {
					aliasErr[i] = ge
				}
				continue
			}
		}
		all(ge) // an error not confined to one branch spoils the whole answer
		return nil
	}
	if ans.Data == nil || ans.Data.Repository == nil {
		all(badAnswer(errors.New("answer has no repository")))
		return nil
	}
	for i, b := range chunk {
		if ge := aliasErr[i]; ge != nil {
			out[b] = BatchResult{Err: fail(op+" "+b, ge)}
			continue
		}
		conn := ans.Data.Repository["b"+strconv.Itoa(i)]
		if conn == nil {
			out[b] = BatchResult{Err: fail(op+" "+b, badAnswer(errors.New("answer has no data for the branch")))}
			continue
		}
		if conn.PageInfo.HasNextPage {
			paged = append(paged, b)
			continue
		}
		var prs []PR
		var bad error
		for _, n := range conn.Nodes {
			if n.IsCrossRepository == nil {
				bad = fmt.Errorf("#%d: %w", n.Number, errNoHeadRepository)
				break
			}
			// A fork's PR, or a deleted fork's. Never by name: after a
			// rename or transfer GraphQL names the new repository, and
			// every PR was dropped as a fork.
			if *n.IsCrossRepository || n.HeadRepository == nil {
				continue
			}
			if n.HeadRefOid == "" || n.CreatedAt == nil || n.CreatedAt.IsZero() {
				bad = fmt.Errorf("#%d: %w", n.Number, errNoAttemptFacts)
				break
			}
			state := "open"
			if n.State != "OPEN" {
				state = "closed"
			}
			prs = append(prs, PR{Number: n.Number, State: state, Merged: n.MergedAt != nil || n.State == "MERGED",
				HeadRepo: n.HeadRepository.NameWithOwner, HeadSHA: n.HeadRefOid, CreatedAt: n.CreatedAt.UTC()})
		}
		if bad != nil {
			out[b] = BatchResult{Err: fail(op+" "+b, badAnswer(bad))}
			continue
		}
		sort.Slice(prs, func(i, j int) bool { return prs[i].Number < prs[j].Number })
		out[b] = BatchResult{State: Summarize(prs, sent), PRs: prs}
	}
	return paged
}
