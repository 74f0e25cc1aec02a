// Command contract rebuilds testdata/github-contract/ from GitHub's
// published descriptions as packaged on npm: the GraphQL schema
// (@octokit/graphql-schema), the part of the REST description the app or
// the sandbox serves (@octokit/openapi) and the webhook schemas of the
// events the app receives (@octokit/openapi-webhooks). An upgrade is one
// run and a reviewable diff; tests read only the files written here.
//
//	go run ./tools/contract [-out testdata/github-contract] [-tgz dir]
//
// It shells out to `npm pack`, so it needs npm and the registry; -tgz
// reads already packed tarballs from dir instead.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Packages: the npm packages the contracts come from.
const (
	pkgREST     = "@octokit/openapi"
	pkgWebhooks = "@octokit/openapi-webhooks"
	pkgGraphQL  = "@octokit/graphql-schema"
)

// Operation is one REST operation the app sends or the sandbox serves, as
// method and path template of GitHub's description.
type Operation struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// operations are the REST operations of internal/githubapp (go-github calls)
// and internal/sandbox (its Route constants). Keep in step with both.
var operations = []Operation{
	{"GET", "/app"}, // sandbox RouteApp
	{"POST", "/app/installations/{installation_id}/access_tokens"}, // Apps.CreateInstallationToken (ghinstallation)
	{"GET", "/app/installations"},                                  // Apps.ListInstallations
	{"GET", "/installation/repositories"},                          // Apps.ListRepos
	{"GET", "/repos/{owner}/{repo}/pulls"},                         // PullRequests.List
	{"POST", "/repos/{owner}/{repo}/pulls"},                        // PullRequests.Create
	{"GET", "/app/hook/deliveries"},                                // Apps.ListHookDeliveries
	{"POST", "/app/hook/deliveries/{delivery_id}/attempts"},        // Apps.RedeliverHookDelivery
	{"GET", "/repos/{owner}/{repo}/branches/{branch}"},             // sandbox RouteBranch
	{"GET", "/repos/{owner}/{repo}/git/ref/{ref}"},                 // Git.GetRef
	{"GET", "/repos/{owner}/{repo}/issues/{issue_number}"},         // Issues.Get
	{"GET", "/repos/{owner}/{repo}"},                               // sandbox RouteRepo (renames)
}

// webhooks are the webhooks (event-action keys of @octokit/openapi-webhooks)
// the app receives and acts on: every action of installation and
// installation_repositories, ping, the pull_request actions it reads and
// the fixtures hold, and the repository renames and transfers.
var webhooks = []string{
	"installation-created", "installation-deleted", "installation-new-permissions-accepted",
	"installation-suspend", "installation-unsuspend",
	"installation-repositories-added", "installation-repositories-removed",
	"ping",
	"pull-request-opened", "pull-request-closed", "pull-request-reopened", "pull-request-synchronize",
	"repository-renamed", "repository-transferred",
}

// restDescription and webhookDescription are the files of GitHub.com's
// descriptions inside the packages.
const (
	restDescription    = "package/generated/api.github.com.json"
	webhookDescription = "package/generated/api.github.com.json"
	graphqlSchema      = "package/schema.graphql"
)

// Entry is one vendored file's origin in the manifest.
type Entry struct {
	File    string `json:"file"`
	Package string `json:"package"`
	Version string `json:"version"`
	License string `json:"license"`
	From    string `json:"from"`
}

// Manifest says where every vendored file came from.
type Manifest struct {
	Note       string      `json:"note"`
	Files      []Entry     `json:"files"`
	Operations []Operation `json:"operations"`
	Webhooks   []string    `json:"webhooks"`
}

func main() {
	out := flag.String("out", "testdata/github-contract", "directory to write")
	tgz := flag.String("tgz", "", "read packed tarballs from this directory instead of running npm pack")
	flag.Parse()
	if err := run(*out, *tgz); err != nil {
		fmt.Fprintln(os.Stderr, "contract:", err)
		os.Exit(1)
	}
}

func run(out, tgz string) error {
	if tgz == "" {
		dir, err := os.MkdirTemp("", "contract")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		for _, p := range []string{pkgREST, pkgWebhooks, pkgGraphQL} {
			cmd := exec.Command("npm", "pack", "--silent", p)
			cmd.Dir, cmd.Stderr = dir, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("npm pack %s: %w", p, err)
			}
		}
		tgz = dir
	}
	rest, err := readPackage(tgz, pkgREST, restDescription)
	if err != nil {
		return err
	}
	hooks, err := readPackage(tgz, pkgWebhooks, webhookDescription)
	if err != nil {
		return err
	}
	gql, err := readPackage(tgz, pkgGraphQL, graphqlSchema)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	restDoc, err := subsetREST(rest.files[restDescription])
	if err != nil {
		return err
	}
	hookDoc, names, err := subsetWebhooks(hooks.files[webhookDescription])
	if err != nil {
		return err
	}
	m := Manifest{
		Note:       "Generated by `go run ./tools/contract`; do not edit by hand.",
		Operations: operations,
		Webhooks:   names,
	}
	write := func(name string, data []byte, p *pkg, from string) error {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return err
		}
		if p != nil {
			m.Files = append(m.Files, Entry{File: name, Package: p.name, Version: p.version, License: p.license, From: from})
		}
		return nil
	}
	for _, f := range []struct {
		name string
		data []byte
		p    *pkg
		from string
	}{
		{"schema.graphql", gql.files[graphqlSchema], gql, graphqlSchema},
		{"openapi.json", restDoc, rest, restDescription},
		{"webhooks.json", hookDoc, hooks, webhookDescription},
	} {
		if err := write(f.name, f.data, f.p, f.from); err != nil {
			return err
		}
	}
	for _, p := range []*pkg{rest, hooks, gql} {
		if err := write("LICENSE."+strings.ReplaceAll(strings.TrimPrefix(p.name, "@"), "/", "-"), p.licenseText, nil, ""); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "manifest.json"), append(data, '\n'), 0o644)
}

