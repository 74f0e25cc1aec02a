package ghevents

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkVerifySignature is the baseline: the HMAC of a closed payload only.
func BenchmarkVerifySignature(b *testing.B) {
	body := encode(b, pr(b, "closed.payload.json", "queen-77", true))
	sig := sign(secret, body)
	secrets := [][]byte{secret, previous}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !VerifySignature(secrets, sig, body) {
			b.Fatal("signature refused")
		}
	}
}

// BenchmarkHandlerIgnored: verify and parse a closed payload whose branch is
// not queen-<N>; no Redis call.
func BenchmarkHandlerIgnored(b *testing.B) {
	f := newFixture(b, false)
	body := encode(b, pr(b, "closed.payload.json", "feature", true))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if rec := f.post("pull_request", "bench", body, nil); rec.Code != http.StatusAccepted {
			b.Fatalf("code %d", rec.Code)
		}
	}
}

// BenchmarkHandlerAccepted: the whole path of a closed queen-<N> delivery,
// registry lookup and enqueue on a real Redis, a new delivery id each time.
func BenchmarkHandlerAccepted(b *testing.B) {
	f := newFixture(b, false)
	body := encode(b, pr(b, "closed.payload.json", "queen-77", true))
	b.SetBytes(int64(len(body)))
	i := 0
	for b.Loop() {
		i++
		if rec := f.post("pull_request", "bench-"+strconv.Itoa(i), body, nil); rec.Code != http.StatusAccepted {
			b.Fatalf("code %d", rec.Code)
		}
	}
}

// BenchmarkScan: the receiver's pass over a closed payload, against
// json.Valid and json.Unmarshal into the same struct.
func BenchmarkScan(b *testing.B) {
	body := encode(b, pr(b, "closed.payload.json", "queen-77", true))
	b.SetBytes(int64(len(body)))
	b.Run("decodePullRequest", func(b *testing.B) {
		for b.Loop() {
			var ev pullRequestEvent
			if decodePullRequest(body, &ev) != nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var ev pullRequestEvent
			if json.Unmarshal(body, &ev) != nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			if !validJSON(body) {
				b.Fatal("refused")
			}
		}
	})
}
