package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// GitHub's stateless installation tokens (ghs_<APPID>_<JWT>) go through
// the built binaries' logs masked whole: while GitHub's git quotes the
// credential back (git prints it on stderr) and once it publishes, neither
// the webhook's nor the worker's output holds any token, its Basic form,
// or any of its JWT's three parts.
func TestStatelessTokenNeverInTheLogs(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	hook := x.webhook()
	x.remote.EchoCredential(0)
	head := x.branch(91, map[string]string{"src/s91.rs": "fn a() {}\n"})
	x.accept(91, head, nil)
	work := x.startWorker()
	eventually(t, exLimit, "#91 to record git's failure on the echo", func() bool {
		x.runRetries()
		st := x.exports()[91]
		return st != nil && st.State == "retrying" && strings.Contains(st.LastError, "git fetch")
	})
	x.remote.EchoCredential(-1)
	eventually(t, exLimit, "#91 to publish once the echo stops", func() bool {
		x.runRetries()
		st := x.exports()[91]
		return st != nil && st.State == "pr_opened"
	})
	hook.stop()
	work.stop()

	stateless := regexp.MustCompile(`^ghs_[0-9]+_(eyJ[A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$`)
	tokens := x.gh.Tokens()
	if len(tokens) == 0 {
		t.Fatal("no installation token was minted: the test shows nothing")
	}
	secrets := x.secrets()
	for _, tok := range tokens {
		m := stateless.FindStringSubmatch(tok)
		if m == nil {
			t.Fatalf("token %.12s... is not ghs_<APPID>_<JWT>: the test shows nothing of the stateless form", tok)
		}
		secrets = append(secrets, m[1:]...) // the JWT's header, payload and signature
	}
	if !strings.Contains(work.out.String(), "may not read this repository") {
		t.Fatal("the worker never logged the remote's echo: the test shows nothing")
	}
	for _, p := range []*proc{hook, work} {
		out := p.out.String()
		for i, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s's output holds secret %d of %d (%d characters)", p.name, i+1, len(secrets), len(s))
			}
		}
		if l := exLeak(out, x.secrets()...); l != "" {
			t.Errorf("%s's output holds %q of a token", p.name, l)
		}
	}
}
