package sandbox_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/sandbox"
)

func start(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.Start(sandbox.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	return sb
}

// GitHub's git takes the App's live installation tokens only, and what is
// pushed there is GitHub's view of the branch.
func TestStartWiresGitToTheAppsTokens(t *testing.T) {
	sb := start(t)
	tok := strings.TrimPrefix(mint(t, sb.GitHub, sb.Installation), "token ")
	head, err := sb.ExportBranch(5, map[string]string{"src/a.rs": "fn a() {}\n"})
	if err != nil {
		t.Fatal(err)
	}
	push := func(token string) error {
		// An empty extraHeader drops the clone's own credential first.
		_, err := sb.ExportWork.Git("-c", "http.extraHeader=", "-c", "http.extraHeader=Authorization: "+sandbox.BasicAuth(token),
			"push", "--quiet", sb.Git.CloneURL(), "queen-5")
		return err
	}
	if err := push("ghs_forged"); err == nil {
		t.Fatal("a push with a token GitHub never minted was taken")
	}
	if err := push(tok); err != nil {
		t.Fatalf("push with a live installation token: %v", err)
	}
	if got := sb.Git.Ref("queen-5"); got != head {
		t.Fatalf("GitHub's git has queen-5 at %q, want %s", got, head)
	}
	resp, obj, _ := do(t, "GET", sb.GitHub.URL()+"repos/hive/t27/branches/queen-5", "token "+tok, nil)
	if resp.StatusCode != http.StatusOK || obj["commit"].(map[string]any)["sha"] != head {
		t.Fatalf("GitHub's branch view: %d %v, want queen-5 at %s", resp.StatusCode, obj, head)
	}
	resp, obj, _ = do(t, "POST", sb.GitHub.URL()+"repos/hive/t27/pulls", "token "+tok,
		map[string]string{"title": "t", "head": "queen-5", "base": "master"})
	if resp.StatusCode != http.StatusCreated || obj["head"].(map[string]any)["sha"] != head {
		t.Fatalf("open a PR for the pushed branch: %d %v", resp.StatusCode, obj)
	}
	env := sb.GitHubEnv()
	for k, v := range sb.ExportEnv() {
		env[k] = v
	}
	for _, k := range []string{"GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_API_URL", "GITHUB_GIT_URL", "QUEEN_EXPORT_URL", "QUEEN_EXPORT_TOKEN", "QUEEN_EXPORT_REPO"} {
		if env[k] == "" {
			t.Errorf("%s is not set by the sandbox", k)
		}
	}
}

// Closing a PR delivers the pull_request event as GitHub would: signed
// with the hook's secret, naming the branch, the repository and the
// installation, and logged with the receiver's answer.
func TestClosePRDeliversASignedWebhook(t *testing.T) {
	sb := start(t)
	const secret = "sandbox-hook-secret"
	type got struct {
		header http.Header
		body   []byte
	}
	deliveries := make(chan got, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		deliveries <- got{r.Header.Clone(), b}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer recv.Close()
	sb.GitHub.SetHook(recv.URL+"/webhook", secret)
	n := sb.GitHub.AddPR(sb.Repo, sandbox.PR{HeadRef: "queen-9", HeadRepo: sb.Repo})

	d, err := sb.GitHub.ClosePR(sb.Repo, n, false)
	if err != nil {
		t.Fatal(err)
	}
	g := <-deliveries
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(g.body)
	if g.header.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)) ||
		g.header.Get("X-GitHub-Event") != "pull_request" || g.header.Get("X-GitHub-Delivery") != d.GUID {
		t.Fatalf("headers %v", g.header)
	}
	var ev struct {
		Action      string `json:"action"`
		PullRequest struct {
			Number int    `json:"number"`
			State  string `json:"state"`
			Merged bool   `json:"merged"`
			Head   struct {
				Ref  string `json:"ref"`
				Repo struct {
					ID int64 `json:"id"`
				} `json:"repo"`
			} `json:"head"`
		} `json:"pull_request"`
		Repository struct {
			ID       int64  `json:"id"`
			FullName string `json:"full_name"`
		} `json:"repository"`
		Installation struct {
			ID int64 `json:"id"`
		} `json:"installation"`
	}
	if err := json.Unmarshal(g.body, &ev); err != nil {
		t.Fatal(err)
	}
	pr := ev.PullRequest
	if ev.Action != "closed" || pr.Number != n || pr.State != "closed" || pr.Merged || pr.Head.Ref != "queen-9" ||
		pr.Head.Repo.ID == 0 || pr.Head.Repo.ID != ev.Repository.ID || ev.Repository.FullName != sb.Repo ||
		ev.Installation.ID != sb.Installation {
		t.Fatalf("payload %s", g.body)
	}
	if d.StatusCode != http.StatusAccepted || sb.GitHub.PRs(sb.Repo)[0].State != "closed" {
		t.Fatalf("delivery %+v, PRs %+v", d, sb.GitHub.PRs(sb.Repo))
	}
}

func TestUnreadablePRsFailsOnlyThatBranch(t *testing.T) {
	sb := start(t)
	tok := mint(t, sb.GitHub, sb.Installation)
	sb.GitHub.UnreadablePRs("queen-3")
	base := sb.GitHub.URL() + "repos/hive/t27/pulls?state=all&head=hive:"
	if resp, _, _ := do(t, "GET", base+"queen-3", tok, nil); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("unreadable branch: %d, want 500", resp.StatusCode)
	}
	if resp, _, _ := do(t, "GET", base+"queen-4", tok, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("another branch: %d, want 200", resp.StatusCode)
	}
}

// GitHub's git repository with no branch left is an empty repository: its
// ref reads answer 409, as GitHub's do.
func TestRemoteWithoutBranchesIsEmpty(t *testing.T) {
	sb := start(t)
	tok := mint(t, sb.GitHub, sb.Installation)
	if resp, _, _ := do(t, "GET", sb.GitHub.URL()+"repos/hive/t27/git/ref/heads/queen-1", tok, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a missing branch beside master: %d, want 404", resp.StatusCode)
	}
	if out, err := exec.Command("git", "-C", sb.Git.Dir, "update-ref", "-d", "refs/heads/master").CombinedOutput(); err != nil {
		t.Fatalf("delete master: %v %s", err, out)
	}
	resp, obj, _ := do(t, "GET", sb.GitHub.URL()+"repos/hive/t27/git/ref/heads/queen-1", tok, nil)
	if resp.StatusCode != http.StatusConflict || obj["message"] != sandbox.EmptyRepoMessage {
		t.Fatalf("no branch left: %d %v, want 409 %s", resp.StatusCode, obj, sandbox.EmptyRepoMessage)
	}
}
