package installs

import (
	"context"
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
