package worker

import (
	"context"
	"errors"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubapp"
)

// publishGitHub is export.GitHub over the App, as one installation, with
// its content-creating requests (PR creations) paced; its reads are not.
type publishGitHub struct {
	gh   GitHub
	inst int64
	pace *pacer
}

func (g *publishGitHub) BranchHead(ctx context.Context, repo, branch string) (string, error) {
	owner, name := ghrepo.Split(repo)
	sha, err := g.gh.BranchHead(ctx, g.inst, owner, name, branch)
	if err != nil {
		return "", githubError("github BranchHead", err)
	}
	return sha, nil
}

func (g *publishGitHub) BranchPRs(ctx context.Context, repo, branch string) (export.PRs, error) {
	owner, name := ghrepo.Split(repo)
	sent := time.Now().UTC()
	prs, err := g.gh.ListBranchPRs(ctx, g.inst, owner, name, branch)
	if err != nil {
		return export.PRs{}, githubError("github BranchPRs", err)
	}
	return githubapp.Summarize(prs, sent), nil
}

func (g *publishGitHub) Issue(ctx context.Context, repo string, number int64) (export.IssueInfo, error) {
	owner, name := ghrepo.Split(repo)
	open, title, err := g.gh.Issue(ctx, g.inst, owner, name, int(number))
	if err != nil {
		return export.IssueInfo{}, githubError("github Issue", err)
	}
	return export.IssueInfo{Open: open, Title: title}, nil
}

// CreatePR opens the PR; githubapp already answers an existing open PR
// from the same head with its number.
func (g *publishGitHub) CreatePR(ctx context.Context, repo string, pr export.NewPR) (int, error) {
	if err := g.pace.wait(ctx, g.inst); err != nil {
		return 0, &export.Error{Op: "github CreatePR", Retryable: true, Err: err}
	}
	owner, name := ghrepo.Split(repo)
	n, err := g.gh.CreatePR(ctx, g.inst, owner, name, pr.Base, pr.Head, pr.Title, pr.Body)
	if err != nil {
		return 0, githubError("github CreatePR", err)
	}
	return n, nil
}

// githubError is a failed GitHub call as the publisher reads it: retryable
// (an outage or a rate limit, waited out) unless GitHub refused or answered
// what cannot be used. The GitHub error stays wrapped, so a
// rate limit's wait can still be read with githubapp.WaitFor.
func githubError(op string, err error) error {
	k := githubapp.Classify(err)
	e := &export.Error{Op: op, Retryable: k == githubapp.Retry || k == githubapp.RateLimited, Err: err}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		e.Status = er.Response.StatusCode
	}
	return e
}
