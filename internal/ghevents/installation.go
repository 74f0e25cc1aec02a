package ghevents

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/installs"
)

// installation and installation_repositories keep the registry of installed
// repositories current between syncs; a suspended installation is paused.

type installationEvent struct {
	Action       string `json:"action"`
	Installation *struct {
		ID          int64           `json:"id"`
		SuspendedAt json.RawMessage `json:"suspended_at"`
	} `json:"installation"`
	Repositories        *[]repoRef `json:"repositories"`
	RepositoriesAdded   []repoRef  `json:"repositories_added"`
	RepositoriesRemoved []repoRef  `json:"repositories_removed"`
}

func parseInstallation(d *delivery, body []byte) (installationEvent, *outcome) {
	var ev installationEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		o := fail(http.StatusBadRequest, "body is not an "+d.event+" payload")
		return ev, &o
	}
	d.action = ev.Action
	if ev.Installation == nil || ev.Installation.ID <= 0 {
		o := fail(http.StatusBadRequest, d.event+" payload lacks installation.id")
		return ev, &o
	}
	d.attrs = append(d.attrs, slog.Int64("installation_id", ev.Installation.ID))
	return ev, nil
}

func (h *handler) installation(ctx context.Context, d *delivery, body []byte) outcome {
	ev, bad := parseInstallation(d, body)
	if bad != nil {
		return *bad
	}
	id := ev.Installation.ID
	var write func(context.Context) error
	switch ev.Action {
	case "deleted":
		write = func(ctx context.Context) error { return h.installs.Remove(ctx, id) }
	case "created", "new_permissions_accepted", "suspend", "unsuspend":
		suspended := ev.Action == "suspend" ||
			(ev.Action != "unsuspend" && len(ev.Installation.SuspendedAt) > 0 && string(ev.Installation.SuspendedAt) != "null")
		switch {
		case ev.Repositories != nil:
			names, ok := repoNames(*ev.Repositories)
			if !ok {
				return fail(http.StatusBadRequest, "installation payload has a bad repository full_name")
			}
			d.attrs = append(d.attrs, slog.Int("repos", len(names)))
			inst := installs.Installation{ID: id, Repos: names, Suspended: suspended}
			write = func(ctx context.Context) error { return h.installs.Set(ctx, inst) }
		case suspended:
			write = func(ctx context.Context) error { return h.installs.Suspend(ctx, id) }
		default:
			write = func(ctx context.Context) error { return h.installs.Unsuspend(ctx, id) }
		}
	default:
		return ignored("action not acted on")
	}
	return h.once(ctx, d, write)
}

func (h *handler) installationRepositories(ctx context.Context, d *delivery, body []byte) outcome {
	ev, bad := parseInstallation(d, body)
	if bad != nil {
		return *bad
	}
	var list []repoRef
	switch ev.Action {
	case "added":
		list = ev.RepositoriesAdded
	case "removed":
		list = ev.RepositoriesRemoved
	default:
		return ignored("action not acted on")
	}
	names, ok := repoNames(list)
	if !ok {
		return fail(http.StatusBadRequest, "installation_repositories payload has a bad repository full_name")
	}
	d.attrs = append(d.attrs, slog.Int("repos", len(names)))
	id := ev.Installation.ID
	return h.once(ctx, d, func(ctx context.Context) error {
		if ev.Action == "added" {
			return h.installs.AddRepos(ctx, id, names...)
		}
		return h.installs.RemoveRepos(ctx, id, names...)
	})
}

func repoNames(list []repoRef) ([]string, bool) {
	names := make([]string, 0, len(list))
	for _, r := range list {
		if !ghrepo.Valid(r.FullName) {
			return nil, false
		}
		names = append(names, r.FullName)
	}
	return names, true
}
