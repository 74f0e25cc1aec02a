package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/version"
)

// dockerfile is the repository's Dockerfile as instructions: continuation
// lines joined, comments dropped, each with the stage it belongs to.
type instruction struct {
	stage string
	op    string // FROM, RUN, COPY, ...
	args  string
}

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	var out []instruction
	stage := ""
	var cur strings.Builder
	for _, line := range strings.Split(readFile(t, "../Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
		if strings.HasSuffix(trimmed, `\`) {
			continue
		}
		full := strings.Join(strings.Fields(cur.String()), " ")
		cur.Reset()
		op, args, _ := strings.Cut(full, " ")
		op = strings.ToUpper(op)
		if op == "FROM" {
			if m := regexp.MustCompile(`(?i) AS (\S+)$`).FindStringSubmatch(args); m != nil {
				stage = m[1]
			} else {
				stage = ""
			}
		}
		out = append(out, instruction{stage, op, args})
	}
	return out
}

func dockerArg(t *testing.T, ins []instruction, name string) string {
	t.Helper()
	for _, in := range ins {
		if in.op == "ARG" && strings.HasPrefix(in.args, name+"=") {
			return strings.TrimPrefix(in.args, name+"=")
		}
	}
	t.Fatalf("Dockerfile: no ARG %s with a default", name)
	return ""
}

// finalStage is the last FROM's stage: what the image runs.
func finalStage(ins []instruction) []instruction {
	last := 0
	for i, in := range ins {
		if in.op == "FROM" {
			last = i
		}
	}
	return ins[last:]
}

func dockerfileUID(t *testing.T) int64 {
	t.Helper()
	for _, in := range finalStage(dockerfile(t)) {
		if in.op == "USER" {
			uid, _, _ := strings.Cut(in.args, ":")
			n, err := strconv.ParseInt(uid, 10, 64)
			if err != nil {
				t.Fatalf("Dockerfile USER %q is not numeric (Kubernetes' runAsNonRoot needs a uid)", in.args)
			}
			return n
		}
	}
	t.Fatal("Dockerfile: the image sets no USER")
	return 0
}

// builtBinaries are the commands the Dockerfile builds and copies into the
// image, checked against cmd/.
func builtBinaries(t *testing.T) []string {
	t.Helper()
	ins := dockerfile(t)
	var built []string
	for _, in := range ins {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			for _, m := range regexp.MustCompile(`\./cmd/([a-z]+)`).FindAllStringSubmatch(in.args, -1) {
				built = append(built, m[1])
			}
		}
	}
	var copied []string
	for _, in := range finalStage(ins) {
		if in.op == "COPY" && strings.HasPrefix(in.args, "--from=") {
			f := strings.Fields(in.args)
			for _, src := range f[1 : len(f)-1] {
				copied = append(copied, path.Base(src))
			}
		}
	}
	slices.Sort(built)
	slices.Sort(copied)
	if !slices.Equal(built, copied) {
		t.Errorf("Dockerfile builds %v but copies %v into the image", built, copied)
	}
	return copied
}

func TestDockerfileNamesWhatExists(t *testing.T) {
	ins := dockerfile(t)
	stages := map[string]bool{}
	for _, in := range ins {
		if in.op == "FROM" && in.stage != "" {
			stages[in.stage] = true
		}
		if in.op == "COPY" && strings.HasPrefix(in.args, "--from=") {
			from := strings.TrimPrefix(strings.Fields(in.args)[0], "--from=")
			if !stages[from] {
				t.Errorf("COPY --from=%s: no such earlier stage", from)
			}
		}
	}

	// Every command of cmd/ is built, and only those.
	entries, err := os.ReadDir("../cmd")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, e := range entries {
		if e.IsDir() {
			if !strings.Contains(readFile(t, "../cmd/"+e.Name()+"/main.go"), "package main") {
				t.Errorf("cmd/%s is not a main package", e.Name())
			}
			cmds = append(cmds, e.Name())
		}
	}
	bins := builtBinaries(t)
	if !slices.Equal(bins, cmds) {
		t.Errorf("the image holds %v, cmd/ has %v", bins, cmds)
	}

	// The build copies what exists, and .dockerignore lets it through.
	ignore := readFile(t, "../.dockerignore")
	for _, in := range ins {
		if in.op != "COPY" || strings.HasPrefix(in.args, "--from=") {
			continue
		}
		f := strings.Fields(in.args)
		for _, src := range f[:len(f)-1] {
			if _, err := os.Stat("../" + src); err != nil {
				t.Errorf("COPY %s: %v", src, err)
			}
			if !strings.Contains(ignore, "!"+src) {
				t.Errorf(".dockerignore does not let %s into the build context", src)
			}
		}
	}

	var build string
	for _, in := range ins {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-ldflags"} {
		if !strings.Contains(build, want) {
			t.Errorf("go build lacks %s: %s", want, build)
		}
	}
	// -X must name variables that exist, or the linker drops them silently.
	mod := modulePath(t)
	vars := packageVars(t, "../internal/version")
	xs := regexp.MustCompile(`-X (\S+)\.([A-Za-z]+)=`).FindAllStringSubmatch(build, -1)
	if len(xs) != 2 {
		t.Errorf("go build sets %d -X values, want Version and Commit", len(xs))
	}
	for _, x := range xs {
		if x[1] != mod+"/internal/version" || !vars[x[2]] {
			t.Errorf("-X %s.%s names no variable of internal/version", x[1], x[2])
		}
	}
	if v := dockerArg(t, ins, "VERSION"); v != version.Version {
		t.Errorf("Dockerfile VERSION defaults to %q, the release is %q", v, version.Version)
	}
	if goV, want := dockerArg(t, ins, "GO_VERSION"), goDirective(t); !strings.HasPrefix(want, goV) {
		t.Errorf("Dockerfile builds with Go %s, go.mod says go %s", goV, want)
	}

	// The image: non-root, git for the export push, the worker's cache dir,
	// and a default command it holds.
	final := finalStage(ins)
	if uid := dockerfileUID(t); uid == 0 {
		t.Error("the image runs as root")
	}
	hasGit, cacheDir := false, ""
	for _, in := range final {
		switch in.op {
		case "RUN":
			hasGit = hasGit || regexp.MustCompile(`apk add .*\bgit\b`).MatchString(in.args)
		case "ENV":
			if v, ok := strings.CutPrefix(in.args, "QUEEN_WORKER_CACHE_DIR="); ok {
				cacheDir = v
			}
		case "CMD", "ENTRYPOINT":
			var argv []string
			if err := jsonUnmarshal(in.args, &argv); err != nil || len(argv) == 0 || !slices.Contains(bins, path.Base(argv[0])) {
				t.Errorf("%s %s does not run a binary of the image", in.op, in.args)
			}
		}
	}
	if !hasGit {
		t.Error("the image has no git; the export push needs it")
	}
	if !strings.HasPrefix(cacheDir, "/") {
		t.Errorf("the image's QUEEN_WORKER_CACHE_DIR %q is not an absolute path", cacheDir)
	}
}

// TestChartAndComposeRunTheImagesBinaries: the commands the chart and the
// compose file run are binaries the image holds (a long-running service is
// the binary of its name; a one-shot one runs queenctl).
func TestChartAndComposeRunTheImagesBinaries(t *testing.T) {
	bins := builtBinaries(t)
	o := render(t, inlineValues())
	for _, d := range o.Deployments {
		c := d.Spec.Template.Spec.Containers[0]
		if len(c.Command) != 1 || !slices.Contains(bins, c.Command[0]) || c.Command[0] != c.Name {
			t.Errorf("%s runs %v; the image holds %v", d.Name, c.Command, bins)
		}
	}
	for _, j := range o.Jobs {
		if c := j.Spec.Template.Spec.Containers[0]; len(c.Command) == 0 || !slices.Contains(bins, c.Command[0]) {
			t.Errorf("%s runs %v; the image holds %v", j.Name, c.Command, bins)
		}
	}
	for name, svc := range composeFile(t).Services {
		if name == "redis" {
			continue
		}
		if len(svc.Profiles) > 0 { // a one-shot service
			if len(svc.Command) == 0 || !slices.Contains(bins, svc.Command[0]) {
				t.Errorf("compose service %s runs %v; the image holds %v", name, svc.Command, bins)
			}
			continue
		}
		if len(svc.Command) != 1 || svc.Command[0] != name || !slices.Contains(bins, name) {
			t.Errorf("compose service %s runs %v; the image holds %v", name, svc.Command, bins)
		}
	}
}

func modulePath(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^module (\S+)$`).FindStringSubmatch(readFile(t, "../go.mod"))
	if m == nil {
		t.Fatal("go.mod has no module line")
	}
	return m[1]
}

func goDirective(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(readFile(t, "../go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

// packageVars are the package-level variable names of the Go package in dir.
func packageVars(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range parseDir(t, dir) {
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					out[n.Name] = true
				}
			}
		}
	}
	return out
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, dir+"/"+e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return files
}

// dockerBuildLine is the Dockerfile's go build, continuation lines joined.
func dockerBuildLine(t *testing.T) string {
	t.Helper()
	for _, in := range dockerfile(t) {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			return in.args
		}
	}
	t.Fatal("Dockerfile: no RUN with go build")
	return ""
}

