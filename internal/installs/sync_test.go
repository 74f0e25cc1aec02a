package installs

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/redistest"
)

func newApp(t *testing.T, gh *githubtest.Server) *githubapp.App {
	t.Helper()
	app, err := githubapp.New(githubapp.Config{AppID: gh.AppID(), PrivateKey: gh.Key(), APIURL: gh.URL(), GraphQLURL: gh.GraphQLURL()})
	if err != nil {
		t.Fatal(err)
	}
	return app
}

func TestSyncFromGitHub(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.AddInstallation(11, "hive", "hive/t27", "hive/queen")
	gh.AddInstallation(12, "drone", "drone/tools")
	app := newApp(t, gh)
	r := New(redistest.Start(t).Client())
	// A stale entry from an installation that no longer exists goes away.
	must(t, r.Set(ctx, Installation{ID: 99, Repos: []string{"gone/repo"}}))

	must(t, Sync(ctx, app, r))
	want := []Repo{
		{Name: "drone/tools", InstallationID: 12},
		{Name: "hive/queen", InstallationID: 11},
		{Name: "hive/t27", InstallationID: 11},
	}
	if got := repos(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("after sync: %+v, want %+v", got, want)
	}

	// Suspended: the repositories stay known (GitHub mints no token to list
	// them) and lookups report the pause.
	gh.Suspend(11, true)
	gh.AddInstallation(12, "drone", "drone/tools", "drone/more")
	must(t, Sync(ctx, app, r))
	if id, susp, ok := lookup(t, r, "hive/t27"); !ok || !susp || id != 11 {
		t.Fatalf("hive/t27 after suspension = %d %v %v, want 11 suspended", id, susp, ok)
	}
	if id, _, ok := lookup(t, r, "drone/more"); !ok || id != 12 {
		t.Fatalf("drone/more not added: %d %v", id, ok)
	}

	gh.Suspend(11, false)
	gh.AddInstallation(11, "hive", "hive/t27")
	must(t, Sync(ctx, app, r))
	if _, susp, ok := lookup(t, r, "hive/t27"); !ok || susp {
		t.Fatalf("hive/t27 after unsuspension: ok %v suspended %v", ok, susp)
	}
	if _, _, ok := lookup(t, r, "hive/queen"); ok {
		t.Fatal("hive/queen is still listed after the installation lost it")
	}
}

func TestSyncFailedReadsKeepWhatIsKnown(t *testing.T) {
	ctx := context.Background()
	gh := githubtest.New(t)
	gh.AddInstallation(11, "hive", "hive/t27")
	gh.AddInstallation(12, "drone", "drone/tools")
	app := newApp(t, gh)
	r := New(redistest.Start(t).Client())
	must(t, Sync(ctx, app, r))
	before := repos(t, r)

	gh.Down(true)
	if err := Sync(ctx, app, r); err == nil {
		t.Fatal("sync with GitHub down reported no error")
	}
	if got := repos(t, r); !reflect.DeepEqual(got, before) {
		t.Fatalf("a failed installation list changed the registry: %+v, want %+v", got, before)
	}
	gh.Down(false)

	// One installation's repository list fails: it keeps its repositories,
	// the other is brought up to date, and the error says to try again.
	gh.AddInstallation(11, "hive", "hive/t27", "hive/new")
	gh.AddInstallation(12, "drone")
	gh.FailNext("/installation/repositories", http.StatusBadGateway, nil, 1)
	err := Sync(ctx, app, r)
	if err == nil {
		t.Fatal("a failed repository list reported no error")
	}
	got := repos(t, r)
	// Installations are listed in order, so the first (11) failed.
	want := []Repo{{Name: "hive/t27", InstallationID: 11}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after a partial sync: %+v, want %+v", got, want)
	}
	must(t, Sync(ctx, app, r))
	want = []Repo{{Name: "hive/new", InstallationID: 11}, {Name: "hive/t27", InstallationID: 11}}
	if got := repos(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the retry: %+v, want %+v", got, want)
	}
}
