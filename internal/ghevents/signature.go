package ghevents

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SignatureHeader carries the HMAC-SHA256 of the body. The SHA-1
// X-Hub-Signature is never consulted.
const SignatureHeader = "X-Hub-Signature-256"

// VerifySignature reports whether header ("sha256=<hex>") is the HMAC-SHA256
// of body under one of secrets. Empty secrets never match.
func VerifySignature(secrets [][]byte, header string, body []byte) bool {
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(hexSum) != 2*sha256.Size {
		return false
	}
	want, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	match := false
	for _, secret := range secrets {
		if len(secret) == 0 {
			continue
		}
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		// Every secret is tried so the time taken does not say which matched.
		if hmac.Equal(m.Sum(nil), want) {
			match = true
		}
	}
	return match
}

// Sign returns the X-Hub-Signature-256 value GitHub sends for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
