package sandbox_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/gittest"
	"github.com/queen-app/queen-app/internal/sandbox"
)

func TestRemoteRefusesWithoutTheToken(t *testing.T) {
	r := gittest.NewRemote(t, "s3cret")
	resp, err := http.Get(r.CloneURL() + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d, want 401", resp.StatusCode)
	}

	sw, err := sandbox.OpenWork(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := gittest.WorkOf(sw)
	w.Git(t, "init", "--quiet")
	if _, err := w.TryGit("ls-remote", r.CloneURL()); err == nil {
		t.Fatal("ls-remote without the token succeeded")
	}
	w.Git(t, "config", "http.extraHeader", "Authorization: "+sandbox.BasicAuth("wrong"))
	if _, err := w.TryGit("ls-remote", r.CloneURL()); err == nil {
		t.Fatal("ls-remote with a wrong token succeeded")
	}
}

func TestRemoteTakesPushesAndCountsThem(t *testing.T) {
	r := gittest.NewRemote(t, "s3cret")
	before := r.Pushes()
	sha := r.Work.Commit(t, "queen-7", map[string]string{"a.txt": "a\n"}, "work")
	r.Work.Push(t, "queen-7")
	if got := r.Ref(t, "queen-7"); got != sha {
		t.Fatalf("remote queen-7 = %q, want %s", got, sha)
	}
	if r.Pushes() != before+1 {
		t.Fatalf("pushes %d, want %d", r.Pushes(), before+1)
	}
	r.Work.Push(t, "queen-7:refs/tags/keep")
	if tags := r.Tags(t); len(tags) != 1 || tags[0] != "keep" {
		t.Fatalf("tags %v", tags)
	}
}

func TestExportServesAListingAndABundleTheRemoteCanTake(t *testing.T) {
	r := gittest.NewRemote(t, "git-token")
	work := r.Clone(t)
	e := gittest.NewExport(t, "export-token", work)
	head := work.Commit(t, "queen-12", map[string]string{"src/x.rs": "fn x() {}\n"}, "bee work")
	work.Branch(t, "queen-13", "origin/master") // nothing ahead: not listed, 409

	get := func(path, token string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest("GET", e.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	if resp, _ := get("", "wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	_, list := get("", "export-token")
	branches := list["branches"].([]any)
	if len(branches) != 1 || branches[0].(map[string]any)["head"] != head {
		t.Fatalf("listing %v", list)
	}
	if resp, _ := get("/13", "export-token"); resp.StatusCode != http.StatusConflict {
		t.Fatalf("nothing ahead: %d", resp.StatusCode)
	}
	if resp, _ := get("/14", "export-token"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("no branch: %d", resp.StatusCode)
	}
	resp, one := get("/12", "export-token")
	if resp.StatusCode != http.StatusOK || one["files"].([]any)[0] != "src/x.rs" {
		t.Fatalf("bundle answer %d %v", resp.StatusCode, one["files"])
	}
	data, err := base64.StdEncoding.DecodeString(one["bundleBase64"].(string))
	if err != nil {
		t.Fatal(err)
	}
	// A clone of the remote (base history only) verifies and imports it.
	other := r.Clone(t)
	path := filepath.Join(t.TempDir(), "b.bundle")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	other.Git(t, "bundle", "verify", "--quiet", path)
	other.Git(t, "fetch", "--quiet", path, "refs/heads/queen-12:refs/heads/imported")
	if got := other.Rev(t, "imported"); got != head {
		t.Fatalf("imported %s, want %s", got, head)
	}

	e.Fail(http.StatusBadGateway, 1)
	if resp, _ := get("/12", "export-token"); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("injected failure: %d", resp.StatusCode)
	}
	e.Stored(t, 12, "runner-3")
	if _, s := get("/12", "export-token"); s["runner"] != "runner-3" || s["commits"] != nil ||
		!strings.HasPrefix(s["bundleBase64"].(string), "IyB2MiBnaXQgYnVuZGxl") {
		t.Fatalf("stored form %v", s)
	}
}

func TestEchoCredentialMakesGitPrintIt(t *testing.T) {
	r := gittest.NewRemote(t, "s3cret-token")
	r.EchoCredential(5)
	_, err := r.Work.TryGit("fetch", "--quiet", "origin")
	if err == nil {
		t.Fatal("fetch succeeded against a remote answering 403")
	}
	if msg := err.Error(); !strings.Contains(msg, "remote: refused: Authorization") || !strings.Contains(msg, "(password s3cret-token)") ||
		!strings.Contains(msg, "~~~~~\n") {
		t.Fatalf("git's output %q: want the credential quoted on a remote: line", msg)
	}
	r.EchoCredential(-1)
	if _, err := r.Work.TryGit("fetch", "--quiet", "origin"); err != nil {
		t.Fatalf("fetch after the echo was turned off: %v", err)
	}
}

func TestRefuseRefsDeclinesOnlyThosePushes(t *testing.T) {
	r := gittest.NewRemote(t, "")
	r.RefuseRefs(t, "refs/tags/queen-superseded/")
	sha := r.Work.Commit(t, "queen-8", map[string]string{"a.txt": "a\n"}, "work")
	if _, err := r.Work.TryGit("push", "--quiet", "origin", "queen-8:refs/tags/queen-superseded/8/abc"); err == nil ||
		!strings.Contains(err.Error(), "pre-receive hook declined") {
		t.Fatalf("push of a refused tag: %v", err)
	}
	if r.Ref(t, "refs/tags/queen-superseded/8/abc") != "" {
		t.Fatal("the refused tag reached the remote")
	}
	r.Work.Push(t, "queen-8")
	if r.Ref(t, "queen-8") != sha {
		t.Fatal("a branch push was refused")
	}
	r.RefuseRefs(t, "")
	r.Work.Push(t, "queen-8:refs/tags/queen-superseded/8/abc")
	if r.Ref(t, "refs/tags/queen-superseded/8/abc") != sha {
		t.Fatal("the tag was refused after the hook was removed")
	}
}
