package sandbox_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/redact"
)

// GitHub's stateless installation tokens: ghs_<APPID>_<JWT>; the old
// opaque form stays one option away, and both authenticate.
func TestMintsStatelessAndLegacyTokens(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(1, "hive", "hive/t27")
	stateless := regexp.MustCompile(fmt.Sprintf(`^token ghs_%d_eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`, s.AppID()))
	tok := mint(t, s, 1)
	if !stateless.MatchString(tok) {
		t.Fatalf("token %q is not ghs_<APPID>_<JWT>", tok)
	}
	if got := redact.String(tok); strings.Contains(got, tok[len("token ghs_4242_"):][:10]) {
		t.Fatalf("the scrubber leaves the JWT of %q: %q", tok, got)
	}
	s.LegacyTokens(true)
	old := mint(t, s, 1)
	if !regexp.MustCompile(`^token ghs_[0-9a-f]{40}$`).MatchString(old) {
		t.Fatalf("legacy token %q", old)
	}
	for _, auth := range []string{tok, old} {
		if resp, _, _ := do(t, "GET", s.URL()+"installation/repositories", auth, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%.30s...: status %d", auth, resp.StatusCode)
		}
	}
}
