package rules_test

import (
	"testing"

	"github.com/queen-app/queen-app/internal/rules"
)

var sink uint64

// benchInputs is every 4321st grid row: a spread of words and clocks.
func benchInputs() []rules.ClaimInput {
	var ins []rules.ClaimInput
	i := 0
	forEachGridRow(func(_ string, in rules.ClaimInput) {
		if i%4321 == 0 {
			ins = append(ins, in)
		}
		i++
	})
	return ins
}

// BenchmarkClaimOf is one claim_of call on a row of the grid.
func BenchmarkClaimOf(b *testing.B) {
	ins := benchInputs()
	b.ResetTimer()
	var s uint64
	for i := 0; i < b.N; i++ {
		s += uint64(rules.ClaimOf(ins[i%len(ins)]))
	}
	sink += s
}

// BenchmarkClaimOfBaseline is the same loop over the same inputs without
// claim_of: the cost of the loop and the input copy.
func BenchmarkClaimOfBaseline(b *testing.B) {
	ins := benchInputs()
	b.ResetTimer()
	var s uint64
	for i := 0; i < b.N; i++ {
		s += uint64(ins[i%len(ins)].Verdict)
	}
	sink += s
}

// BenchmarkVerdictOf reads one word through the ten-word table.
func BenchmarkVerdictOf(b *testing.B) {
	var s uint64
	for i := 0; i < b.N; i++ {
		s += uint64(rules.VerdictOf(gridWords[i%len(gridWords)]))
	}
	sink += s
}

// BenchmarkGrid is claim_of on the whole grid (one op = 4,423,680 rows).
func BenchmarkGrid(b *testing.B) {
	var s uint64
	for i := 0; i < b.N; i++ {
		forEachGridRow(func(_ string, in rules.ClaimInput) { s += uint64(rules.ClaimOf(in)) })
	}
	sink += s
}

// BenchmarkGridBaseline walks the same grid without claim_of.
func BenchmarkGridBaseline(b *testing.B) {
	var s uint64
	for i := 0; i < b.N; i++ {
		forEachGridRow(func(_ string, in rules.ClaimInput) { s += uint64(in.Verdict) })
	}
	sink += s
}

// BenchmarkGridCheck is what TestClaimGrid does per op: claim_of and the
// reference lookup on every row.
func BenchmarkGridCheck(b *testing.B) {
	ref := mustRefTable(b)
	b.ResetTimer()
	var s uint64
	for i := 0; i < b.N; i++ {
		forEachGridRow(func(word string, in rules.ClaimInput) {
			if rules.ClaimOf(in).String() == ref.claim(refInput(word, in)) {
				s++
			}
		})
	}
	sink += s
}