type pkg struct {
	name, version, license string
	licenseText            []byte
	files                  map[string][]byte
}

// readPackage reads the tarball of name from dir: its package.json, its
// license text and want.
func readPackage(dir, name, want string) (*pkg, error) {
	base := strings.ReplaceAll(strings.TrimPrefix(name, "@"), "/", "-") + "-"
	matches, _ := filepath.Glob(filepath.Join(dir, base+"[0-9]*.tgz"))
	if len(matches) != 1 {
		return nil, fmt.Errorf("%s: want one %s*.tgz in %s, found %d", name, base, dir, len(matches))
	}
	f, err := os.Open(matches[0])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", matches[0], err)
	}
	p := &pkg{name: name, files: map[string][]byte{}}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", matches[0], err)
		}
		switch {
		case h.Name == want || h.Name == "package/package.json" || strings.HasPrefix(h.Name, "package/LICENSE"):
		default:
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		switch {
		case h.Name == "package/package.json":
			var meta struct{ Name, Version, License string }
			if err := json.Unmarshal(data, &meta); err != nil {
				return nil, fmt.Errorf("%s package.json: %w", name, err)
			}
			if meta.Name != name {
				return nil, fmt.Errorf("%s: package.json names %q", matches[0], meta.Name)
			}
			p.version, p.license = meta.Version, meta.License
		case strings.HasPrefix(h.Name, "package/LICENSE"):
			p.licenseText = data
		}
		if h.Name == want {
			p.files[want] = data
		}
	}
	if p.files[want] == nil || p.licenseText == nil || p.version == "" {
		return nil, fmt.Errorf("%s: %s, LICENSE or package.json missing", matches[0], want)
	}
	if p.license != "MIT" {
		return nil, fmt.Errorf("%s is %q, not MIT: check before vendoring", name, p.license)
	}
	return p, nil
}

// subsetREST keeps the operations the app or sandbox uses and every
// component they reference.
func subsetREST(data []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	paths, _ := doc["paths"].(map[string]any)
	kept := map[string]any{}
	for _, op := range operations {
		item, ok := paths[op.Path].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("openapi: no path %s", op.Path)
		}
		o, ok := item[strings.ToLower(op.Method)]
		if !ok {
			return nil, fmt.Errorf("openapi: no %s %s", op.Method, op.Path)
		}
		k, _ := kept[op.Path].(map[string]any)
		if k == nil {
			k = map[string]any{}
			if ps, ok := item["parameters"]; ok {
				k["parameters"] = ps
			}
			kept[op.Path] = k
		}
		k[strings.ToLower(op.Method)] = o
	}
	dropExampleRefs(kept)
	sub := map[string]any{"openapi": doc["openapi"], "info": doc["info"], "servers": doc["servers"], "paths": kept}
	sub["components"] = referenced(doc, kept)
	return pretty(sub)
}

// subsetWebhooks keeps the webhooks of the events the app receives and
// every component they reference.
func subsetWebhooks(data []byte) ([]byte, []string, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	all, _ := doc["webhooks"].(map[string]any)
	kept := map[string]any{}
	var names []string
	for _, name := range webhooks {
		w, ok := all[name]
		if !ok {
			return nil, nil, fmt.Errorf("openapi-webhooks: no webhook %s", name)
		}
		kept[name] = w
		names = append(names, name)
	}
	dropExampleRefs(kept)
	sub := map[string]any{"openapi": doc["openapi"], "info": doc["info"], "webhooks": kept}
	sub["components"] = referenced(doc, kept)
	out, err := pretty(sub)
	return out, names, err
}

// referenced walks $refs from root transitively and returns doc's
// components they reach, by section (schemas, parameters, responses, ...).
func referenced(doc map[string]any, root any) map[string]any {
	comps, _ := doc["components"].(map[string]any)
	out := map[string]any{}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, "#/components/") && !seen[ref] {
				seen[ref] = true
				parts := strings.SplitN(strings.TrimPrefix(ref, "#/components/"), "/", 2)
				sec, _ := comps[parts[0]].(map[string]any)
				if c, ok := sec[parts[1]]; ok {
					s, _ := out[parts[0]].(map[string]any)
					if s == nil {
						s = map[string]any{}
						out[parts[0]] = s
					}
					s[parts[1]] = c
					walk(c)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(root)
	dropExampleRefs(out)
	return out
}

// dropExampleRefs removes media types' "examples": long, and not part of
// the contract.
func dropExampleRefs(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "examples" {
				if m, ok := x.(map[string]any); ok && isExampleMap(m) {
					delete(v, k)
					continue
				}
			}
			dropExampleRefs(x)
		}
	case []any:
		for _, x := range v {
			dropExampleRefs(x)
		}
	}
}

// isExampleMap tells a media type's examples (name -> {$ref|value}) from
// a schema's "examples" array or a property named "examples".
func isExampleMap(m map[string]any) bool {
	for _, e := range m {
		em, ok := e.(map[string]any)
		if !ok {
			return false
		}
		_, ref := em["$ref"]
		_, val := em["value"]
		if !ref && !val {
			return false
		}
	}
	return true
}

func pretty(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
