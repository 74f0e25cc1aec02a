package ledger

import (
	"math"
	"strings"
	"testing"
)

// Each part of an audit id is at most 20 digits: the largest uint64 is
// read, one past it is not, nor is a part padded past 20 digits, which
// would name the same entry under a second spelling.
func TestParseAuditIDBounds(t *testing.T) {
	largest := "18446744073709551615"
	if got, err := ParseAuditID(largest + "-" + largest); err != nil || got != (AuditID{math.MaxUint64, math.MaxUint64}) {
		t.Errorf("ParseAuditID(largest) = %v, %v; want both parts %d", got, err, uint64(math.MaxUint64))
	}
	for _, s := range []string{
		"18446744073709551616-0",
		"0-18446744073709551616",
		strings.Repeat("0", 20) + "1-0",
		"1-" + strings.Repeat("0", 21),
	} {
		if got, err := ParseAuditID(s); err == nil {
			t.Errorf("ParseAuditID(%q) = %v, want refused", s, got)
		}
	}
}
