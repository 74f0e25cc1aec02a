package githubapp

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/go-github/v66/github"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// MovedTo is the current full name of the repository the installation
// knew as full ("owner/name"): GitHub redirects a renamed or transferred
// repository's old name to it. "" when the installation cannot see it
// (404: removed from the installation, or deleted).
func (a *App) MovedTo(ctx context.Context, installationID int64, full string) (string, error) {
	op := "GET /repos/" + full
	in, err := a.installation(installationID)
	if err != nil {
		return "", err
	}
	owner, name := ghrepo.Split(full)
	r, _, err := in.gh.Repositories.Get(ctx, owner, name)
	var er *github.ErrorResponse
	switch {
	case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound:
		return "", nil
	case err != nil:
		return "", fail(op, err)
	}
	return r.GetFullName(), nil
}
