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

// GitHub's resource limits end a costly query with partial data and an
// error with no path: the batch is read again in halves, down to single
// branches, and every branch of 100 ends read.
func TestResourceLimitSplitsTheBatch(t *testing.T) {
	ctx := context.Background()
	s, a := setup(t)
	var branches []string
	for i := 1; i <= 100; i++ {
		b := "queen-" + strconv.Itoa(i)
		branches = append(branches, b)
		state := "open"
		if i%3 == 0 {
			state = "closed"
		}
		s.AddPR(repo, githubtest.PR{HeadRef: b, HeadRepo: repo, State: state})
	}
	s.ResourceLimit(7)
	res := a.BatchPRStates(ctx, inst, "hive", "t27", branches)
	for i, b := range branches {
		r := res[b]
		open, closed := uint32(1), uint32(0)
		if (i+1)%3 == 0 {
			open, closed = 0, 1
		}
		if r.Err != nil || !r.State.Read || r.State.Open != open || r.State.ClosedUnmerged != closed {
			t.Fatalf("%s: %+v, want read with open %d closed %d", b, r, open, closed)
		}
	}
	if q := s.Count(githubtest.RouteGraphQL); q < 16 || q > 31 {
		t.Fatalf("%d queries, want the batch halved down to at most 7 branches (16 to 31)", q)
	}
	// One branch is as small as a query gets: then the error counts.
	s.ResourceLimit(0)
	s.AnswerNext("/graphql", 200, []byte(`{"data":null,"errors":[{"type":"RESOURCE_LIMITS_EXCEEDED","message":"`+githubtest.ResourceLimitMessage+`"}]}`), 1)
	if err := a.BatchPRStates(ctx, inst, "hive", "t27", []string{"queen-1"})["queen-1"].Err; err == nil || githubapp.Classify(err) != githubapp.Retry {
		t.Fatalf("a single branch over the limit: %v, want an error to retry", err)
	}
}

// x-ratelimit-remaining 0 is a primary limit whatever the body: a GraphQL
// answer in any shape waits until the reset, and the installation's next
// GraphQL read is not sent before it.
func TestNoneRemainingHoldsGraphQLWhateverTheBody(t *testing.T) {
	ctx := context.Background()
	for _, body := range []string{
		`{"errors":[{"message":"API rate limit exceeded for installation ID 1."}]}`,
		`{"errors":[{"message":"Something went wrong while executing your query."}]}`,
		`{"message":"API rate limit exceeded for installation ID 1."}`,
		`{"data":null}`,
	} {
		t.Run(body, func(t *testing.T) {
			s, a := setup(t)
			reset := time.Now().Add(10 * time.Minute)
			s.AnswerNextWith("/graphql", http.StatusOK, http.Header{"X-Ratelimit-Remaining": {"0"},
				"X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}, "X-Ratelimit-Resource": {"graphql"}}, []byte(body), 1)
			b := []string{"queen-1", "queen-2"}
			for try := range 2 {
				err := a.BatchPRStates(ctx, inst, "hive", "t27", b)["queen-2"].Err
				d, ok := githubapp.WaitFor(err)
				if !ok || !githubapp.NamedWait(err) || d < 9*time.Minute || d > 10*time.Minute {
					t.Fatalf("try %d: %v: WaitFor = %s %v, named %v; want the 10 minutes until the reset", try, err, d, ok, githubapp.NamedWait(err))
				}
			}
			if q := s.Count(githubtest.RouteGraphQL); q != 1 {
				t.Errorf("%d GraphQL requests, want 1: the second waits for the reset unsent", q)
			}
			if _, err := a.ListBranchPRs(ctx, inst, "hive", "t27", "queen-1"); err != nil {
				t.Errorf("REST (core) is not held by GraphQL's limit: %v", err)
			}
		})
	}
}
