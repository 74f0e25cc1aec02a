// Package githubtest adapts the GitHub stand-in of internal/sandbox to
// tests: New starts one that the test's cleanup stops, and Payload reads
// the webhook payloads of testdata/github-payloads.
package githubtest

import (
	"testing"

	"github.com/queen-app/queen-app/internal/sandbox"
)

// Server is the GitHub stand-in; see sandbox.GitHub.
type Server = sandbox.GitHub

// PR is a pull request as the test sets it.
type PR = sandbox.PR

// Delivery is one attempt of an App webhook delivery.
type Delivery = sandbox.Delivery

// Routes, as counted by Server.Count.
const (
	RouteMint          = sandbox.RouteMint
	RouteInstallations = sandbox.RouteInstallations
	RouteRepos         = sandbox.RouteRepos
	RouteListPulls     = sandbox.RouteListPulls
	RouteCreatePull    = sandbox.RouteCreatePull
	RouteGraphQL       = sandbox.RouteGraphQL
	RouteDeliveries    = sandbox.RouteDeliveries
	RouteRedeliver     = sandbox.RouteRedeliver
	RouteBranch        = sandbox.RouteBranch
	RouteRef           = sandbox.RouteRef
	RouteIssue         = sandbox.RouteIssue
)

// SecondaryRateLimitDocs is the documentation_url GitHub sends with a
// secondary rate limit.
const SecondaryRateLimitDocs = sandbox.SecondaryRateLimitDocs

// SecondaryLimitMessage is how GitHub words a secondary rate limit.
const SecondaryLimitMessage = sandbox.SecondaryLimitMessage

// ResourceLimitMessage is the error of a query past GitHub's resource limits.
const ResourceLimitMessage = sandbox.ResourceLimitMessage

// New starts a GitHub stand-in for the test and stops it when the test
// ends. It generates an RSA key for an App whose id is AppID.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := sandbox.NewGitHub()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
