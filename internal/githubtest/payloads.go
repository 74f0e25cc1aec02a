package githubtest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// module is the path go.mod declares; the search stops at its go.mod.
const module = "github.com/queen-app/queen-app"

// PayloadsDir is testdata/github-payloads of this module: webhook payloads
// in GitHub's documented shapes. It walks up from the test's working
// directory (its package's directory) to the module's go.mod and never
// past it, so the suite reads nothing outside the module.
func PayloadsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if mod, ok := moduleOf(dir); ok {
			if mod != module {
				t.Fatalf("githubtest: %s/go.mod is module %q, not %s", dir, mod, module)
			}
			return filepath.Join(dir, "testdata", "github-payloads")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("githubtest: no go.mod of %s above the working directory", module)
		}
		dir = parent
	}
}

// moduleOf reads the module path of dir/go.mod; ok is false without one.
func moduleOf(dir string) (mod string, ok bool) {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); bytes.HasPrefix(line, []byte("module ")) {
			return string(bytes.TrimSpace(line[len("module "):])), true
		}
	}
	return "", true
}

// Payload reads one payload, e.g. "pull_request/closed.payload.json".
func Payload(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(PayloadsDir(t), filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("read payload %s: %v", name, err)
	}
	return b
}
