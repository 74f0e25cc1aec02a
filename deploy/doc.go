// Package deploy holds what runs queen-app outside `go run`: the one-host
// compose file, its environment example and the GitHub App manifest. Its
// tests render charts/queen-app with Helm's own engine and check the chart,
// the Dockerfile, the compose file and the manifest against the code: the
// variables the binaries read, the ports and paths they serve, the GitHub
// calls they make. The tests live here so the chart directory holds no Go.
package deploy
