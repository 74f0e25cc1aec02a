// Package deploy holds what runs queen-app outside `go run`: the one-host
// compose file, its environment example and the GitHub App manifests (the
// whole App, and one without the export push). Its tests render
// charts/queen-app with Helm's own engine and check the chart, the
// Dockerfile, the compose file and the manifests against the code: the
// variables the binaries read, the ports and paths they serve, the GitHub
// calls they make. They also run docs/install.md's App registration and check
// what its other deploy steps write, and that no file points at notes
// outside the repository. The tests live here so the chart directory holds
// no Go.
package deploy
