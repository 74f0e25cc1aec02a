package deploy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

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

// The TypeScript client has its own release, its package.json's version:
// the docs' tarball names say it.
func TestClientVersionAgreesWithItsDocs(t *testing.T) {
	var pkg struct {
		Name, Version string
	}
	if err := json.Unmarshal([]byte(readFile(t, "../clients/typescript/package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(pkg.Version) || pkg.Name != "@queen-app/client" {
		t.Fatalf("clients/typescript/package.json: %s %s", pkg.Name, pkg.Version)
	}
	seen := 0
	for _, f := range []string{"../README.md", "../docs/install.md", "../clients/typescript/README.md"} {
		for _, m := range regexp.MustCompile(`queen-app-client-(\d+\.\d+\.\d+)\.tgz`).FindAllStringSubmatch(readFile(t, f), -1) {
			seen++
			if m[1] != pkg.Version {
				t.Errorf("%s says %s; the client is %s", f, m[0], pkg.Version)
			}
		}
	}
	if seen == 0 {
		t.Error("no doc names the client's tarball (npm pack)")
	}
}

// The docs' go build stamps the commit: Go records vcs.revision in a git
// clone, and --version reports it (internal/version); the line says
// -buildvcs=true, since GOFLAGS=-buildvcs=false (set on some machines,
// this project's CI one among them) would otherwise leave "commit unknown". The steps deploy before any release: the image built
// from the Dockerfile, the chart from this checkout, the published ones the
// alternative.
func TestDocsBuildAndDeployBeforeARelease(t *testing.T) {
	doc := readFile(t, "../docs/install.md")
	builds := regexp.MustCompile(`(?m)^\s*go build .*$`).FindAllString(doc, -1)
	if len(builds) == 0 {
		t.Fatal("docs/install.md has no go build line")
	}
	for _, b := range builds {
		if !strings.Contains(b, "go build -buildvcs=true ") || strings.Contains(b, "-trimpath") && !strings.Contains(b, "Commit=") ||
			!strings.Contains(b, "./cmd/webhook ./cmd/worker ./cmd/queenctl") {
			t.Errorf("docs/install.md: %q: want go build of ./cmd/... with the VCS stamp left on", b)
		}
	}
	for _, f := range []string{"../Makefile", "../Dockerfile", "../.ci/run"} {
		if strings.Contains(readFile(t, f), "buildvcs=false") {
			t.Errorf("%s turns off the VCS stamp --version reads", f)
		}
	}
	for _, want := range []string{
		"docker build --build-arg COMMIT=$(git rev-parse HEAD) -t queen-app:dev .",
		"helm install queen-app charts/queen-app ",
		"docker compose -f deploy/compose.yaml build",
		"oci://ghcr.io/queen-app/charts/queen-app --version " + version.Version,
		"ghcr.io/queen-app/queen-app:" + version.Version,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/install.md does not say %q", want)
		}
	}
	// The install's values run the image built above.
	vals, err := chartutil.ReadValues([]byte(readmeBlock(t, "# queen-app-values.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if repo, tag := lookup(map[string]any(vals), "image.repository"), lookup(map[string]any(vals), "image.tag"); repo == nil || tag != "dev" {
		t.Errorf("docs/install.md's values run image %v:%v; want the image built from the Dockerfile", repo, tag)
	}
}
