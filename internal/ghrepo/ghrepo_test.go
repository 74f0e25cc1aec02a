package ghrepo

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"hive/t27": true, "Queen/T27": true, "a/b": true, "o-1/x.y_z-w": true,
		"": false, "hive": false, "hive/": false, "/t27": false, "-hive/t27": false,
		"hive/t27/x": false, "hive/..": false, "hive/.": false, "hive/a..b": false,
		"hive/t 27": false, "hive/t27\n": false,
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x":  true,  // 39
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x": false, // 40
		"x/" + strings.Repeat("n", 100):              true,
		"x/" + strings.Repeat("n", 101):              false,
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %t, want %t", s, got, want)
		}
		if (Check(s) == nil) != want {
			t.Errorf("Check(%q) disagrees with Valid", s)
		}
	}
}

func TestOneRepositoryWhateverItsCase(t *testing.T) {
	if Key("Queen/T27") != Key("queen/t27") || !Same("Queen/T27", "QUEEN/t27") || Same("queen/t27", "queen/t28") {
		t.Fatal("names differing only in case must be one repository, others not")
	}
	if o, n := Split("Queen/T27"); o != "Queen" || n != "T27" {
		t.Fatalf("Split kept %q %q, want the spelling given", o, n)
	}
}

// reference is Valid as it was, by regexp: Valid must say the same.
var reference = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$`)

func TestValidIsTheReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// Mostly letters and digits, now and then a byte the grammar weighs.
	pick := func() byte {
		const plain, special = "aZ09", "-._/ \xc3\n"
		if r.IntN(8) == 0 {
			return special[r.IntN(len(special))]
		}
		return plain[r.IntN(len(plain))]
	}
	valid := 0
	for range 50000 {
		// Lengths around the bounds: owners up to 41, names up to 102.
		b := make([]byte, 0, 150)
		for range r.IntN(42) {
			b = append(b, pick())
		}
		b = append(b, '/')
		for range r.IntN(103) {
			b = append(b, pick())
		}
		if r.IntN(3) == 0 {
			b = b[:r.IntN(len(b)+1)]
		}
		s := string(b)
		want := reference.MatchString(s) && !strings.Contains(s, "..") && !strings.HasSuffix(s, "/.")
		if Valid(s) != want {
			t.Fatalf("Valid(%q) = %t, the reference %t", s, !want, want)
		}
		if want {
			valid++
		}
	}
	if valid < 1000 {
		t.Fatalf("only %d of 50000 names were valid; the test says little", valid)
	}
}
