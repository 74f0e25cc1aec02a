package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mdLink is an inline Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is the anchor GitHub gives a heading: lower case, punctuation but
// '-' and '_' dropped, spaces as '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown file (outside code blocks),
// a repeated heading numbered as GitHub numbers it.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		s := slug(strings.ReplaceAll(h, "`", ""))
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Every relative link of the README and docs/*.md names a file of the
// repository, and its #anchor a heading of that file.
func TestDocLinksResolve(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		inCode := false
		for n, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			if inCode {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest, destText := f, text
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), path)
					db, err := os.ReadFile(dest)
					if err != nil {
						if st, serr := os.Stat(dest); serr == nil && st.IsDir() {
							continue
						}
						t.Errorf("%s:%d: %s: no such file", f, n+1, target)
						continue
					}
					destText = string(db)
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(destText)[anchor] {
					t.Errorf("%s:%d: %s: %s has no heading #%s", f, n+1, target, dest, anchor)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d links", checked)
	}
}

// The mutant counts the CHANGELOG and README quote are docs/mutation.md's
// (its total line, "**N mutants, K killed, E equivalent, ..."), so no page
// claims a count the mutation check did not measure.
func TestMutantCountsAgree(t *testing.T) {
	b, err := os.ReadFile("mutation.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\*\*(\d+) mutants, (\d+) killed, (\d+) equivalent`).FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/mutation.md has no total line")
	}
	total, killed, equiv := string(m[1]), string(m[2]), string(m[3])
	quoted := regexp.MustCompile(`(\d+) mutants(?:: (\d+) killed, (\d+) equivalent)?`)
	for _, f := range []string{"../CHANGELOG.md", "../README.md"} {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range quoted.FindAllSubmatch(text, -1) {
			if string(q[1]) != total || len(q[2]) > 0 && (string(q[2]) != killed || string(q[3]) != equiv) {
				t.Errorf("%s says %q; docs/mutation.md says %s mutants, %s killed, %s equivalent", f, q[0], total, killed, equiv)
			}
		}
	}
}
