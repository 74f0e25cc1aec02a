package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/tasks"
)

// forkOnGitHub makes other a copy of the sandbox repository on GitHub's
// git (the same server, as GitHub serves every repository), so a push meant
// for the export's repository would land in it: its bare directory.
func (x *exStack) forkOnGitHub(other string) string {
	x.t.Helper()
	root := filepath.Dir(filepath.Dir(x.sb.Git.Dir))
	dir := filepath.Join(root, filepath.FromSlash(other)+".git")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}
	for _, args := range [][]string{
		{"clone", "--quiet", "--bare", x.sb.Git.Dir, dir},
		{"-C", dir, "config", "http.receivepack", "true"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			x.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// refsOf lists the branches of a bare repository.
func refsOf(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "for-each-ref", "--format=%(refname)", "refs/heads/").CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// The export holds hive/t27's work. hive/b27, where the App is installed
// too, has its own #51 accepted at the export's queen-51 head (a row the
// Queen wrote, or a mistake): a push of it would copy hive/t27's, possibly
// private, work into hive/b27. The claims API refuses it with a 400 naming
// repo, queenctl says so on one line, and an export:push task for it that
// reaches the worker anyway is archived with its reason; nothing reaches
// hive/b27, while hive/t27#51 itself is still pushed.
func TestExportPushOfAnotherRepositoryIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{sweep: "0s"}) // pushes come from requests only
	const other = "hive/b27"
	fork := x.forkOnGitHub(other)
	x.gh.AddInstallation(instID, "hive", repo, other)
	x.webhook()
	head := x.branch(51, map[string]string{"src/private.rs": "fn private() {}\n"})
	x.accept(51, head, nil)
	x.gh.SetIssue(other, 51, true, "Issue 51 of another repository")
	row := map[string]any{"started": true, "dispatched_at": "2026-10-11T10:02:00Z",
		"finished_at": "2026-10-11T12:20:00Z", "review_state": "accept", "judged_head": head}
	if code := apiJSON(t, "PUT", x.apiURL+"/v1/repos/"+other+"/dispatches/51", apiToken, row, nil); code != 200 {
		t.Fatalf("PUT %s#51: %d", other, code)
	}
	x.startWorker()
	pushes0 := x.remote.Pushes()

	var refused struct{ Error, Field string }
	if code := apiJSON(t, "POST", x.apiURL+"/v1/repos/"+other+"/exports/51/push", apiToken, nil, &refused); code != 400 ||
		refused.Field != "repo" || !strings.Contains(refused.Error, "hive/b27 is not the export's repository hive/t27") {
		t.Fatalf("POST push of %s#51: %d %+v, want 400 naming repo", other, code, refused)
	}
	code, out, errOut := x.ctl("export", "push", other+"#51")
	if code != 1 || out != "" || errOut != "queenctl: export push: hive/b27#51: repo: hive/b27 is not the export's repository hive/t27 (QUEEN_EXPORT_REPO): only its rows are pushed\n" {
		t.Fatalf("queenctl export push %s#51: exit %d, stdout %q, stderr %q", other, code, out, errOut)
	}

	// A task for it that reaches the worker all the same.
	task, err := tasks.NewExportPush(tasks.ExportPushPayload{Repo: other, Issue: 51, Head: head, Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClientFromRedisClient(x.rdb)
	if _, err := client.EnqueueContext(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	var last string
	eventually(t, exLimit, "the task for "+other+" to be archived", func() bool {
		for _, info := range x.archived() {
			if info.ID == tasks.ExportPushID(tasks.ExportPushPayload{Repo: other, Issue: 51, Head: head}) {
				last = info.LastErr
				return true
			}
		}
		return false
	})
	if !strings.Contains(last, "repo hive/b27 is not the export's repository hive/t27 (QUEEN_EXPORT_REPO)") {
		t.Errorf("archived with %q, want the reason", last)
	}

	// hive/t27#51 is the export's: pushed as ever.
	if code, _, errOut := x.ctl("export", "push", repo+"#51"); code != 0 {
		t.Fatalf("queenctl export push %s#51: exit %d, %s", repo, code, errOut)
	}
	x.waitStates("pr_opened", 51)
	x.checkPublished(map[int64]string{51: head})
	if n := x.remote.Pushes() - pushes0; n != 1 {
		t.Errorf("%d pushes reached GitHub's git, want hive/t27's one", n)
	}
	if refs := refsOf(t, fork); refs != "refs/heads/master" || len(x.gh.PRs(other)) != 0 {
		t.Fatalf("%s has branches %q and %d PRs: the export's work reached it", other, refs, len(x.gh.PRs(other)))
	}
	if v := x.versions(); v[51] == 0 {
		t.Fatal("hive/t27#51 is gone")
	}
	var b struct {
		Export any `json:"export"`
	}
	if code := apiJSON(t, "GET", x.apiURL+"/v1/repos/"+other+"/claims/51", apiToken, nil, &b); code != 200 || b.Export != nil {
		t.Fatalf("%s#51: %d, export %v; want nothing recorded", other, code, b.Export)
	}
}
