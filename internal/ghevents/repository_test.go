package ghevents

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// The repository event's rename and transfer, as the sandbox GitHub sends
// them (held to GitHub's schema by internal/contract), install the new
// name at once and map the old names to it: a pull_request naming the new
// name is acted on before any installation sync. A transfer that also
// renamed installs the new name only. Another action is ignored; a move
// without its old name is refused.
func TestRepositoryMovedIsRecordedAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	gh := githubtest.New(t)
	gh.SetHook(srv.URL, string(secret))
	gh.AddInstallation(installID, "Codertocat", repoName)

	prOn := func(repo, delivery string) int {
		t.Helper()
		m := pr(t, "closed.payload.json", "queen-3", false)
		m["repository"].(map[string]any)["full_name"] = repo
		before := len(f.queued())
		if rec := f.post("pull_request", delivery, encode(t, m), nil); rec.Code != http.StatusAccepted {
			t.Fatalf("pull_request on %s: %d %s", repo, rec.Code, rec.Body)
		}
		return len(f.queued()) - before
	}
	if n := prOn("Codertocat/Hello-Bees", "p0"); n != 0 {
		t.Fatalf("a pull_request on a name never installed enqueued %d tasks", n)
	}

	d, err := gh.MoveRepo(repoName, "Codertocat/Hello-Bees")
	if err != nil || d.StatusCode != http.StatusAccepted || d.Action != "renamed" {
		t.Fatalf("renamed: %+v %v, want 202", d, err)
	}
	if id, _, ok, err := f.reg.Lookup(ctx, "codertocat/hello-bees"); err != nil || !ok || id != installID {
		t.Fatalf("the new name after renamed: %d %v %v, want installation %d", id, ok, err, installID)
	}
	if n := prOn("Codertocat/Hello-Bees", "p1"); n != 1 {
		t.Fatalf("a pull_request on the new name enqueued %d tasks, want 1", n)
	}

	d, err = gh.MoveRepo("Codertocat/Hello-Bees", "hive/Hello-Bees")
	if err != nil || d.StatusCode != http.StatusAccepted || d.Action != "transferred" {
		t.Fatalf("transferred: %+v %v, want 202", d, err)
	}
	olds, err := f.reg.OldNames(ctx, "hive/hello-bees")
	if want := []string{"codertocat/hello-bees", "codertocat/hello-world"}; err != nil || !slices.Equal(olds, want) {
		t.Fatalf("old names after the transfer: %q %v, want %q", olds, err, want)
	}
	for _, name := range []string{repoName, "Codertocat/Hello-Bees", "hive/Hello-Bees"} {
		if id, _, ok, err := f.reg.Lookup(ctx, name); err != nil || !ok || id != installID {
			t.Errorf("%s after the transfer: %d %v %v, want installation %d", name, id, ok, err, installID)
		}
	}
	if !strings.Contains(f.logs.String(), `"from":"Codertocat/Hello-Bees"`) {
		t.Errorf("the log names no old name:\n%s", f.logs)
	}

	// A transfer that also renames names only the old owner: the guessed
	// old name was never installed, so the new name is installed and
	// nothing is mapped to a name that held no rows.
	if d, err := gh.MoveRepo("hive/Hello-Bees", "wasps/Hello-Wasps"); err != nil || d.StatusCode != http.StatusAccepted {
		t.Fatalf("transferred and renamed: %+v %v, want 202", d, err)
	}
	if id, _, ok, err := f.reg.Lookup(ctx, "wasps/Hello-Wasps"); err != nil || !ok || id != installID {
		t.Fatalf("wasps/Hello-Wasps: %d %v %v, want installation %d", id, ok, err, installID)
	}
	if _, _, ok, _ := f.reg.Lookup(ctx, "hive/Hello-Wasps"); ok {
		t.Fatal("the guessed old name hive/Hello-Wasps was installed")
	}
	if olds, err := f.reg.OldNames(ctx, "wasps/Hello-Wasps"); err != nil || len(olds) != 0 {
		t.Fatalf("old names of wasps/Hello-Wasps: %q %v, want none", olds, err)
	}
	if !strings.Contains(f.logs.String(), "old name not installed") {
		t.Errorf("the log does not say the old name was unknown:\n%s", f.logs)
	}

	body := []byte(`{"action":"transferred","changes":{},"repository":{"id":1,"full_name":"hive/x"},"installation":{"id":1}}`)
	if rec := f.post("repository", "r-bad", body, nil); rec.Code != http.StatusBadRequest {
		t.Errorf("a transfer without changes.owner: %d %s, want 400", rec.Code, rec.Body)
	}
	body = []byte(`{"action":"edited","changes":{},"repository":{"id":1,"full_name":"hive/x"},"installation":{"id":1}}`)
	if rec := f.post("repository", "r-edit", body, nil); rec.Code != http.StatusAccepted || status(t, rec) != "ignored" {
		t.Errorf("edited: %d %s, want 202 ignored", rec.Code, rec.Body)
	}
}
