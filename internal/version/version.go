// Package version says which build of queen-app is running: the release
// (the module version, also the chart's appVersion), the commit and the Go
// toolchain. Release builds set Version and Commit with -ldflags:
//
//	go build -ldflags "-X github.com/queen-app/queen-app/internal/version.Version=0.2.0 \
//	  -X github.com/queen-app/queen-app/internal/version.Commit=$(git rev-parse HEAD)" ./cmd/...
package version

import (
	"runtime"
	"runtime/debug"
)

// Set by -ldflags; see the package comment.
var (
	// Version is the release this tree is.
	Version = "0.2.0"
	// Commit is the source commit; empty takes the VCS stamp of the build.
	Commit = ""
)

// Build is what a binary reports of itself.
type Build struct {
	Version   string
	Commit    string // "unknown" when neither -ldflags nor the build's VCS stamp says
	GoVersion string
}

// Get returns the running build.
func Get() Build {
	b := Build{Version: Version, Commit: Commit, GoVersion: runtime.Version()}
	if b.Commit == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					b.Commit = s.Value
				}
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// String is the --version line of binary.
func (b Build) String(binary string) string {
	return binary + " " + b.Version + " (commit " + b.Commit + ", " + b.GoVersion + ")"
}
