// Package redact keeps secrets out of the text that reaches logs, errors,
// rows and the API. Scrubbing always comes before cutting: an export error
// body cut at byte 200 before it was scrubbed once put 32 of a token's 38
// characters into worker.log and export.last_error.
package redact

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Mask replaces whatever was scrubbed.
const Mask = "***"

// A text cut by its sender can hold only the start or the end of a secret:
// such a piece is masked when it is at least half the secret, and always
// from MinPart bytes on, never under minPartFloor. So at most 11 bytes of
// a long token survive a cut (29 of a 40-byte token stay unknown), a
// 16-byte secret, the shortest config takes, loses at most 7; and a secret
// that starts with a word masks no ordinary text: "webhook-..." masked
// every "webhook" (its first 6 bytes) when any 6-byte piece was masked.
const (
	MinPart      = 12
	minPartFloor = 8
)

// partLen is the shortest piece of a secret n bytes long that is masked.
func partLen(n int) int { return max(minPartFloor, min(MinPart, n/2)) }

// tokenBody is a token's characters after its prefix: base64url runs
// joined by single dots, so a sentence's closing "." stays.
const tokenBody = `[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*`

// Shapes of credentials whatever their value: GitHub's token formats, the
// Authorization header's value, and a token inside a URL. may is true of
// every text the shape can match (each holds a literal of its pattern), so
// the pattern runs only where it can: a webhook's log line scrubbed with
// three secrets took 20 µs, against 1 µs unscrubbed, and its delivery id,
// event, repository and task id hold none of them.
var shapes = []struct {
	re   *regexp.Regexp
	with string
	may  func(string) bool
}{
	// A token runs through "_", "-" and inner "."s: the stateless
	// installation token ghs_<APPID>_<JWT> carries a base64url JWT whose
	// header, payload and signature a pattern stopping at "." or "-" left
	// readable. A "%XX" before it is a URL-encoded quote or separator.
	{regexp.MustCompile(`(\b|%[0-9A-Fa-f]{2})(gh[pousr])_` + tokenBody), "${1}${2}_" + Mask,
		func(s string) bool { return strings.Contains(s, "gh") }},
	{regexp.MustCompile(`(\b|%[0-9A-Fa-f]{2})github_pat_` + tokenBody), "${1}github_pat_" + Mask,
		func(s string) bool { return strings.Contains(s, "github_pat_") }},
	// A JWT on its own (the App's, or a stateless token's cut off its
	// prefix): base64url of a JSON header always starts "eyJ".
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]*)?`), Mask,
		func(s string) bool { return strings.Contains(s, "eyJ") }},
	{regexp.MustCompile(`(?i)\b(authorization:\s*[a-z-]+\s+)[^\s"',;]+`), "${1}" + Mask,
		func(s string) bool { return containsFoldASCII(s, "authorization:") }},
	// A value with a digit in it: "token expired" stays readable.
	{regexp.MustCompile(`\b(Bearer|bearer|Basic|token)\s+[A-Za-z._~+/=-]*[0-9][A-Za-z0-9._~+/=-]{5,}`), "${1} " + Mask,
		func(s string) bool {
			return strings.Contains(s, "earer") || strings.Contains(s, "Basic") || strings.Contains(s, "token")
		}},
	{regexp.MustCompile(`(://[^/\s:@]*:)[^@\s/]+@`), "${1}" + Mask + "@",
		func(s string) bool { return strings.Contains(s, "://") }},
}

// containsFoldASCII reports whether s holds lower (ASCII lower case) in any
// case. Under (?i) each letter of "authorization" matches only its two
// ASCII cases (TestFoldIsASCII), so this is what the pattern can match.
func containsFoldASCII(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for ; j < len(lower); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// String removes from s every secret given, every long piece of one that
// starts or ends it (partLen), and every credential-shaped value.
func String(s string, secrets ...string) string {
	for _, sec := range secrets {
		s = scrubOne(s, sec)
	}
	for _, sh := range shapes {
		if sh.may(s) {
			s = sh.re.ReplaceAllString(s, sh.with)
		}
	}
	return s
}

func scrubOne(s, sec string) string {
	if sec == "" {
		return s
	}
	// Every piece masked that starts sec starts with its first part bytes,
	// and every one that ends it ends with its last.
	part := partLen(len(sec))
	if len(sec) > part && !strings.Contains(s, sec[:part]) && !strings.Contains(s, sec[len(sec)-part:]) {
		return s
	}
	s = strings.ReplaceAll(s, sec, Mask)
	if len(sec) <= part {
		return s
	}
	// What remains can only be a cut copy: its start (cut after) or its
	// end (cut before). Longest first, so a piece is masked whole.
	for n := len(sec) - 1; n >= part; n-- {
		if strings.Contains(s, sec[:n]) {
			s = strings.ReplaceAll(s, sec[:n], Mask)
		}
		if strings.Contains(s, sec[len(sec)-n:]) {
			s = strings.ReplaceAll(s, sec[len(sec)-n:], Mask)
		}
	}
	return s
}

// Line is String, then on one line, then cut to at most max bytes on a
// character boundary (max <= 0: not cut).
func Line(s string, max int, secrets ...string) string {
	s = strings.Join(strings.Fields(String(s, secrets...)), " ")
	return Cut(s, max)
}

// Cut shortens s to at most max bytes without splitting a character.
func Cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// Handler wraps a slog.Handler so no record it writes carries a secret:
// the message and every string attribute are scrubbed with String.
func Handler(next slog.Handler, secrets ...string) slog.Handler {
	var keep []string
	for _, s := range secrets {
		if s != "" {
			keep = append(keep, s)
		}
	}
	return &handler{next: next, secrets: keep}
}

type handler struct {
	next    slog.Handler
	secrets []string
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message, h.secrets...), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(clean), secrets: h.secrets}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), secrets: h.secrets}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, String(v.String(), h.secrets...))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = h.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, String(err.Error(), h.secrets...))
		}
		if s, ok := v.Any().(interface{ String() string }); ok {
			return slog.String(a.Key, String(s.String(), h.secrets...))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
