package redact

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// referenceString is String as it was before its shortcuts (each shape's
// may, scrubOne's early return): every pattern on every text, every piece
// of every secret looked for. String must give what it gives.
func referenceString(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		s = strings.ReplaceAll(s, sec, Mask)
		part := partLen(len(sec))
		for n := len(sec) - 1; n >= part; n-- {
			if strings.Contains(s, sec[:n]) {
				s = strings.ReplaceAll(s, sec[:n], Mask)
			}
			if strings.Contains(s, sec[len(sec)-n:]) {
				s = strings.ReplaceAll(s, sec[len(sec)-n:], Mask)
			}
		}
	}
	for _, re := range referenceShapes {
		s = re.re.ReplaceAllString(s, re.with)
	}
	return s
}

var referenceShapes = func() []struct {
	re   *regexp.Regexp
	with string
} {
	out := make([]struct {
		re   *regexp.Regexp
		with string
	}, len(shapes))
	for i, sh := range shapes {
		out[i].re, out[i].with = sh.re, sh.with
	}
	return out
}()

// stringCorpus holds texts near every shortcut's edge: pieces of a secret
// one byte under, at and over its shortest masked piece at either end, each shape's literal
// with and without a match, other cases, and log values with none of them.
func stringCorpus() (texts []string, secretSets [][]string) {
	sec := "current-webhook-secret-5f1c"
	api := "0123456789abcdef0123456789abcdef"
	texts = []string{
		"", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "pull_request", "Codertocat/Hello-World",
		"reevaluate:Codertocat/Hello-World:77:72d3162e", "branch is not queen-<issue>", "webhook accepted",
		sec, "x" + sec + "y", sec[:MinPart-1], sec[:MinPart], sec[:MinPart+1], sec[len(sec)-MinPart+1:],
		sec[len(sec)-MinPart:], sec[len(sec)-MinPart-1:], "a " + sec[3:] + " b", sec[:10] + sec[len(sec)-10:],
		api[:MinPart] + "..." + api[len(api)-MinPart:], api + api,
		"token ghs_16C7e42F292c6912E7710c838347Ae178B4a", "gh", "ghs_", "ghp_x", "github_pat_", "github_pat_11AB_cd", "github_pat_AB_cd",
		"Authorization: token abcdefgh12345678", "AUTHORIZATION: Bearer abcdefgh12345678", "aUtHoRiZaTiOn:  basic QWxhZGRpbjpvcGVu",
		"authorization", "authorization:", "Authorization:token", "Bearer abcdefghijkl9mnopqr", "bearer abcdefghijkl9mnopqr", "bearer x", "Basic 1", "Basic QWxhZGRpbjpvcGVu9abcdef",
		"token expired", "installation token 12345678", "Bearer realm", "https://x-access-token:s3cr3tvalue1234@github.com/a.git",
		"://", "http://host:80/", "http://user:s3cret123@host/", "redis://:pw@localhost:6379/0", "héllo ● wörld ghp_ü", "Authorization: Bearer " + sec,
		stateless, stateless + ". x", "%22" + stateless + "%22", "x%22ghs_a", "ghs_4242_eyJ", "ghs_a..b", "ghs_a-.", "eyJabcdefg.h", "eyJabcdef.", "xeyJabcdefg.h",
	}
	word := "webhook-7f3a9c21" // 16 bytes: pieces from 8 bytes on
	texts = append(texts, `"service":"webhook"`, "webhook-", "webhook-7", "queen-app-webhook-7f3a", word[9:], word[8:], word[7:])
	secretSets = [][]string{nil, {sec}, {sec, api}, {"short"}, {"abcdef"}, {"abcdefg"}, {"", sec}, {"***", "a*b*c*d*e"},
		{word}, {word + "x"}, {strings.Repeat("w", 23)}, {strings.Repeat("w", 24)}}
	return texts, secretSets
}

func TestStringMatchesReference(t *testing.T) {
	texts, sets := stringCorpus()
	for _, secrets := range sets {
		for _, s := range texts {
			if got, want := String(s, secrets...), referenceString(s, secrets...); got != want {
				t.Errorf("String(%q, %q) = %q, the reference %q", s, secrets, got, want)
			}
		}
	}
}

func FuzzString(f *testing.F) {
	texts, sets := stringCorpus()
	for i, s := range texts {
		sec := ""
		if set := sets[i%len(sets)]; len(set) > 0 {
			sec = set[len(set)-1]
		}
		f.Add(s, sec)
	}
	f.Fuzz(func(t *testing.T, s, sec string) {
		if got, want := String(s, sec), referenceString(s, sec); got != want {
			t.Fatalf("String(%q, %q) = %q, the reference %q", s, sec, got, want)
		}
	})
}

// The shortcut of the Authorization shape holds only while (?i) folds each
// letter of its literal to its two ASCII cases alone.
func TestFoldIsASCII(t *testing.T) {
	for _, r := range "authorization" {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f != unicode.ToUpper(r) {
				t.Errorf("%q folds to %q too: containsFoldASCII misses what (?i) matches", r, f)
			}
		}
	}
}
