package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The design notes queen-app was built from lived beside the repository,
// in a folder a user never has; docs/design.md and docs/export.md are
// their home now. A file that points back there sends a reader nowhere.
// The patterns and examples are split so that this file does not match
// itself.
var outsideReferences = regexp.MustCompile(strings.Join([]string{
	`shared/` + `design\.md`,
	`shared/` + `reference`,
	`\.\./` + `shared\b`,
	`(^|[^/\w])` + `reference/(export|rules)\.md`,
	`(^|[^/\w.])` + `rules\.md`,
}, "|"))

// repoFiles are the files of the tree as the CI copies it: tracked ones
// and new ones git does not ignore.
func repoFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files (git is needed to list the repository's files): %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

func TestNoFilePointsOutsideTheRepository(t *testing.T) {
	files := repoFiles(t)
	if len(files) < 100 {
		t.Fatalf("git lists only %d files: the listing is wrong", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outsideReferences.FindString(line); m != "" {
				t.Errorf("%s:%d names %q, a file outside the repository; point it at docs/design.md or docs/export.md", f, i+1, strings.TrimSpace(m))
			}
		}
	}
}

// The pattern catches each form the old references took, and leaves the
// repository's own docs alone.
func TestOutsideReferencesPattern(t *testing.T) {
	for _, s := range []string{
		"see `shar" + "ed/design.md`",
		"(shar" + "ed/reference/export.md §§1, 3)",
		"// /work/shar" + "ed/reference/rules.md (sections 1, 2)",
		"the payloads in ../shar" + "ed/github-payloads",
		"(refer" + "ence/export.md §4.4)",
		"copied from rul" + "es.md.",
	} {
		if !outsideReferences.MatchString(s) {
			t.Errorf("not caught: %q", s)
		}
	}
	for _, s := range []string{
		"see docs/design.md, the claim card",
		"[export.md](export.md)",
		"shared in Redis",
		"docs/rules.md",
	} {
		if outsideReferences.MatchString(s) {
			t.Errorf("caught, but points inside the repository: %q", s)
		}
	}
}
