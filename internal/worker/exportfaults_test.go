package worker

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/redact"
)

// The remote refuses the tag that would keep the old tip: the branch keeps
// its old tip (the only copy of that work), no PR is opened, and the row
// records a failure naming the tag, not an outage to wait out.
func TestExportRefusedTagKeepsTheRemoteTipAndRecordsAFailure(t *testing.T) {
	e := newEnv(t, options{export: true})
	old := e.olderAttempt(17)
	head := e.accepted(17, map[string]string{"src/a.rs": "fn a() {}\n"})
	e.remote.RefuseRefs(t, "refs/tags/queen-superseded/")
	err := e.w.ExportPush(e.ctx, pushTask(t, 17, head))
	if err == nil || isWait(err) {
		t.Fatalf("refused tag: %v, want a failure", err)
	}
	if got := e.remote.Ref(t, "queen-17"); got != old {
		t.Fatalf("queen-17 at %s, want its old tip %s kept", got, old)
	}
	if tags := e.remote.Tags(t); len(tags) != 0 || len(e.gh.PRs(repo)) != 0 {
		t.Fatalf("tags %v, %d PRs: nothing may be published", tags, len(e.gh.PRs(repo)))
	}
	st := e.get(17).Export
	if st == nil || st.State != StateFailed || st.PushedHead != "" || !strings.Contains(st.LastError, "refs/tags/queen-superseded/17/"+old[:12]) {
		t.Fatalf("export state %+v, want failed naming the tag", st)
	}
}

// An outcome is not recorded on a row accepted at another head while the
// push was under way: that head was never published.
func TestExportOutcomeNotRecordedOnARowAcceptedAtAnotherHead(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(18, map[string]string{"src/a.rs": "fn a() {}\n"})
	other := strings.Repeat("e", 40)
	b, _ := json.Marshal(other)
	e.pushUpsertingAtPRCreation(t, 18, head, map[string]json.RawMessage{"judged_head": b})
	if rec := e.get(18); rec.Export != nil || *rec.JudgedHead != other {
		t.Fatalf("export state %+v recorded on the row accepted at %s", rec.Export, *rec.JudgedHead)
	}
}

// git prints what the remote answered, here quoting the installation token
// it was sent: no piece of the token, or of the header carrying it, reaches
// the task's error, the worker's log or the row's last_error.
func TestExportGitEchoNeverLeaksTheToken(t *testing.T) {
	e := newEnv(t, options{export: true})
	head := e.accepted(19, map[string]string{"src/a.rs": "fn a() {}\n"})
	var errs []string
	for _, pad := range []int{0, 97, 180, 333} {
		e.remote.EchoCredential(pad)
		err := e.w.ExportPush(e.ctx, pushTask(t, 19, head))
		if !isWait(err) {
			t.Fatalf("echoing remote (pad %d): %v, want a wait", pad, err)
		}
		errs = append(errs, err.Error())
	}
	st := e.get(19).Export
	if st == nil || st.State != StateRetrying || !strings.Contains(st.LastError, "403") {
		t.Fatalf("export state %+v, want retrying with git's reason", st)
	}
	tokens := e.gh.Tokens()
	if len(tokens) == 0 {
		t.Fatal("no installation token was issued")
	}
	text := strings.Join(errs, "\n") + "\n" + st.LastError + "\n" + e.logs.String()
	if !strings.Contains(e.logs.String(), "export push failed") {
		t.Fatal("the failure was not logged")
	}
	for _, tok := range tokens {
		basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tok))
		for _, sec := range []string{tok, basic} {
			for n := len(sec); n >= redact.MinPart; n-- {
				if strings.Contains(text, sec[:n]) || strings.Contains(text, sec[len(sec)-n:]) {
					t.Fatalf("%d characters of a credential reached the error, the row or the log", n)
				}
			}
		}
	}
	e.remote.EchoCredential(-1)
	if err := e.w.ExportPush(e.ctx, pushTask(t, 19, head)); err != nil {
		t.Fatal(err)
	}
}
