package deploy

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/queen-app/queen-app/internal/githubapp"
)

// The README's deploy steps are commands a person pastes. These tests run
// the App registration's own blocks with bash, jq and openssl (GitHub
// stubbed), and check what the other steps write, so the README cannot
// drift from what works.

// codeBlock is one of the README's fenced code blocks, its common
// indentation removed, with the language its fence names.
type codeBlock struct{ lang, text string }

func readmeBlocks(t *testing.T) []codeBlock {
	t.Helper()
	var blocks []codeBlock
	var cur []string
	indent, lang, in := "", "", false
	for _, line := range strings.Split(readme(t), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && strings.HasPrefix(trimmed, "```"):
			in, cur, lang = true, nil, strings.TrimPrefix(trimmed, "```")
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, codeBlock{lang, strings.Join(cur, "\n") + "\n"})
		case in:
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	return blocks
}

// readmeBlock is the one block holding marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	var found []string
	for _, b := range readmeBlocks(t) {
		if strings.Contains(b.text, marker) {
			found = append(found, b.text)
		}
	}
	if len(found) != 1 {
		t.Fatalf("README: %d code blocks hold %q, want 1", len(found), marker)
	}
	return found[0]
}

// needTools fails (never skips) when a tool the README's commands use is missing.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the README's commands (.ci/run installs it): %v", tool, err)
		}
	}
}

// bash runs script in dir with bash -eu, the environment reduced to PATH
// and extra; it returns stdout.
func bash(t *testing.T, dir, script string, extra ...string) string {
	t.Helper()
	cmd := exec.Command("bash", "-eu", "-c", script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, extra...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("bash: %v\n%s\nscript:\n%s", err, ee.Stderr, script)
		}
		t.Fatal(err)
	}
	return string(out)
}

var (
	formAction = regexp.MustCompile(`<form action="([^"]+)" method="post">`)
	formValue  = regexp.MustCompile(`(?s)name="manifest" value='([^']*)'`)
	jqURL      = regexp.MustCompile(`--arg url (\S+)`)
	stateHex   = regexp.MustCompile(`^https://github\.com/settings/apps/new\?state=([0-9a-f]{32})$`)
)

// Step 1 makes a page that posts the manifest with the webhook URL put in,
// and a state GitHub will send back: random, so a forged redirect cannot
// guess it.
func TestReadmeRegistrationPagePostsTheManifestWithARandomState(t *testing.T) {
	needTools(t, "bash", "jq", "openssl")
	script := readmeBlock(t, "cat > register.html")
	url := jqURL.FindStringSubmatch(script)
	if url == nil {
		t.Fatal("README step 1: no `jq --arg url URL`")
	}
	want := manifest(t, manifestFile)
	want.HookAttributes.URL = url[1]

	states := map[string]bool{}
	for range 2 {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "deploy"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "deploy", manifestFile), []byte(readFile(t, manifestFile)), 0o644); err != nil {
			t.Fatal(err)
		}
		echoed := strings.TrimSpace(bash(t, dir, script+`echo "$state"`+"\n"))
		page, err := os.ReadFile(filepath.Join(dir, "register.html"))
		if err != nil {
			t.Fatal(err)
		}
		action := formAction.FindStringSubmatch(string(page))
		if action == nil {
			t.Fatalf("register.html has no form posting to GitHub:\n%s", page)
		}
		st := stateHex.FindStringSubmatch(action[1])
		if st == nil || st[1] != echoed {
			t.Errorf("the form posts to %q; want https://github.com/settings/apps/new?state= and the 32 hex of $state (%q)", action[1], echoed)
			continue
		}
		states[st[1]] = true
		value := formValue.FindStringSubmatch(string(page))
		if value == nil {
			t.Fatalf("register.html posts no manifest:\n%s", page)
		}
		var got appManifest
		dec := json.NewDecoder(strings.NewReader(value[1]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("the manifest register.html posts: %v\n%s", err, value[1])
		}
		if got.HookAttributes != want.HookAttributes || !maps.Equal(got.DefaultPermissions, want.DefaultPermissions) ||
			!slices.Equal(got.DefaultEvents, want.DefaultEvents) || got.RedirectURL != want.RedirectURL {
			t.Errorf("register.html posts %+v, want the manifest with its URL put in: %+v", got, want)
		}
	}
	if len(states) != 2 {
		t.Errorf("two runs of step 1 made the states %v: the state is not random", states)
	}
	// Step 2 has the person check it on the redirect.
	if !strings.Contains(readme(t), "Check that the `state` in the address bar is the one you made") {
		t.Error("README step 2 does not say to check the state GitHub sends back")
	}
}

