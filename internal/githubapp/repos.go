package githubapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"
)

// Installation is one installation of the App.
type Installation struct {
	ID        int64
	Account   string
	Suspended bool
}

// Repo is a repository an installation can reach.
type Repo struct {
	ID       int64
	FullName string // "owner/name"
	Archived bool
}

// Installations lists every installation of the App (all pages), with the
// App JWT.
func (a *App) Installations(ctx context.Context) ([]Installation, error) {
	const op = "GET /app/installations"
	opts := &github.ListOptions{PerPage: 100}
	var out []Installation
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fail(op, badAnswer(fmt.Errorf("more than %d pages", maxPages)))
		}
		list, resp, err := a.appClient.Apps.ListInstallations(ctx, opts)
		if err != nil {
			return nil, failApp(op, err)
		}
		for _, in := range list {
			if in == nil {
				continue // a null in the list names nothing
			}
			out = append(out, Installation{
				ID:        in.GetID(),
				Account:   in.GetAccount().GetLogin(),
				Suspended: in.SuspendedAt != nil,
			})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// InstallationRepos lists every repository the installation reaches (all
// pages).
func (a *App) InstallationRepos(ctx context.Context, installationID int64) ([]Repo, error) {
	const op = "GET /installation/repositories"
	in, err := a.installation(installationID)
	if err != nil {
		return nil, err
	}
	opts := &github.ListOptions{PerPage: 100}
	var out []Repo
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fail(op, badAnswer(fmt.Errorf("more than %d pages", maxPages)))
		}
		list, resp, err := in.gh.Apps.ListRepos(ctx, opts)
		if err != nil {
			return nil, fail(op, err)
		}
		for _, r := range list.Repositories {
			out = append(out, Repo{ID: r.GetID(), FullName: r.GetFullName(), Archived: r.GetArchived()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// BranchHead is the commit a branch points at, or "" when the branch does
// not exist: 404, or GitHub's 409 "Git Repository is empty." for a
// repository with no commit yet (any other 409 is an error). Only the
// exact ref counts (GET git/ref/heads/{branch}).
func (a *App) BranchHead(ctx context.Context, installationID int64, owner, repo, branch string) (string, error) {
	op := "GET /repos/" + owner + "/" + repo + "/git/ref/heads/" + branch
	in, err := a.installation(installationID)
	if err != nil {
		return "", err
	}
	ref, _, err := in.gh.Git.GetRef(ctx, owner, repo, "heads/"+branch)
	if err != nil {
		if status(err) == http.StatusNotFound || emptyRepository(err) {
			return "", nil
		}
		return "", fail(op, err)
	}
	if ref.GetRef() != "refs/heads/"+branch {
		return "", nil
	}
	return ref.GetObject().GetSHA(), nil
}

// Issue reads whether issue n is open, and its title.
func (a *App) Issue(ctx context.Context, installationID int64, owner, repo string, n int) (open bool, title string, err error) {
	op := "GET /repos/" + owner + "/" + repo + "/issues/" + strconv.Itoa(n)
	in, err := a.installation(installationID)
	if err != nil {
		return false, "", err
	}
	is, _, err := in.gh.Issues.Get(ctx, owner, repo, n)
	if err != nil {
		return false, "", fail(op, err)
	}
	return is.GetState() == "open", is.GetTitle(), nil
}

// CreatePR opens a PR from head (a branch of owner/repo) into base and
// returns its number. When GitHub answers that an open PR from head already
// exists, that PR's number is returned.
func (a *App) CreatePR(ctx context.Context, installationID int64, owner, repo, base, head, title, body string) (int, error) {
	op := "POST /repos/" + owner + "/" + repo + "/pulls"
	in, err := a.installation(installationID)
	if err != nil {
		return 0, err
	}
	pr, _, err := in.gh.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: &title, Head: &head, Base: &base, Body: &body,
	})
	if err == nil {
		return pr.GetNumber(), nil
	}
	if !alreadyExists(err) {
		return 0, fail(op, err)
	}
	prs, lerr := a.ListBranchPRs(ctx, installationID, owner, repo, head)
	if lerr != nil {
		return 0, lerr
	}
	for _, p := range prs {
		if p.State == "open" {
			return p.Number, nil
		}
	}
	// GitHub said it exists; the list has not caught up yet.
	return 0, fail(op, errors.New("GitHub says a pull request from "+head+" exists, but none is listed open yet"))
}

func alreadyExists(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, e := range er.Errors {
		if strings.Contains(e.Message, "A pull request already exists") {
			return true
		}
	}
	return strings.Contains(er.Message, "A pull request already exists")
}

// InstallationToken is the installation's current token, for git over HTTPS.
// It comes from the cached transport, so it is minted only when the last one
// is near expiry. Never log it.
func (a *App) InstallationToken(ctx context.Context, installationID int64) (string, error) {
	in, err := a.installation(installationID)
	if err != nil {
		return "", err
	}
	tok, err := in.tr.Token(ctx)
	if err != nil {
		return "", fail("installation token", err)
	}
	return tok, nil
}

// emptyRepository reports GitHub's answer to a ref read of a repository
// with no commit: 409 "Git Repository is empty.".
func emptyRepository(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusConflict &&
		strings.Contains(strings.ToLower(er.Message), "repository is empty")
}

// status is the HTTP status of a go-github error, 0 when none.
func status(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}
