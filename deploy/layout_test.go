package deploy

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Development section names every package of the module, so
// a newcomer finds each one from it; a package added without a line fails.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	text := readme(t)
	i := strings.Index(text, "## Development")
	if i < 0 {
		t.Fatal("README: no Development section")
	}
	layout := text[i:]
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(p, "../")))
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		if !strings.Contains(layout, "`"+dir+"`") {
			t.Errorf("README's Development section does not name the package `%s`", dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 30 {
		t.Fatalf("found only %d packages: the walk is wrong", len(seen))
	}
}
