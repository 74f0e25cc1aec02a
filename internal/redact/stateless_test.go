package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// A stateless installation token as GitHub issues them from 2026-04-27:
// ghs_<APPID>_<JWT>, the JWT's base64url parts holding "-" and "_".
const stateless = "ghs_4242_eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9" +
	".eyJpc3MiOiI0MjQyIiwiaW5zdGFsbGF0aW9uX2lkIjo3LCJqdGkiOiJhLWJfYyJ9" +
	".Qm9n-dXNfc2lnbmF0dXJl_LWZvci1hLXRlc3Q-X19fYWJjZGVmZ2hpamtsbW5vcA"

// leaked reports a 10-byte run of the token past its public "ghs_4242_".
func leaked(got, tok string) string {
	for i := 9; i+10 <= len(tok); i++ {
		if strings.Contains(got, tok[i:i+10]) {
			return tok[i : i+10]
		}
	}
	return ""
}

func TestStatelessTokenNeverSurvives(t *testing.T) {
	for _, prefix := range []string{"ghs_", "ghu_", "gho_", "ghr_", "ghp_", "github_pat_"} {
		tok := strings.Replace(stateless, "ghs_", prefix, 1)
		texts := map[string]string{
			"bare":          "minted " + tok + ".",
			"clone URL":     "git push https://x-access-token:" + tok + "@github.com/hive/t27.git failed",
			"query":         "GET /x?access_token=" + tok + "&a=1",
			"escaped URL":   "GET /x?q=" + url.QueryEscape(`{"token":"`+tok+`"}`),
			"JSON":          `{"token":"` + tok + `","expires_at":"2026-05-01T00:00:00Z"}`,
			"header":        "Authorization: token " + tok,
			"cut by sender": "echo: " + tok[:len(tok)/2],
			"cut in JWT":    "echo: " + tok[:len(prefix)+8],
		}
		for name, text := range texts {
			if got := String(text); leaked(got, tok) != "" {
				t.Errorf("%s %s: String = %q holds %q", prefix, name, got, leaked(got, tok))
			}
			for cut := 1; cut < len(text); cut += 7 {
				if got := Line(text, cut); leaked(got, tok) != "" {
					t.Errorf("%s %s: Line(%d) = %q holds %q", prefix, name, cut, got, leaked(got, tok))
				}
			}
		}
	}
	// The JWT on its own, its prefix cut away by the sender.
	jwt := stateless[len("ghs_4242_"):]
	if got := String("payload " + jwt); strings.Contains(got, jwt[:20]) || strings.Contains(got, jwt[len(jwt)-20:]) {
		t.Errorf("a bare JWT survives: %q", got)
	}
	// The closing "." of a sentence is not the token's.
	if got := String("minted " + stateless + ". next"); got != "minted ghs_"+Mask+". next" {
		t.Errorf("String = %q", got)
	}
}

func TestStatelessTokenNeverReachesTheLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil)))
	log.Error("push failed: "+stateless, "err", errors.New(`{"token":"`+stateless+`"}`),
		"url", "https://x-access-token:"+stateless+"@github.com/a/b.git")
	if l := leaked(buf.String(), stateless); l != "" {
		t.Fatalf("log line holds %q: %s", l, buf.String())
	}
}

func TestOldTokensStillScrubbed(t *testing.T) {
	for _, tok := range []string{"ghs_16C7e42F292c6912E7710c838347Ae178B4a", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"} {
		if got := String("x " + tok + " y"); strings.Contains(got, tok[len(tok)-12:]) {
			t.Errorf("String = %q", got)
		}
	}
	for _, s := range []string{"laughs_total", "sighs-and.more", "eyJ", "queen-app.queen-system.svc"} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q: ordinary text masked", s, got)
		}
	}
}
