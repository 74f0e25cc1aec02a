package worker

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/redact"
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
	if r := prRefusal(err); r != nil {
		return 0, r
	}
	if err != nil {
		return 0, githubError("github CreatePR", err)
	}
	return n, nil
}

// maxPRRefusal caps GitHub's words kept in a pr-refused refusal.
const maxPRRefusal = 300

// prRefusal is GitHub's 422 Validation Failed on a PR creation as the
// publisher records it: the refusal pr-refused with GitHub's words when the
// same request would get the same answer until the row changes ("No
// commits between master and queen-5"), so no sweep spends a PR creation
// on it again. nil for any other answer, and for a 422 naming the base or
// head field (a branch missing): the base comes back when a person
// restores it and the next attempt pushes the head again, so those stay
// failures that the sweep retries with its backoff, as other 4xx do. An
// existing PR never gets here: githubapp answers it with its number.
func prRefusal(err error) *export.Refusal {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return nil
	}
	var said []string
	for _, e := range er.Errors {
		if e.Field == "base" || e.Field == "head" {
			return nil
		}
		if m := e.Message; m != "" {
			said = append(said, m)
		} else {
			said = append(said, strings.Trim(e.Resource+" "+e.Field+" "+e.Code, " "))
		}
	}
	reason := "GitHub answered 422 " + er.Message
	if len(said) > 0 {
		reason += ": " + strings.Join(said, "; ")
	}
	return &export.Refusal{Kind: export.KindPRRefused, Reason: redact.Line(reason, maxPRRefusal)}
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
