package ghevents

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// repository renamed or transferred records the move in the registry at
// once: GitHub's later webhooks name the repository by its new name, and
// they must find its installation and the rows written under the old name
// now, not at the next installation sync.

type repositoryEvent struct {
	Action  string `json:"action"`
	Changes struct {
		Repository *struct {
			Name *struct {
				From string `json:"from"`
			} `json:"name"`
		} `json:"repository"`
		Owner *struct {
			From *struct {
				Organization *struct {
					Login string `json:"login"`
				} `json:"organization"`
				User *struct {
					Login string `json:"login"`
				} `json:"user"`
			} `json:"from"`
		} `json:"owner"`
	} `json:"changes"`
	Repository   *repoRef         `json:"repository"`
	Installation *installationRef `json:"installation"`
}

func (h *handler) repository(ctx context.Context, d *delivery, body []byte) outcome {
	var ev repositoryEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return fail(http.StatusBadRequest, "body is not a repository payload")
	}
	d.action = ev.Action
	if ev.Action != "renamed" && ev.Action != "transferred" {
		return ignored("action not acted on")
	}
	if ev.Installation == nil || ev.Installation.ID <= 0 {
		return fail(http.StatusBadRequest, "repository payload lacks installation.id")
	}
	if ev.Repository == nil || !ghrepo.Valid(ev.Repository.FullName) {
		return fail(http.StatusBadRequest, "repository payload has a bad repository.full_name")
	}
	to := ev.Repository.FullName
	old, ok := movedFrom(ev, to)
	if !ok {
		return fail(http.StatusBadRequest, "repository "+ev.Action+" payload lacks the old name in changes")
	}
	id := ev.Installation.ID
	d.attrs = append(d.attrs, slog.Int64("installation_id", id), slog.String("repo", to), slog.String("from", old))
	return h.once(ctx, d, func(ctx context.Context) error {
		known, err := h.installs.Moved(ctx, id, old, to)
		if err == nil && !known {
			// A transfer that also renamed names only the old owner.
			d.attrs = append(d.attrs, slog.String("note", "old name not installed: the next sync finds it by GitHub's redirect"))
		}
		return err
	})
}

// movedFrom is the repository's name before the event: its old name under
// the same owner for a rename, its name under the old owner for a
// transfer (GitHub's transfer may also rename, and its payload then names
// no old name: installs.Moved maps a name only if it was installed).
func movedFrom(ev repositoryEvent, to string) (string, bool) {
	owner, name := ghrepo.Split(to)
	c := ev.Changes
	switch {
	case ev.Action == "renamed" && c.Repository != nil && c.Repository.Name != nil:
		name = c.Repository.Name.From
	case ev.Action == "transferred" && c.Owner != nil && c.Owner.From != nil && c.Owner.From.Organization != nil:
		owner = c.Owner.From.Organization.Login
	case ev.Action == "transferred" && c.Owner != nil && c.Owner.From != nil && c.Owner.From.User != nil:
		owner = c.Owner.From.User.Login
	default:
		return "", false
	}
	old := owner + "/" + name
	return old, ghrepo.Valid(old)
}
