package export_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/export"
)

// snapshot is the module's replay snapshot: its owned_paths are real
// Boundary shapes.
const snapshot = "../../testdata/replay/2026-10-11.json"

// maxItems bounds the lists of one input so an input stays fast.
const maxItems = 32

// FuzzBoundary: NormalizePath is idempotent; a path is held by itself;
// Contains holds by whole path components ("docs" never holds
// "docsite/x"); Strays are exactly the files, in order, that no owned path
// holds, and nothing when the row has no Boundary. owned and files are
// lists, one path a line.
func FuzzBoundary(f *testing.F) {
	data, err := os.ReadFile(snapshot)
	if err != nil {
		f.Fatal(err)
	}
	var s struct {
		Rows []struct {
			OwnedPaths []string `json:"owned_paths"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		f.Fatal(err)
	}
	var boundaries [][]string
	for _, r := range s.Rows {
		if len(r.OwnedPaths) > 0 && len(boundaries) < 6 {
			boundaries = append(boundaries, r.OwnedPaths)
		}
	}
	if len(boundaries) == 0 {
		f.Fatalf("%s: no row owns a path", snapshot)
	}
	for i, owned := range boundaries {
		// The row's own files, files under them, and another row's files.
		var files []string
		for _, p := range owned {
			files = append(files, p, "./"+p, p+"/deep/x", p+".bak")
		}
		files = append(files, boundaries[(i+1)%len(boundaries)]...)
		f.Add(strings.Join(owned, "\n"), strings.Join(files, "\n"))
	}
	f.Add("docs\n./rings/SR-00/\n/bootstrap/src/compiler.rs", "docsite/x\ndocs/a.md\nrings/SR-001/Foo.swift\nrings/SR-00\nbootstrap/src/compiler.rs")
	f.Add("\n./\n/\n.//", "anything\n")
	f.Add(".\na//b\n", "./x\na//b/c\na/b\n//a//b//")
	f.Fuzz(func(t *testing.T, ownedText, filesText string) {
		owned, files := lines(ownedText), lines(filesText)
		for _, p := range slices.Concat(owned, files) {
			n := export.NormalizePath(p)
			if again := export.NormalizePath(n); again != n {
				t.Fatalf("NormalizePath(%q) = %q but NormalizePath(%q) = %q", p, n, n, again)
			}
			if strings.HasPrefix(n, "/") || strings.HasPrefix(n, "./") || strings.HasSuffix(n, "/") {
				t.Fatalf("NormalizePath(%q) = %q keeps a leading / or ./ or a trailing /", p, n)
			}
			if held := export.Contains(p, p); held != (n != "") {
				t.Fatalf("Contains(%q, itself) = %t (normalized %q)", p, held, n)
			}
		}
		for _, o := range owned {
			for _, p := range files {
				if got, want := export.Contains(o, p), componentPrefix(o, p); got != want {
					t.Fatalf("Contains(%q, %q) = %t, want %t (by whole path components)", o, p, got, want)
				}
			}
		}

		strays := export.Strays(owned, files)
		boundary := slices.ContainsFunc(owned, func(o string) bool { return export.NormalizePath(o) != "" })
		if !boundary {
			if strays != nil {
				t.Fatalf("no Boundary in %q, yet strays %q", owned, strays)
			}
			return
		}
		var want []string
		for _, p := range files {
			if !slices.ContainsFunc(owned, func(o string) bool { return export.Contains(o, p) }) {
				want = append(want, p)
			}
		}
		if !slices.Equal(strays, want) {
			t.Fatalf("Strays(%q, %q) = %q, want %q", owned, files, strays, want)
		}
	})
}

// componentPrefix reports whether the components of owned, normalized, are
// the first components of path: an independent statement of Contains.
func componentPrefix(owned, path string) bool {
	o, p := export.NormalizePath(owned), export.NormalizePath(path)
	if o == "" {
		return false
	}
	oc, pc := strings.Split(o, "/"), strings.Split(p, "/")
	return len(oc) <= len(pc) && slices.Equal(oc, pc[:len(oc)])
}

func lines(s string) []string {
	out := strings.Split(s, "\n")
	return out[:min(len(out), maxItems)]
}
