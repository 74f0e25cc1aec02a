package export

import (
	"context"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/dispatch"
)

// GitHub refuses the PR for good after the branch was pushed: the outcome
// is the refusal pr-refused with GitHub's words, no error to retry, and
// it still says the branch was pushed.
func TestAPRGitHubRefusesIsARefusal(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 60, map[string]string{"a.txt": "a\n"})
	said := "GitHub answered 422 Validation Failed: No commits between master and queen-60"
	e.gh.onCreate = func(*fakeGitHub) error { return &Refusal{KindPRRefused, said} }
	out, err := e.pub.Push(context.Background(), e.job(60, head))
	if err != nil {
		t.Fatalf("error %v: a refusal is an outcome, not an error", err)
	}
	if out.State != StateRefused || out.Refusal == nil || out.Refusal.Kind != KindPRRefused || out.Refusal.Reason != said {
		t.Fatalf("outcome %+v refusal %+v, want refused pr-refused with GitHub's words", out, out.Refusal)
	}
	if out.Push != StatePushed || out.PushedHead != head || e.remote.Ref(t, "queen-60") != head {
		t.Fatalf("outcome %+v: the push that happened is not reported", out)
	}
	var rec dispatch.ExportState
	out.Record(&rec)
	if rec.State != "refused" || rec.PushedHead != head || rec.Refusal != "pr-refused: "+said || rec.PRNumber != 0 {
		t.Fatalf("recorded %+v", rec)
	}
	if !strings.Contains(e.logs.String(), "pr-refused") {
		t.Fatalf("refusal not logged: %s", e.logs.String())
	}
}
