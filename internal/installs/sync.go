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
	arrived, err := reg.arrived(ctx)
	if err != nil {
		return fmt.Errorf("installs: sync: %w", err)
	}
	byID := map[int64][]string{}
	for _, r := range known {
		byID[r.InstallationID] = append(byID[r.InstallationID], r.Name)
	}
	isArrived := map[string]bool{}
	for _, key := range arrived {
		isArrived[key] = true
	}
	m, canMove := src.(mover)
	var errs []error
	moved := map[string]string{} // an old name kept -> the repository's current name
	insts := make([]Installation, 0, len(list))
	var lost []lostName
	var arrivals []arrival
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
			// A repository may have gone to it unseen: it is asked too.
			arrivals = append(arrivals, arrival{at: len(insts), unread: true})
			insts = append(insts, inst)
			continue
		}
		var listed []string
		for _, r := range repos {
			if ghrepo.Valid(r.FullName) {
				listed = append(listed, r.FullName)
			}
		}
		inst.Repos = listed
		if fresh := newTo(listed, byID[in.ID], isArrived); len(fresh) > 0 {
			arrivals = append(arrivals, arrival{at: len(insts), listed: listed, fresh: fresh})
		}
		if canMove {
			old, to, gone, err := movedNames(ctx, m, in.ID, byID[in.ID], listed)
			if err != nil {
				errs = append(errs, fmt.Errorf("installation %d: %w", in.ID, err))
			}
			inst.Repos = append(inst.Repos, old...)
			for o, t := range to {
				moved[o] = t
			}
			for _, name := range gone {
				lost = append(lost, lostName{name: name, from: len(insts)})
			}
		}
		insts = append(insts, inst)
	}
	if len(lost) > 0 {
		if err := transfers(ctx, m, insts, lost, arrivals, moved); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("installs: sync: %w", err)
	}
	if len(errs) > 0 {
		if err := reg.markArrived(ctx, freshNames(arrivals)...); err != nil {
			return fmt.Errorf("installs: sync: %w", err)
		}
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
	return reg.unmarkArrived(ctx, arrived...)
}

// lostName is a known name its installation (insts[from]) neither lists
// nor reaches by GitHub's redirect.
type lostName struct {
	name string
	from int
}

// arrival is an installation (insts[at]) that lists repositories new to
// it (fresh): where a repository transferred from another installation
// appears. One whose repositories could not be read (unread) may be too.
type arrival struct {
	at            int
	listed, fresh []string
	unread        bool
}

// newTo are the repositories of listed that known (the registry's names of
// their installation) lacks or that are marked arrived: a repository the
// repository event installed under its new name without its old one.
func newTo(listed, known []string, arrived map[string]bool) []string {
	var fresh []string
	for _, name := range listed {
		if !has(known, name) || arrived[ghrepo.Key(name)] {
			fresh = append(fresh, name)
		}
	}
	return fresh
}

// freshNames are the repositories new to their installation. An incomplete
// sync marks them arrived: written by Replace, they would not be new at the
// next sync, which must still ask their installations for the names this
// one kept where they were.
func freshNames(arrivals []arrival) []string {
	var fresh []string
	for _, a := range arrivals {
		fresh = append(fresh, a.fresh...)
	}
	return fresh
}

// transfers keeps the lost names that went to another installation: a
// repository transferred to another account always changes installation,
// and GitHub redirects its old name only for a token that reaches the
// repository, so its old installation's answer cannot keep it. Only the
// installations that list a repository new to them are asked, as that is
// where a transferred repository appears: a repository merely removed from
// its installation then costs a request per such installation, not one per
// installation of the App. A name found is kept under the installation that
// lists it now and mapped to its current name; a failed answer keeps it
// where it was (nothing is dropped on a failed read) and is returned.
func transfers(ctx context.Context, m mover, insts []Installation, lost []lostName, arrivals []arrival, moved map[string]string) error {
	var errs []error
	for _, l := range lost {
		at, to, err := movedAway(ctx, m, insts, l, arrivals)
		switch {
		case err != nil:
			errs = append(errs, err)
			insts[l.from].Repos = append(insts[l.from].Repos, l.name)
		case to != "":
			insts[at].Repos = append(insts[at].Repos, l.name)
			moved[l.name] = to
		}
	}
	return errors.Join(errs...)
}

// movedAway asks the installations of arrivals, but the lost name's own
// (already asked), where GitHub redirects it: the first that lists the
// repository it leads to (insts[at], by its current name to) has it. One
// whose list could not be read has it when its token reaches it: MovedTo
// names only a repository the token can read.
func movedAway(ctx context.Context, m mover, insts []Installation, l lostName, arrivals []arrival) (at int, to string, err error) {
	for _, a := range arrivals {
		id := insts[a.at].ID
		if id == insts[l.from].ID {
			continue
		}
		to, err := m.MovedTo(ctx, id, l.name)
		if err != nil {
			return 0, "", fmt.Errorf("installation %d: %w", id, err)
		}
		if to != "" && !ghrepo.Same(to, l.name) && (a.unread || has(a.listed, to)) {
			return a.at, to, nil
		}
	}
	return 0, "", nil
}

// movedNames are the names of known that GitHub lists no more but still
// redirects to a repository of listed (and, by old name, where to): a renamed or transferred
// repository's rows stay under the name they were written with and are read
// through GitHub's redirect, so the name stays installed. A name whose
// answer failed stays too, and the error says the sync is incomplete. The
// others are gone from this installation, perhaps to another (transfers).
func movedNames(ctx context.Context, m mover, id int64, known, listed []string) (keep []string, moved map[string]string, gone []string, err error) {
	moved = map[string]string{}
	var errs []error
	for _, old := range known {
		if has(listed, old) {
			continue
		}
		to, err := m.MovedTo(ctx, id, old)
		switch {
		case err != nil:
			errs = append(errs, err)
			keep = append(keep, old)
		case to != "" && !ghrepo.Same(to, old) && has(listed, to):
			keep = append(keep, old)
			moved[old] = to
		default:
			gone = append(gone, old)
		}
	}
	return keep, moved, gone, errors.Join(errs...)
}

// has reports whether names has name, in any case.
func has(names []string, name string) bool {
	for _, n := range names {
		if ghrepo.Same(n, name) {
			return true
		}
	}
	return false
}

// SyncUntilDone runs Sync until it completes once, backing off while GitHub
// cannot be reached; installation events and claim:sweep keep it current.
func SyncUntilDone(ctx context.Context, src Source, reg *Registry, log *slog.Logger) {
	if retry.Until(ctx, log, "installation sync", func(ctx context.Context) error { return Sync(ctx, src, reg) }) == nil {
		log.Info("installations synced")
	}
}
