package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

const token = "e2e-export-token-0123456789abcdefghij" // 38 characters, like the export's

func TestScrubsWholeAndCutCopies(t *testing.T) {
	for name, text := range map[string]string{
		"whole":         "forbidden: Authorization: Bearer " + token + " was refused",
		"cut after":     "echo: " + token[:32],
		"cut before":    token[10:] + " trailing",
		"twice":         token + " and " + token,
		"inside a word": "x" + token + "y",
	} {
		got := String(text, token)
		for n := MinPart; n <= len(token); n++ {
			if strings.Contains(got, token[:n]) || strings.Contains(got, token[len(token)-n:]) {
				t.Errorf("%s: %q still holds %d characters of the token", name, got, n)
				break
			}
		}
	}
}

func TestScrubsCredentialShapes(t *testing.T) {
	for _, text := range []string{
		"token ghs_16C7e42F292c6912E7710c838347Ae178B4a was echoed",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
		"Authorization: token abcdefgh12345678",
		"Bearer abcdefghijkl9mnopqr",
		"https://x-access-token:s3cr3tvalue1234@github.com/hive/t27.git",
	} {
		got := String(text)
		for _, leak := range []string{"16C7e42F", "0123456789_abc", "abcdefgh1234", "abcdefghijkl", "s3cr3tvalue"} {
			if strings.Contains(got, leak) {
				t.Errorf("String(%q) = %q: still holds %q", text, got, leak)
			}
		}
	}
}

// The bug this package exists for: cut first, scrub after leaves a piece.
func TestLineScrubsBeforeCutting(t *testing.T) {
	body := strings.Repeat("x", 180) + " Authorization-echo: " + token + "\nsecond line"
	got := Line(body, 200, token)
	if strings.Contains(got, token[:MinPart]) || strings.Contains(got, "\n") || len(got) > 200 {
		t.Fatalf("Line = %q", got)
	}
	if got := Line("héllo wörld", 2); got != "h" {
		t.Fatalf("Cut split a character: %q", got)
	}
}

func TestHandlerScrubsEveryStringAttribute(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil), token)).With("ctx", "had "+token)
	log.Info("push failed: "+token[:20], "err", errors.New("body "+token), "n", 3,
		slog.Group("g", "inner", token[5:]))
	if strings.Contains(buf.String(), token[:MinPart]) || strings.Contains(buf.String(), token[len(token)-MinPart:]) {
		t.Fatalf("log line holds the token: %s", buf.String())
	}
	if !strings.Contains(buf.String(), `"n":3`) {
		t.Fatalf("non-string attributes must pass through: %s", buf.String())
	}
}

func TestPlainWordsStay(t *testing.T) {
	for _, s := range []string{"installation token expired", "basic configuration", "Bearer realm"} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q", s, got)
		}
	}
}

// Only whole secrets and long pieces are masked: a secret starting with a
// word leaves that word alone (one starting "webhook-" turned every
// "service":"webhook" into "***"), while a piece of half the secret, or of
// MinPart bytes, is masked.
func TestWordsSharingAShortPieceStay(t *testing.T) {
	line := `{"service":"webhook","msg":"webhook accepted","pod":"queen-app-webhook-7f9c"}`
	for _, sec := range []string{"webhook-7f3a9c21", "webhook-secret-value-0123", "queen-3b9d2c1e5f7a09", "7f9c" + token} {
		want := line
		if sec == "webhook-7f3a9c21" {
			// Half of a 16-byte secret is 8 bytes: the pod's "webhook-7f"
			// is 10 of them.
			want = strings.Replace(line, "webhook-7f", Mask, 1)
		}
		if got := String(line, sec); got != want {
			t.Errorf("String with secret %q = %q, want %q", sec, got, want)
		}
	}
	for sec, piece := range map[string]string{
		"webhook-7f3a9c21":          "webhook-",     // half of 16 bytes
		"webhook-secret-value-0123": "webhook-secr", // MinPart of 25
		token:                       token[len(token)-MinPart:],
	} {
		if got := String("echo: "+piece+".", sec); strings.Contains(got, piece) {
			t.Errorf("String kept %q of %q: %q", piece, sec, got)
		}
	}
}
