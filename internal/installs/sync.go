package installs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/retry"
)

// Source lists the App's installations and their repositories;
// *githubapp.App is one.
type Source interface {
	Installations(ctx context.Context) ([]githubapp.Installation, error)
	InstallationRepos(ctx context.Context, installationID int64) ([]githubapp.Repo, error)
}

// mover is a Source that can tell where a repository moved
// (*githubapp.App).
type mover interface {
	MovedTo(ctx context.Context, installationID int64, full string) (string, error)
}

// Sync makes reg what src lists: every installation with its repositories
// and suspended flag. A suspended installation cannot list its repositories
// (it mints no token), so it keeps the ones reg already knows. When the list
// of installations cannot be read, reg is left alone; when one
// installation's repositories cannot be read, it keeps the ones reg knows,
// the others are written, and the error is returned so the caller retries.
func Sync(ctx context.Context, src Source, reg *Registry) error {
	list, err := src.Installations(ctx)
	if err != nil {
		return fmt.Errorf("installs: sync: %w", err)
	}
	known, err := reg.Repos(ctx)
	if err != nil {
		return fmt.Errorf("installs: sync: %w", err)
	}
	byID := map[int64][]string{}
	for _, r := range known {
		byID[r.InstallationID] = append(byID[r.InstallationID], r.Name)
	}
	var errs []error
	moved := map[string]string{} // an old name kept -> the repository's current name
	insts := make([]Installation, 0, len(list))
	for _, in := range list {
		if in.ID <= 0 {
			continue
		}
		inst := Installation{ID: in.ID, Suspended: in.Suspended}
		if in.Suspended {
			inst.Repos = byID[in.ID]
			insts = append(insts, inst)
			continue
		}
		repos, err := src.InstallationRepos(ctx, in.ID)
		if err != nil {
			errs = append(errs, fmt.Errorf("installation %d: %w", in.ID, err))
			inst.Repos = byID[in.ID]
			insts = append(insts, inst)
			continue
		}
		for _, r := range repos {
			if ghrepo.Valid(r.FullName) {
				inst.Repos = append(inst.Repos, r.FullName)
			}
		}
		if m, ok := src.(mover); ok {
			old, to, err := movedNames(ctx, m, in.ID, byID[in.ID], inst.Repos)
			if err != nil {
				errs = append(errs, fmt.Errorf("installation %d: %w", in.ID, err))
			}
			inst.Repos = append(inst.Repos, old...)
			for o, t := range to {
				moved[o] = t
			}
		}
		insts = append(insts, inst)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("installs: sync: %w", err)
	}
	if err := reg.Replace(ctx, insts, len(errs) == 0); err != nil {
		return err
	}
	for old, to := range moved {
		if err := reg.SetMoved(ctx, old, to); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("installs: sync: %w", errors.Join(errs...))
	}
	return nil
}

// movedNames are the names of known that GitHub lists no more but still
// redirects to a repository of listed (and, by old name, where to): a renamed or transferred
// repository's rows stay under the name they were written with and are read
// through GitHub's redirect, so the name stays installed. A name whose
// answer failed stays too, and the error says the sync is incomplete.
func movedNames(ctx context.Context, m mover, id int64, known, listed []string) ([]string, map[string]string, error) {
	in := func(name string, names []string) bool {
		for _, n := range names {
			if ghrepo.Same(n, name) {
				return true
			}
		}
		return false
	}
	var keep []string
	moved := map[string]string{}
	var errs []error
	for _, old := range known {
		if in(old, listed) {
			continue
		}
		to, err := m.MovedTo(ctx, id, old)
		switch {
		case err != nil:
			errs = append(errs, err)
			keep = append(keep, old)
		case to != "" && !ghrepo.Same(to, old) && in(to, listed):
			keep = append(keep, old)
			moved[old] = to
		}
	}
	return keep, moved, errors.Join(errs...)
}

// SyncUntilDone runs Sync until it completes once, backing off while GitHub
// cannot be reached; installation events and claim:sweep keep it current.
func SyncUntilDone(ctx context.Context, src Source, reg *Registry, log *slog.Logger) {
	if retry.Until(ctx, log, "installation sync", func(ctx context.Context) error { return Sync(ctx, src, reg) }) == nil {
		log.Info("installations synced")
	}
}