// TestDockerfileBuildsWhatMakeBuilds: the image's binaries are make build's,
// flag for flag: make prints its command (make -n) with the values the
// Dockerfile's build arguments stand for, and the two must be one line but
// for the target platform, which make takes from the environment.
func TestDockerfileBuildsWhatMakeBuilds(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed to print make build's command (.ci/run installs it): %v", err)
	}
	const v, commit = "9.8.7", "0123456789abcdef0123456789abcdef01234567"
	cmd := exec.Command("make", "-n", "-s", "build", "VERSION="+v, "COMMIT="+commit, "OUT=/out")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	makeLine := strings.Join(strings.Fields(string(out)), " ")

	docker := strings.NewReplacer("${VERSION}", v, "${COMMIT}", commit).Replace(dockerBuildLine(t))
	platform := regexp.MustCompile(`^GOOS=\$\{TARGETOS\} GOARCH=\$\{TARGETARCH\} `)
	if !platform.MatchString(docker) {
		t.Errorf("the Dockerfile's go build does not build for the target platform (GOOS=${TARGETOS} GOARCH=${TARGETARCH}): %s", docker)
	}
	docker = platform.ReplaceAllString(docker, "")
	if docker != makeLine {
		t.Errorf("the Dockerfile and make build differ:\nDockerfile: %s\nmake:       %s", docker, makeLine)
	}

	// make's VERSION defaults to the release.
	cmd = exec.Command("make", "-s", "version")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	out, err = cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != version.Version {
		t.Errorf("make version says %q (%v); internal/version.Version is %s", out, err, version.Version)
	}
}

