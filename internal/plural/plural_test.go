package plural

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 rows", 1: "1 row", 2: "2 rows", 463: "463 rows"} {
		if got := Rows(n); got != want {
			t.Errorf("Rows(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Count(1, "entry", "entries"); got != "1 entry" {
		t.Errorf("Count(1, entry) = %q", got)
	}
}
