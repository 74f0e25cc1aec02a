package githubtest

import (
	"os"
	"path/filepath"
	"testing"
)

// PayloadsDir finds shared/github-payloads (real webhook payloads from
// GitHub's docs), which lies beside the checkout: walk up from the working
// directory until a parent holds shared/github-payloads.
func PayloadsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "github-payloads")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("shared/github-payloads not found beside the checkout (looked in every parent of the working directory)")
		}
		dir = parent
	}
}

// Payload reads one payload, e.g. "pull_request/closed.payload.json".
func Payload(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(PayloadsDir(t), name))
	if err != nil {
		t.Fatalf("read payload %s: %v", name, err)
	}
	return b
}
