package installs

import (
	"context"
	"slices"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/redistest"
)

// A renamed or transferred repository stays installed under the name its
// rows were written with, as long as GitHub redirects that name to a
// repository the installation lists; a repository the installation lost
// goes, renamed or not.
func TestSyncKeepsARenamedRepositorysOldName(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.AddInstallation(11, "hive", "hive/t27", "hive/queen")
	app := newApp(t, gh)
	r := New(redistest.Start(t).Client())
	must(t, Sync(ctx, app, r))

	gh.RenameRepo("hive/t27", "bees/t28")
	must(t, Sync(ctx, app, r))
	for _, name := range []string{"hive/t27", "bees/t28", "hive/queen"} {
		if id, _, ok := lookup(t, r, name); !ok || id != 11 {
			t.Fatalf("%s after the rename: %d %v, want installation 11", name, id, ok)
		}
	}
	if olds, err := r.OldNames(ctx, "BEES/t28"); err != nil || len(olds) != 1 || olds[0] != "hive/t27" {
		t.Fatalf("old names of bees/t28: %q %v, want hive/t27", olds, err)
	}
	must(t, Sync(ctx, app, r)) // the old name stays at every sync
	if _, _, ok := lookup(t, r, "hive/t27"); !ok {
		t.Fatal("hive/t27 dropped at the second sync")
	}

	gh.AddInstallation(11, "hive", "hive/queen") // the installation loses the repository
	must(t, Sync(ctx, app, r))
	for _, name := range []string{"hive/t27", "bees/t28"} {
		if _, _, ok := lookup(t, r, name); ok {
			t.Fatalf("%s still installed after the installation lost it", name)
		}
	}
}

// The repository event's rename or transfer is recorded at once: the new
// name is installed, the old stays, and every earlier name maps to the
// newest; a name taken back maps nowhere; an old name never installed is
// not guessed into the registry.
func TestMovedMapsEveryOldNameAtOnce(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.AddInstallation(11, "hive", "hive/t27")
	app := newApp(t, gh)
	r := New(redistest.Start(t).Client())
	must(t, Sync(ctx, app, r))
	moved := func(id int64, from, to string, want bool) {
		t.Helper()
		known, err := r.Moved(ctx, id, from, to)
		must(t, err)
		if known != want {
			t.Fatalf("Moved(%s, %s) known %v, want %v", from, to, known, want)
		}
	}
	old := func(repo string) []string {
		t.Helper()
		olds, err := r.OldNames(ctx, repo)
		must(t, err)
		return olds
	}

	moved(11, "hive/t27", "hive/T28", true)
	for _, name := range []string{"hive/t27", "hive/t28"} {
		if id, _, ok := lookup(t, r, name); !ok || id != 11 {
			t.Fatalf("%s after the rename: %d %v, want installation 11", name, id, ok)
		}
	}
	if got := old("hive/t28"); !slices.Equal(got, []string{"hive/t27"}) {
		t.Fatalf("old names of hive/t28: %q, want hive/t27", got)
	}
	moved(11, "hive/T28", "bees/t28", true)
	if got := old("bees/t28"); !slices.Equal(got, []string{"hive/t27", "hive/t28"}) {
		t.Fatalf("old names of bees/t28 after the transfer: %q, want hive/t27 and hive/t28", got)
	}
	if got := old("hive/t28"); len(got) != 0 {
		t.Fatalf("hive/t28 still has old names %q", got)
	}
	repos, err := r.Repos(ctx)
	must(t, err)
	if len(repos) != 3 || repos[0].Name != "bees/t28" || repos[2].Name != "hive/T28" {
		t.Fatalf("installed: %+v, want bees/t28 and both old names as spelled", repos)
	}

	moved(11, "bees/t28", "hive/t27", true) // back to its first name
	if got := old("hive/t27"); !slices.Equal(got, []string{"bees/t28", "hive/t28"}) {
		t.Fatalf("old names of hive/t27 taken back: %q, want bees/t28 and hive/t28", got)
	}
	if got := old("bees/t28"); len(got) != 0 {
		t.Fatalf("bees/t28 still has old names %q", got)
	}
	// A transfer that also renamed names only the old owner: a name never
	// installed is installed only under its new name, mapped to nothing.
	moved(11, "wasps/t27", "wasps/t29", false)
	if _, _, ok := lookup(t, r, "wasps/t27"); ok {
		t.Fatal("a guessed old name never installed was installed")
	}
	if id, _, ok := lookup(t, r, "wasps/t29"); !ok || id != 11 {
		t.Fatalf("wasps/t29: %d %v, want installation 11", id, ok)
	}
	if got := old("wasps/t29"); len(got) != 0 {
		t.Fatalf("wasps/t29 has old names %q, want none", got)
	}
	for _, bad := range [][2]string{{"hive", "hive/t2"}, {"hive/t2", "x"}} {
		if _, err := r.Moved(ctx, 11, bad[0], bad[1]); err == nil {
			t.Errorf("Moved(%q, %q) took a name that is not owner/name", bad[0], bad[1])
		}
	}
	if _, err := r.Moved(ctx, 0, "hive/a", "hive/b"); err == nil {
		t.Error("Moved took installation 0")
	}
}
