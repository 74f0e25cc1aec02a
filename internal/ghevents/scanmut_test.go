package ghevents

import (
	"math/rand/v2"
	"testing"
)

// Mutations of the seeds (bytes changed, dropped, added from the grammar's
// alphabet) get encoding/json's verdicts and fields.
func TestScannerMatchesEncodingJSONOnMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seeds := scannerSeeds(t)
	alpha := []byte(`{}[]":,\u0123456789abcdefnrtl-+.eE ` + "\x00\x1f\x7f\xff")
	for n := 0; n < 50000; n++ {
		b := append([]byte(nil), seeds[r.IntN(len(seeds))]...)
		if len(b) > 2000 && r.IntN(4) != 0 {
			b = b[:r.IntN(2000)]
		}
		for k := r.IntN(4); k >= 0 && len(b) > 0; k-- {
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = alpha[r.IntN(len(alpha))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			case 2:
				b = append(b[:i], append([]byte{alpha[r.IntN(len(alpha))]}, b[i:]...)...)
			}
		}
		checkScanner(t, b)
	}
}
