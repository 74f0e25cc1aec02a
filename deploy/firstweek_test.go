package deploy

import (
	"regexp"
	"strings"
	"testing"
)

// The shared-host advice starts each binary on a listener of its own: one
// QUEEN_API_LISTEN for both stopped the worker ("is in use").
func TestSharedHostAdviceGivesEachBinaryItsListener(t *testing.T) {
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`QUEEN_API_LISTEN=(127\.0\.0\.1:\d+) bin/(webhook|worker)`).FindAllStringSubmatch(readme(t), -1) {
		got[m[2]] = m[1]
	}
	if got["webhook"] == "" || got["worker"] == "" || got["webhook"] == got["worker"] {
		t.Errorf("install.md's shared-host commands give %v; want the webhook and the worker each on its own loopback port", got)
	}
}

// Compose keeps the API token in the file its secret names, owned by the
// image's uid: the docs say where it is and how to read it, not a variable
// of queen-app.env.
func TestComposeAPITokenIsWhereTheDocsSay(t *testing.T) {
	c := composeFile(t)
	file := strings.TrimPrefix(c.Secrets["api-token"].File, "./")
	if file == "" {
		t.Fatal("compose.yaml has no api-token secret file")
	}
	docs := readme(t)
	for _, want := range []string{"sudo cat deploy/" + file, "exec webhook cat /run/secrets/api-token"} {
		if !strings.Contains(docs, want) {
			t.Errorf("the docs do not say how to read the API token: no %q", want)
		}
	}
	if strings.Contains(docs, "`QUEEN_API_TOKEN` of\n`deploy/queen-app.env`") || strings.Contains(docs, "`QUEEN_API_TOKEN` of `deploy/queen-app.env`") {
		t.Error("the docs still place the compose API token in deploy/queen-app.env")
	}
}