// TestImageIsPinnedAndLabelled: every base image is pinned by digest, so a
// rebuild of a tag builds on what was tested, and the image carries the OCI
// labels registries and scanners read.
func TestImageIsPinnedAndLabelled(t *testing.T) {
	ins := dockerfile(t)
	pinned := regexp.MustCompile(`^(--platform=\S+ )?\S+:\S+@sha256:[0-9a-f]{64} AS \S+$`)
	froms := 0
	for _, in := range ins {
		if in.op == "FROM" {
			froms++
			if !pinned.MatchString(in.args) {
				t.Errorf("FROM %s is not pinned by digest (image:tag@sha256:...)", in.args)
			}
		}
	}
	if froms < 2 {
		t.Errorf("the Dockerfile has %d stages; want the build and the runtime", froms)
	}
	labels := map[string]string{}
	re := regexp.MustCompile(`(org\.opencontainers\.image\.[a-z]+)="([^"]*)"`)
	for _, in := range finalStage(ins) {
		if in.op == "LABEL" {
			for _, m := range re.FindAllStringSubmatch(in.args, -1) {
				labels[m[1]] = m[2]
			}
		}
	}
	for _, k := range []string{"title", "description", "source", "licenses", "version", "revision"} {
		if labels["org.opencontainers.image."+k] == "" {
			t.Errorf("the image has no org.opencontainers.image.%s label", k)
		}
	}
	if got := labels["org.opencontainers.image.version"]; got != "${VERSION}" {
		t.Errorf("org.opencontainers.image.version is %q, want the build's ${VERSION}", got)
	}
	if !strings.Contains(readFile(t, "../LICENSE"), "Apache License") || labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
		t.Errorf("org.opencontainers.image.licenses %q is not the LICENSE's", labels["org.opencontainers.image.licenses"])
	}
}
