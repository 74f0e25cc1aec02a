package api

import (
	"encoding/json"
	"fmt"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
)

// checkPathFields takes "repo" and "issue" out of a dispatch body once
// they are found equal to the path's: the Queen's own row carries them.
// GitHub names are case-insensitive, so repo is compared that way. A
// mismatch is a 400 naming the field, and nothing is written.
func checkPathFields(obj map[string]json.RawMessage, r *request) error {
	if raw, ok := obj["repo"]; ok {
		var repo string
		if json.Unmarshal(raw, &repo) != nil || !ghrepo.Valid(repo) {
			return badField("repo", "must be the path's owner/name, "+r.repo)
		}
		if !ghrepo.Same(repo, r.repo) {
			return badField("repo", fmt.Sprintf("%q is not the path's %s", repo, r.repo))
		}
		delete(obj, "repo")
	}
	if raw, ok := obj["issue"]; ok {
		issue, err := dispatch.Issue(raw)
		if err != nil {
			return badField("issue", fmt.Sprintf("must be the path's issue, %d", r.issue))
		}
		if issue != r.issue {
			return badField("issue", fmt.Sprintf("%d is not the path's %d", issue, r.issue))
		}
		delete(obj, "issue")
	}
	return nil
}
