package installs

import (
	"context"
	"reflect"
	"testing"

	"github.com/queen-app/queen-app/internal/redistest"
)

func lookup(t *testing.T, r *Registry, repo string) (int64, bool, bool) {
	t.Helper()
	id, susp, ok, err := r.Lookup(context.Background(), repo)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", repo, err)
	}
	return id, susp, ok
}

func repos(t *testing.T, r *Registry) []Repo {
	t.Helper()
	got, err := r.Repos(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRegistryLifecycle(t *testing.T) {
	srv := redistest.Start(t)
	r := New(srv.Client())
	ctx := context.Background()

	if _, _, ok := lookup(t, r, "Codertocat/Hello-World"); ok {
		t.Fatal("empty registry found a repository")
	}
	must(t, r.Set(ctx, Installation{ID: 957387, Repos: []string{"Codertocat/Hello-World", "Codertocat/Other"}}))
	must(t, r.Set(ctx, Installation{ID: 2, Repos: []string{"octocat/Hello-World"}}))
	if id, susp, ok := lookup(t, r, "codertocat/hello-world"); !ok || susp || id != 957387 {
		t.Fatalf("case-insensitive lookup = %d %v %v", id, susp, ok)
	}
	want := []Repo{
		{Name: "Codertocat/Hello-World", InstallationID: 957387},
		{Name: "Codertocat/Other", InstallationID: 957387},
		{Name: "octocat/Hello-World", InstallationID: 2},
	}
	if got := repos(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("Repos = %+v\nwant %+v", got, want)
	}

	// Set replaces the installation's list; other installations keep theirs.
	must(t, r.Set(ctx, Installation{ID: 957387, Repos: []string{"Codertocat/Space"}}))
	if _, _, ok := lookup(t, r, "Codertocat/Other"); ok {
		t.Fatal("Set kept a repository no longer listed")
	}
	if id, _, ok := lookup(t, r, "octocat/Hello-World"); !ok || id != 2 {
		t.Fatal("Set of one installation dropped another's repository")
	}

	must(t, r.AddRepos(ctx, 957387, "Codertocat/Hello-World"))
	must(t, r.Suspend(ctx, 957387))
	if id, susp, ok := lookup(t, r, "Codertocat/Hello-World"); !ok || !susp || id != 957387 {
		t.Fatalf("after suspend: %d %v %v", id, susp, ok)
	}
	if _, susp, _ := lookup(t, r, "octocat/Hello-World"); susp {
		t.Fatal("suspending one installation suspended another")
	}
	must(t, r.Unsuspend(ctx, 957387))
	if _, susp, _ := lookup(t, r, "Codertocat/Hello-World"); susp {
		t.Fatal("still suspended after unsuspend")
	}

	// A repository transferred to installation 2 is not removed by 957387.
	must(t, r.AddRepos(ctx, 2, "Codertocat/Space"))
	must(t, r.RemoveRepos(ctx, 957387, "Codertocat/Space", "codertocat/hello-world"))
	if id, _, ok := lookup(t, r, "Codertocat/Space"); !ok || id != 2 {
		t.Fatalf("RemoveRepos removed another installation's repository: %d %v", id, ok)
	}
	if _, _, ok := lookup(t, r, "Codertocat/Hello-World"); ok {
		t.Fatal("RemoveRepos kept the repository")
	}

	must(t, r.Suspend(ctx, 2))
	must(t, r.Remove(ctx, 2))
	if got := repos(t, r); len(got) != 0 {
		t.Fatalf("after removing everything: %+v", got)
	}
	// A reinstall starts unsuspended.
	must(t, r.AddRepos(ctx, 2, "octocat/Hello-World"))
	if _, susp, ok := lookup(t, r, "octocat/Hello-World"); !ok || susp {
		t.Fatal("Remove kept the suspended mark")
	}
}

func TestSetSuspendedAndReplace(t *testing.T) {
	srv := redistest.Start(t)
	r := New(srv.Client())
	ctx := context.Background()
	must(t, r.Set(ctx, Installation{ID: 5, Repos: []string{"a/x"}, Suspended: true}))
	if _, susp, ok := lookup(t, r, "a/x"); !ok || !susp {
		t.Fatal("Set with Suspended did not suspend")
	}
	if ok, err := r.Synced(ctx); err != nil || ok {
		t.Fatalf("synced before any sync: %t %v", ok, err)
	}
	must(t, r.Replace(ctx, []Installation{{ID: 7, Repos: []string{"b/y"}}}, false))
	if ok, _ := r.Synced(ctx); ok {
		t.Fatal("an incomplete sync counted as synced")
	}
	must(t, r.Replace(ctx, []Installation{
		{ID: 7, Repos: []string{"b/y", "b/z"}},
		{ID: 8, Repos: []string{"c/w"}, Suspended: true},
	}, true))
	if ok, _ := r.Synced(ctx); !ok {
		t.Fatal("a complete sync did not count")
	}
	want := []Repo{{"b/y", 7, false}, {"b/z", 7, false}, {"c/w", 8, true}}
	if got := repos(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Replace: %+v\nwant %+v", got, want)
	}
}

func TestRegistryRefusesBadInput(t *testing.T) {
	srv := redistest.Start(t)
	r := New(srv.Client())
	ctx := context.Background()
	if err := r.Set(ctx, Installation{ID: 1, Repos: []string{"no-slash"}}); err == nil {
		t.Error("Set accepted a repository without owner")
	}
	if err := r.AddRepos(ctx, 0, "a/b"); err == nil {
		t.Error("AddRepos accepted installation 0")
	}
	if got := repos(t, r); len(got) != 0 {
		t.Errorf("a refused call wrote %+v", got)
	}
}

func TestRegistryRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	r := New(srv.Client())
	srv.Kill()
	if _, _, _, err := r.Lookup(context.Background(), "a/b"); err == nil {
		t.Error("Lookup with Redis down: no error")
	}
	if err := r.Set(context.Background(), Installation{ID: 1}); err == nil {
		t.Error("Set with Redis down: no error")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
