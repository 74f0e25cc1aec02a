package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/installs"
)

// Issue 22: a captured signed installation deleted, replayed byte for byte,
// emptied the registry again. A delivery done is now a 202 duplicate that
// does nothing; so is GitHub's redelivery of a pull_request delivery.
func TestWebhookBinaryAnswersAReplayAsDuplicate(t *testing.T) {
	h := startHook(t, nil)
	ctx := context.Background()
	reg := installs.New(h.redis.Client())
	installed := func() bool {
		t.Helper()
		_, _, ok, err := reg.Lookup(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !installed() {
		t.Fatalf("%s not installed after the sync", repo)
	}
	var deleted map[string]any
	if err := json.Unmarshal(githubtest.Payload(t, "installation/deleted.payload.json"), &deleted); err != nil {
		t.Fatal(err)
	}
	deleted["installation"].(map[string]any)["id"] = instID
	deleted["repositories"] = []map[string]any{{"id": 1, "full_name": repo, "name": strings.Split(repo, "/")[1]}}
	body, _ := json.Marshal(deleted)
	captured := signedRequest(h.hookAddr, "installation", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body)

	status := func(answer string) string {
		var a struct{ Status string }
		_ = json.Unmarshal([]byte(answer), &a)
		return a.Status
	}
	code, answer, err := sendRaw(h.hookAddr, "127.0.0.1", captured)
	if err != nil || code != http.StatusAccepted || status(answer) != "accepted" {
		t.Fatalf("installation deleted: %d %s %v, want 202 accepted", code, answer, err)
	}
	if installed() {
		t.Fatalf("after installation deleted: %s still installed", repo)
	}
	// The next sync finds the App installed again.
	if err := reg.Set(ctx, installs.Installation{ID: instID, Repos: []string{repo}}); err != nil {
		t.Fatal(err)
	}
	code, answer, err = sendRaw(h.hookAddr, "127.0.0.1", captured)
	if err != nil || code != http.StatusAccepted || status(answer) != "duplicate" {
		t.Fatalf("the same bytes replayed: %d %s %v, want 202 duplicate", code, answer, err)
	}
	if !installed() {
		t.Fatalf("the replay emptied the registry again: %s not installed", repo)
	}

	pr := signedRequest(h.hookAddr, "pull_request", "d-replayed", prPayload(t, repo, 7, 70, "closed", false, instID))
	for i, want := range []string{"accepted", "duplicate"} {
		code, answer, err := sendRaw(h.hookAddr, "127.0.0.1", pr)
		if err != nil || code != http.StatusAccepted || status(answer) != want {
			t.Fatalf("pull_request, attempt %d: %d %s %v, want 202 %s", i+1, code, answer, err, want)
		}
	}
}
