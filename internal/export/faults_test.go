package export

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
)

// Only accept publishes: every other verdict word, known or not, is refused
// at the accepted-head gate before any git work.
func TestOnlyAcceptPassesTheGate(t *testing.T) {
	judged := strings.Repeat("a", 40)
	for _, v := range []string{"wait", "escalate", "failed", "cancelled", "empty", "obsolete", "stale-contract", "sendBack", "Accept", "accepted"} {
		r := Check(Facts{IssueOpen: true, Verdict: v, JudgedHead: judged})
		if r == nil || r.Kind != KindNotAccepted || r.Reason != "the Queen's verdict is "+v {
			t.Errorf("verdict %q: %+v, want not-accepted", v, r)
		}
	}
}

// laggingGitHub answers BranchHead from a stale read: GitHub's API lags the
// git remote.
type laggingGitHub struct {
	*fakeGitHub
	head string
}

func (g laggingGitHub) BranchHead(context.Context, string, string) (string, error) {
	return g.head, nil
}

// GitHub says the branch is at the judged head, but the branch the clone
// fetches is elsewhere (it moved, or the API lags): an outage to read
// again, never a refusal decided on a head nobody judged, never a PR.
func TestABranchThatMovedWhileReadIsReadAgain(t *testing.T) {
	e := newEnv(t)
	old, accepted := olderAttempt(t, e, 63)
	e.pub.GitHub = laggingGitHub{e.gh, accepted}
	out, err := e.pub.Push(context.Background(), e.job(63, accepted))
	mustRetryable(t, err)
	if !strings.Contains(err.Error(), "moved") || out.State != "" || out.Refusal != nil {
		t.Fatalf("outcome %+v, error %v: want a retryable read naming the move", out, err)
	}
	if e.remote.Ref(t, "queen-63") != old || len(e.gh.createdPRs()) != 0 {
		t.Fatal("the remote branch changed or a PR was opened")
	}
}

// A remote that declines the branch push itself (a protected branch, a
// hook) is a failure to record, not an outage to wait out, and never a
// reason to supersede: the branch is not there and no PR is opened.
func TestADeclinedBranchPushIsAFailure(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 64, map[string]string{"a.txt": "a\n"})
	e.remote.RefuseRefs(t, "refs/heads/queen-")
	out, err := e.pub.Push(context.Background(), e.job(64, head))
	if err == nil || IsRetryable(err) || !strings.Contains(err.Error(), "declined") {
		t.Fatalf("error %v: want a failure naming the declined push", err)
	}
	if out.State != "" || e.remote.Ref(t, "queen-64") != "" || len(e.remote.Tags(t)) != 0 || len(e.gh.createdPRs()) != 0 {
		t.Fatalf("outcome %+v: the declined push published something", out)
	}
}

// A remote may answer with the Authorization header's value alone, or a
// piece of it: the scrub removes the base64 (whole or cut) as it does the
// token.
func TestScrubRemovesTheHeadersBase64(t *testing.T) {
	const tok = "tok1x9mZ"
	r := &repo{token: tok, header: "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok))}
	b64 := strings.TrimPrefix(r.header, "Basic ")
	for _, s := range []string{
		"remote: credential " + b64 + " refused",
		"remote: credential " + b64[:len(b64)-3] + "… refused",
		"remote: …" + b64[4:] + " refused",
	} {
		if got := r.scrub(s); leak(got, b64, tok) != "" {
			t.Errorf("scrub(%q) = %q: holds %q of the credential", s, got, leak(got, b64, tok))
		}
	}
}

// Commits ahead but no file changed against the base (a revert of the
// revert, say): nothing to publish.
func TestCommitsWithNoDiffAreRefused(t *testing.T) {
	judged := strings.Repeat("a", 40)
	r := Check(Facts{IssueOpen: true, Verdict: "accept", JudgedHead: judged, Head: judged, Diff: &Diff{Commits: 2}})
	if r == nil || r.Kind != KindNoCommits || r.Reason != "no diff against the base" {
		t.Fatalf("%+v, want no-commits: no diff", r)
	}
}
