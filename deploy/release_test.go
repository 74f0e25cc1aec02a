package deploy

import (
	"regexp"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/version"
)

// newestChangelogVersion is the first "## X.Y.Z - YYYY-MM-DD" heading of
// CHANGELOG.md; an "## Unreleased" above it is not a release.
func newestChangelogVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^## (\d+\.\d+\.\d+)(?: - \d{4}-\d{2}-\d{2})?$`).FindStringSubmatch(readFile(t, "../CHANGELOG.md"))
	if m == nil {
		t.Fatal("CHANGELOG.md has no version heading (## X.Y.Z - YYYY-MM-DD)")
	}
	return m[1]
}

// TestOneVersionEverywhere: internal/version.Version is the release; the
// chart, its image, compose's image, the Dockerfile's default and the newest
// CHANGELOG heading all say it, so a tag cut from this tree is one release.
func TestOneVersionEverywhere(t *testing.T) {
	v := version.Version
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("internal/version.Version %q is not X.Y.Z", v)
	}
	ch := queenChart(t)
	if ch.Metadata.AppVersion != v || ch.Metadata.Version != v {
		t.Errorf("Chart.yaml version %s, appVersion %s; internal/version.Version is %s",
			ch.Metadata.Version, ch.Metadata.AppVersion, v)
	}
	if got := newestChangelogVersion(t); got != v {
		t.Errorf("CHANGELOG.md's newest release is %s; internal/version.Version is %s", got, v)
	}
	for name, s := range composeFile(t).Services {
		if name == "redis" {
			continue
		}
		if _, tag, _ := strings.Cut(s.Image, ":"); tag != v {
			t.Errorf("compose service %s runs %s; want tag %s", name, s.Image, v)
		}
	}
	if got := dockerArg(t, dockerfile(t), "VERSION"); got != v {
		t.Errorf("Dockerfile ARG VERSION=%s; internal/version.Version is %s", got, v)
	}
	// The docs' commands pull and build this release.
	for _, f := range []string{"../README.md", "../docs/install.md", "../docs/operate.md", "../docs/railway.md"} {
		for _, m := range regexp.MustCompile(`(?:queen-app:|--version )(\d+\.\d+\.\d+)`).FindAllStringSubmatch(readFile(t, f), -1) {
			if m[1] != v {
				t.Errorf("%s says %s; the release is %s", f, m[0], v)
			}
		}
	}
	// The chart's image follows appVersion unless a tag is set.
	o := render(t, inlineValues())
	for _, d := range o.Deployments {
		img := d.Spec.Template.Spec.Containers[0].Image
		if !strings.HasSuffix(img, ":"+v) {
			t.Errorf("%s runs %s by default; want tag %s", d.Name, img, v)
		}
	}
}
