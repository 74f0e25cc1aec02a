package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/queen-app/queen-app/internal/version"
)

// actionlint is run with go run at one version, as .ci/run runs helm: 0.4 s
// once the module cache holds it, about 12 s the first time, so no tool
// dependency in go.mod for one linter. It needs the module proxy the first
// time and fails (never skips) without it.
const actionlint = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"

type workflowStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

type workflowJob struct {
	Needs       any               `yaml:"needs"`
	Permissions map[string]string `yaml:"permissions"`
	Container   string            `yaml:"container"`
	Steps       []workflowStep    `yaml:"steps"`
}

type workflow struct {
	On          map[string]any         `yaml:"on"`
	Permissions map[string]string      `yaml:"permissions"`
	Env         map[string]string      `yaml:"env"`
	Jobs        map[string]workflowJob `yaml:"jobs"`
}

func readWorkflow(t *testing.T, name string) (workflow, string) {
	t.Helper()
	text := readFile(t, "../.github/workflows/"+name)
	var w workflow
	if err := yaml.Unmarshal([]byte(text), &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(w.Jobs) == 0 {
		t.Fatalf("%s has no jobs", name)
	}
	return w, text
}

func TestWorkflowsPassActionlint(t *testing.T) {
	cmd := exec.Command("go", "run", actionlint, "-color=false")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint (go run %s): %v\n%s", actionlint, err, out)
	}
	entries, err := os.ReadDir("../.github/workflows")
	if err != nil || len(entries) < 2 {
		t.Fatalf("want ci.yml and release.yml in .github/workflows: %v", err)
	}
}

// TestWorkflowsArePinnedAndLeastPrivileged: every action is pinned by a
// full commit SHA (a tag can be moved under us) with its version beside it,
// and the token may do only what each job needs.
func TestWorkflowsArePinnedAndLeastPrivileged(t *testing.T) {
	pinned := regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*([^@\s]+)@(\S+)(.*)$`)
	sha := regexp.MustCompile(`^[0-9a-f]{40}$`)
	comment := regexp.MustCompile(`^\s*# v\d+\.\d+\.\d+$`)
	for _, name := range []string{"ci.yml", "release.yml"} {
		w, text := readWorkflow(t, name)
		uses := pinned.FindAllStringSubmatch(text, -1)
		if len(uses) == 0 {
			t.Errorf("%s uses no action", name)
		}
		for _, u := range uses {
			if !sha.MatchString(u[2]) || !comment.MatchString(u[3]) {
				t.Errorf("%s: %s@%s%s is not pinned by a commit SHA with a # vX.Y.Z comment", name, u[1], u[2], u[3])
			}
		}
		if len(w.Permissions) > 1 || (len(w.Permissions) == 1 && w.Permissions["contents"] != "read") {
			t.Errorf("%s grants %v to every job; want contents: read at most, more per job", name, w.Permissions)
		}
		for jn, j := range w.Jobs {
			for scope, level := range j.Permissions {
				if level == "write" && !slices.Contains(allowedWrites[name+"/"+jn], scope) {
					t.Errorf("%s job %s may write %s, which it does not need", name, jn, scope)
				}
			}
			if w.Permissions == nil && j.Permissions == nil {
				t.Errorf("%s job %s runs with the repository's default token permissions", name, jn)
			}
			for _, s := range j.Steps {
				if strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["persist-credentials"] != "false" {
					t.Errorf("%s job %s: checkout leaves the token in .git/config (persist-credentials)", name, jn)
				}
			}
		}
	}
}

var allowedWrites = map[string][]string{
	"release.yml/binaries": {"contents"},
	"release.yml/image":    {"packages"},
	"release.yml/chart":    {"packages"},
}

func TestCIRunsTheCIScript(t *testing.T) {
	w, _ := readWorkflow(t, "ci.yml")
	if _, ok := w.On["push"]; !ok {
		t.Error("ci.yml does not run on push")
	}
	if _, ok := w.On["pull_request"]; !ok {
		t.Error("ci.yml does not run on pull requests")
	}
	runs := false
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			runs = runs || strings.TrimSpace(s.Run) == "bash .ci/run"
		}
	}
	if !runs {
		t.Error("no job of ci.yml runs bash .ci/run, the one CI entry point")
	}
}

// TestReleaseWorkflowReleasesWhatTheTreeSays: a tag v* builds the image for
// both platforms with its SBOM and provenance, the binaries with make build
// and the tag's version, and pushes the chart; the tag must be the tree's
// release.
func TestReleaseWorkflowReleasesWhatTheTreeSays(t *testing.T) {
	w, text := readWorkflow(t, "release.yml")
	push, _ := w.On["push"].(map[string]any)
	tags, _ := push["tags"].([]any)
	if len(push) != 1 || !slices.Contains(tags, any("v*")) {
		t.Errorf("release.yml runs on %v; want push of tags v* only", w.On)
	}
	ch := queenChart(t)
	repo, _ := lookup(ch.Values, "image.repository").(string)
	if w.Env["IMAGE"] != repo {
		t.Errorf("release.yml pushes %s; the chart pulls %s", w.Env["IMAGE"], repo)
	}
	if !strings.Contains(text, `make -s version`) || !strings.Contains(text, `${TAG#v}`) {
		t.Error("release.yml does not check the tag against make version (internal/version.Version)")
	}

	var build, binaries, chart bool
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			if strings.HasPrefix(s.Uses, "docker/build-push-action@") {
				build = true
				if s.With["platforms"] != "linux/amd64,linux/arm64" || s.With["push"] != "true" ||
					s.With["sbom"] != "true" || s.With["provenance"] != "mode=max" {
					t.Errorf("build-push-action: platforms %q push %q sbom %q provenance %q", s.With["platforms"], s.With["push"], s.With["sbom"], s.With["provenance"])
				}
				for _, arg := range []string{"VERSION=", "COMMIT="} {
					if !strings.Contains(s.With["build-args"], arg) {
						t.Errorf("build-push-action passes no %s build argument", arg)
					}
				}
				if !strings.Contains(s.With["labels"], "steps.meta.outputs.labels") {
					t.Error("build-push-action does not take docker/metadata-action's OCI labels")
				}
			}
			if strings.Contains(s.Run, "make build") {
				binaries = true
				for _, p := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"} {
					if !strings.Contains(s.Run, p) {
						t.Errorf("the release builds no binaries for %s", p)
					}
				}
				if !strings.Contains(s.Run, `VERSION="$VERSION"`) {
					t.Error("make build in release.yml is not given the tag's VERSION")
				}
			}
			if strings.Contains(s.Run, "helm push") && strings.Contains(s.Run, `"$CHARTS"`) {
				chart = true
			}
		}
	}
	if !build || !binaries || !chart {
		t.Errorf("release.yml: image %v, binaries %v, chart %v; want all three", build, binaries, chart)
	}
	if w.Env["CHARTS"] != "oci://ghcr.io/queen-app/charts" {
		t.Errorf("the chart goes to %q", w.Env["CHARTS"])
	}
	// The release notes are CHANGELOG's section of the version.
	if newestChangelogVersion(t) != version.Version {
		t.Error("CHANGELOG's newest section is not this release: the release would have no notes")
	}
}
