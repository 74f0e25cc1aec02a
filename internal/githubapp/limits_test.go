package githubapp_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
)

// GitHub answers GraphQL rate limits with HTTP 200 (or 403): each is a wait
// like its REST form, never a retry after a second or two.
func TestGraphQLRateLimitsAreWaits(t *testing.T) {
	ctx := context.Background()
	reset := time.Now().Add(10 * time.Minute)
	for _, c := range []struct {
		name  string
		fault func(s *githubtest.Server)
		min   time.Duration
		max   time.Duration
		named bool
	}{
		{"primary 200 RATE_LIMITED", func(s *githubtest.Server) { s.GraphQLRateLimit(1, reset) }, 9 * time.Minute, 10 * time.Minute, true},
		{"primary 200 by its message", func(s *githubtest.Server) {
			s.AnswerNextWith("/graphql", http.StatusOK, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}},
				[]byte(`{"errors":[{"message":"API rate limit exceeded for installation ID 7."}]}`), 1)
		}, 9 * time.Minute, 10 * time.Minute, true},
		{"secondary 200", func(s *githubtest.Server) { s.GraphQLSecondaryLimit(1, http.StatusOK, 0) }, time.Minute, time.Minute, false},
		{"secondary 200 Retry-After", func(s *githubtest.Server) { s.GraphQLSecondaryLimit(1, http.StatusOK, 90*time.Second) }, 90 * time.Second, 90 * time.Second, true},
		{"secondary 403", func(s *githubtest.Server) { s.GraphQLSecondaryLimit(1, http.StatusForbidden, 0) }, time.Minute, time.Minute, false},
		{"secondary 403 Retry-After", func(s *githubtest.Server) { s.GraphQLSecondaryLimit(1, http.StatusForbidden, 75*time.Second) }, 75 * time.Second, 75 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, a := setup(t)
			c.fault(s)
			err := a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1", "queen-2"})["queen-1"].Err
			d, ok := githubapp.WaitFor(err)
			if !ok || d < c.min || d > c.max || githubapp.NamedWait(err) != c.named {
				t.Fatalf("%v: WaitFor = %s %v, named %v; want a wait of %s to %s, named %v",
					err, d, ok, githubapp.NamedWait(err), c.min, c.max, c.named)
			}
		})
	}
}

// A secondary limit without Retry-After names no wait: not the primary
// window's reset 50 minutes out (49m59s once, as go-github reads it), and
// go-github does not refuse the installation's next request locally.
func TestSecondaryLimitWithoutRetryAfterNamesNoWait(t *testing.T) {
	ctx := context.Background()
	reset := strconv.FormatInt(time.Now().Add(50*time.Minute).Unix(), 10)
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			s, a := setup(t)
			s.AnswerNextWith("/repos/", status,
				http.Header{"X-Ratelimit-Remaining": {"4990"}, "X-Ratelimit-Reset": {reset}},
				[]byte(`{"message":"`+githubtest.SecondaryLimitMessage+`","documentation_url":"`+githubtest.SecondaryRateLimitDocs+`"}`), 1)
			_, err := a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1")
			if d, ok := githubapp.WaitFor(err); !ok || d != time.Minute || githubapp.NamedWait(err) {
				t.Fatalf("%v: WaitFor = %s %v, named %v; want the unnamed minute", err, d, ok, githubapp.NamedWait(err))
			}
			before := s.Count(githubtest.RouteListPulls)
			if _, err := a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1"); err != nil {
				t.Fatalf("the next read: %v, want it sent and answered", err)
			}
			if s.Count(githubtest.RouteListPulls) != before+1 {
				t.Fatal("the next read was refused locally, never sent")
			}
		})
	}
	// Retry-After is a wait GitHub named, and go-github's local refusal
	// repeats it, no longer.
	s, a := setup(t)
	if _, err := a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1"); err != nil {
		t.Fatal(err) // the token minted
	}
	s.SecondaryLimit(1, http.StatusForbidden, 40*time.Second)
	_, err := a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1")
	if d, ok := githubapp.WaitFor(err); !ok || d != 40*time.Second || !githubapp.NamedWait(err) {
		t.Fatalf("Retry-After 40: WaitFor = %s %v, named %v", d, ok, githubapp.NamedWait(err))
	}
	_, err = a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1")
	if d, ok := githubapp.WaitFor(err); !ok || d > 40*time.Second || d < 30*time.Second || s.Count(githubtest.RouteListPulls) != 2 {
		t.Fatalf("refused locally within the named wait: WaitFor = %s %v, want under 40s", d, ok)
	}
}
