package installs

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/sandbox"
)

// transferFixture has hive/t27 synced under installation 11 (account hive)
// and then transferred to bees and renamed bees/t28, which moves it to
// installation 12 (account bees), as on GitHub. Installation 13 gains
// nothing and is never the answer.
func transferFixture(t *testing.T) (*githubtest.Server, *Registry) {
	t.Helper()
	gh := githubtest.New(t)
	gh.AddInstallation(11, "hive", "hive/t27", "hive/queen")
	gh.AddInstallation(12, "bees", "bees/other")
	gh.AddInstallation(13, "wasps", "wasps/nest")
	r := New(redistest.Start(t).Client())
	must(t, Sync(context.Background(), newApp(t, gh), r))

	gh.RenameRepo("hive/t27", "bees/t28")
	gh.AddInstallation(11, "hive", "hive/queen")
	gh.AddInstallation(12, "bees", "bees/other", "bees/t28")
	return gh, r
}

// wantTransferred checks that the old name hive/t27 is installed under
// installation 12 and mapped to bees/t28.
func wantTransferred(t *testing.T, r *Registry) {
	t.Helper()
	for _, name := range []string{"hive/t27", "bees/t28"} {
		if id, _, ok := lookup(t, r, name); !ok || id != 12 {
			t.Fatalf("%s: installation %d %v, want 12", name, id, ok)
		}
	}
	olds, err := r.OldNames(context.Background(), "bees/t28")
	must(t, err)
	if !slices.Equal(olds, []string{"hive/t27"}) {
		t.Fatalf("old names of bees/t28: %q, want hive/t27", olds)
	}
}

// A transfer changes the repository's installation, so its old
// installation's token is not redirected to it: the sync asks the
// installation that lists a repository new to it, and keeps the old name
// there. With the repository event of a transfer that also renamed (it
// names only the old owner, hive/t28, never installed) the new name is
// installed before the sync, which must still find the old one.
func TestSyncKeepsAnOldNameTransferredToAnotherInstallation(t *testing.T) {
	for _, event := range []bool{false, true} {
		ctx := context.Background()
		gh, r := transferFixture(t)
		app := newApp(t, gh)
		if event {
			known, err := r.Moved(ctx, 12, "hive/t28", "bees/t28")
			must(t, err)
			if known {
				t.Fatal("hive/t28 was never installed")
			}
		}
		asked := gh.Count(sandbox.RouteRepo)
		must(t, Sync(ctx, app, r))
		wantTransferred(t, r)
		// Installations 11 and 12 are asked, 13 (nothing new) is not.
		if n := gh.Count(sandbox.RouteRepo) - asked; n != 2 {
			t.Fatalf("event %v: %d repository reads, want 2", event, n)
		}
		if marked, err := r.arrived(ctx); err != nil || len(marked) != 0 {
			t.Fatalf("event %v: still marked arrived after a complete sync: %q %v", event, marked, err)
		}
		if id, _, ok := lookup(t, r, "hive/queen"); !ok || id != 11 {
			t.Fatalf("event %v: hive/queen: installation %d %v, want 11", event, id, ok)
		}
		must(t, Sync(ctx, app, r)) // from now on installation 12's own redirect keeps it
		wantTransferred(t, r)
	}
}

// A failed answer from the installation the repository went to is an
// outage: the old name stays where it was and the sync says it is
// incomplete; the next sync, though the new name is known by then, still
// asks that installation and moves the old name there.
func TestSyncKeepsAnOldNameWhenTheNewInstallationCannotAnswer(t *testing.T) {
	ctx := context.Background()
	gh, r := transferFixture(t)
	app := newApp(t, gh)
	// Asked by installation 11 first (served: not its repository), then 12.
	gh.FailAfter(1, "/repos/bees/t28", http.StatusBadGateway, nil, 1)
	if err := Sync(ctx, app, r); err == nil {
		t.Fatal("a failed answer from installation 12 reported no error")
	}
	if id, _, ok := lookup(t, r, "hive/t27"); !ok || id != 11 {
		t.Fatalf("hive/t27 after the failed answer: installation %d %v, want 11", id, ok)
	}
	if olds, err := r.OldNames(ctx, "bees/t28"); err != nil || len(olds) != 0 {
		t.Fatalf("old names of bees/t28 after the failed answer: %q %v, want none", olds, err)
	}

	must(t, Sync(ctx, app, r))
	wantTransferred(t, r)
}

// An installation whose repositories cannot be read may be where a lost
// name went: it is asked too, and keeps the name when its token reaches
// the repository.
func TestSyncAsksAnInstallationThatCouldNotBeListed(t *testing.T) {
	ctx := context.Background()
	gh, r := transferFixture(t)
	app := newApp(t, gh)
	gh.FailAfter(1, "/installation/repositories", http.StatusBadGateway, nil, 1) // installation 12's
	if err := Sync(ctx, app, r); err == nil {
		t.Fatal("a failed repository list reported no error")
	}
	if id, _, ok := lookup(t, r, "hive/t27"); !ok || id != 12 {
		t.Fatalf("hive/t27: installation %d %v, want 12", id, ok)
	}
	must(t, Sync(ctx, app, r))
	wantTransferred(t, r)
}

// A repository removed from its installation, that GitHub redirects
// nowhere, goes even when another installation gained one and is asked.
func TestSyncDropsARepositoryRemovedFromItsInstallation(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.AddInstallation(11, "hive", "hive/t27", "hive/queen")
	gh.AddInstallation(12, "bees", "bees/other")
	app := newApp(t, gh)
	r := New(redistest.Start(t).Client())
	must(t, Sync(ctx, app, r))

	gh.AddInstallation(11, "hive", "hive/queen")
	gh.AddInstallation(12, "bees", "bees/other", "bees/new")
	asked := gh.Count(sandbox.RouteRepo)
	must(t, Sync(ctx, app, r))
	if n := gh.Count(sandbox.RouteRepo) - asked; n != 2 {
		t.Fatalf("%d repository reads, want 2: hive/t27 asked of installations 11 and 12", n)
	}
	want := []Repo{
		{Name: "bees/new", InstallationID: 12},
		{Name: "bees/other", InstallationID: 12},
		{Name: "hive/queen", InstallationID: 11},
	}
	if got := repos(t, r); !slices.Equal(got, want) {
		t.Fatalf("after the removal: %+v, want %+v", got, want)
	}
}