// Step 3 trades the code from the address bar for the App's credentials;
// the key it writes is one queen-app can load, readable by its owner only.
// GitHub is a stub here that records what it was asked.
func TestReadmeCodeConversionWritesAUsableKey(t *testing.T) {
	needTools(t, "bash", "jq")
	script := readmeBlock(t, "app-manifests/$CODE/conversions > app.json\njq")
	codeLine := regexp.MustCompile(`(?m)^CODE=\S+`)
	if !codeLine.MatchString(script) {
		t.Fatal("README step 3 does not set CODE (from the address bar) before using it")
	}
	script = codeLine.ReplaceAllString(script, "CODE=f00dc0de")
	dir := t.TempDir()
	conversion, err := json.Marshal(map[string]any{
		"id": 4242, "slug": "queen-app-test", "pem": testKeyPEM,
		"webhook_secret": testWebhookSecret, "client_secret": "client-secret-0123456789",
	})
	if err != nil {
		t.Fatal(err)
	}
	stub := filepath.Join(dir, "conversion.json")
	if err := os.WriteFile(stub, conversion, 0o644); err != nil {
		t.Fatal(err)
	}
	out := bash(t, dir, `curl() { printf '%s\n' "$*" > curl.args; cat "$STUB"; }`+"\n"+script, "STUB="+stub)

	args, err := os.ReadFile(filepath.Join(dir, "curl.args"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(args)); got != "-s -X POST https://api.github.com/app-manifests/f00dc0de/conversions" {
		t.Errorf("step 3 asks GitHub %q", got)
	}
	for _, want := range []string{"4242", testWebhookSecret, "queen-app-test"} {
		if !strings.Contains(out, want) {
			t.Errorf("step 3 does not print %q:\n%s", want, out)
		}
	}
	keyFile := filepath.Join(dir, "github-app-key.pem")
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := githubapp.ParsePrivateKey(key); err != nil {
		t.Errorf("the key step 3 writes does not load: %v", err)
	}
	for _, f := range []string{keyFile, filepath.Join(dir, "app.json")} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v, mode %v; want readable by its owner only", filepath.Base(f), err, fi.Mode().Perm())
		}
	}
	// GitHub Enterprise Server: the same trade at the host's REST base.
	ghes := readmeBlock(t, "https://HOST/api/v3/app-manifests/$CODE/conversions")
	if !strings.Contains(ghes, "curl -s -X POST https://HOST/api/v3/app-manifests/$CODE/conversions > app.json") {
		t.Errorf("README's GitHub Enterprise conversion:\n%s", ghes)
	}
}

var (
	redirectTarget = regexp.MustCompile(`(?:^|[^0-9&>])>\s*([A-Za-z0-9._/-]+)`)
	cpTarget       = regexp.MustCompile(`(?m)^\s*cp\s+\S+\s+([A-Za-z0-9._/-]+)\s*$`)
	// A here-document's body is text, not commands: from the line after
	// <<WORD to the line WORD.
	heredoc = regexp.MustCompile(`(?ms)<<(\w+)\n.*?^\w+$`)
)

// Every file the README's commands write into the checkout (the App's
// credentials and key, the compose environment, the manifest flow's
// files, the Queen's dump) is one git ignores, so none is committed by a
// `git add` of the working tree.
func TestReadmeKeepsTheFilesItWritesOutOfGit(t *testing.T) {
	needTools(t, "git")
	written := map[string]bool{}
	for _, b := range readmeBlocks(t) {
		if b.lang != "sh" {
			continue
		}
		text := heredoc.ReplaceAllString(b.text, "")
		for _, m := range redirectTarget.FindAllStringSubmatch(text, -1) {
			written[m[1]] = true
		}
		for _, m := range cpTarget.FindAllStringSubmatch(text, -1) {
			written[m[1]] = true
		}
	}
	for _, want := range []string{"manifest.json", "register.html", "app.json", "github-app-key.pem",
		"deploy/queen-app.env", "deploy/github-app-key.pem"} {
		if !written[want] {
			t.Errorf("the README's commands no longer write %s: the walk is wrong (found %v)", want, slices.Sorted(maps.Keys(written)))
		}
	}
	for f := range written {
		if strings.HasPrefix(f, "/") {
			continue // outside the checkout
		}
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", f)
		cmd.Dir = ".."
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			t.Errorf("the README writes %s, which .gitignore does not keep out of git", f)
		default:
			t.Fatalf("git check-ignore %s: %v", f, err)
		}
	}
}

// The key's mode is set while the file is still the person's: after the
// chown to the image's user only root could change it, and a person who
// is not root would leave it readable by everyone.
func TestReadmeSetsTheKeysModeBeforeItsOwner(t *testing.T) {
	block := readmeBlock(t, "cp github-app-key.pem deploy/github-app-key.pem")
	chmod := strings.Index(block, "chmod 0400 deploy/github-app-key.pem")
	chown := strings.Index(block, "chown 10001:10001 deploy/github-app-key.pem")
	if chmod < 0 || chown < 0 || chmod > chown {
		t.Errorf("the compose step must chmod 0400 the key before chowning it to 10001:\n%s", block)
	}
}

// The README's values put the webhook behind an Ingress whose certificate
// cert-manager issues into the Secret the Ingress serves.
func TestReadmeValuesGetTheIngressACertificate(t *testing.T) {
	vals, err := chartutil.ReadValues([]byte(readmeBlock(t, "# queen-app-values.yaml")))
	if err != nil {
		t.Fatalf("README's values: %v", err)
	}
	o := render(t, vals)
	if len(o.Ingresses) != 1 {
		t.Fatalf("README's values render %d Ingresses, want 1", len(o.Ingresses))
	}
	ing := o.Ingresses[0]
	issuer := ing.Annotations["cert-manager.io/cluster-issuer"]
	if issuer == "" {
		t.Errorf("the Ingress has no cert-manager.io/cluster-issuer annotation: %v", ing.Annotations)
	}
	secret := lookup(map[string]any(vals), "ingress.tlsSecretName")
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != secret || len(ing.Spec.TLS[0].Hosts) != 1 ||
		ing.Spec.TLS[0].Hosts[0] != ing.Spec.Rules[0].Host {
		t.Errorf("Ingress TLS %+v; want the host's certificate in the Secret %v", ing.Spec.TLS, secret)
	}
	if !strings.Contains(readme(t), "kubectl get clusterissuers") {
		t.Error("README does not say where the issuer's name comes from")
	}
}
