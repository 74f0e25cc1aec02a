package charclass

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
)

// specs are the classes the callers use, with their bounds.
var specs = []struct {
	spec     string
	min, max int
}{
	{"a-z_", 1, 64},
	{"A-Za-z0-9._-", 1, 128},
	{"A-Za-z0-9-", 0, 38},
	{"0-9", 1, 10},
	{"0-9a-f", 40, 40},
	{"-a", 1, 3},
}

// alphabet holds every byte class boundary of specs and a few beyond.
const alphabet = "az_AZ09.-/@`{[^\x00\x7f\xff\xc3\xa9 \n09afgAF"

// TestMatchIsRegexp holds Match to the regexp it stands for, on random
// strings around each class's boundaries and bounds.
func TestMatchIsRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sp := range specs {
		c := New(sp.spec)
		re := regexp.MustCompile(fmt.Sprintf(`^[%s]{%d,%d}$`, sp.spec, sp.min, sp.max))
		if sp.min == 0 {
			re = regexp.MustCompile(fmt.Sprintf(`^[%s]{0,%d}$`, sp.spec, sp.max))
		}
		var members []byte
		for b := range 256 {
			if c.Has(byte(b)) {
				members = append(members, byte(b))
			}
		}
		matched := 0
		for range 20000 {
			// A string of the class within the bounds, then maybe one
			// byte changed, added or removed.
			b := make([]byte, sp.min+r.IntN(sp.max-sp.min+1))
			for i := range b {
				b[i] = members[r.IntN(len(members))]
			}
			switch r.IntN(4) {
			case 1:
				if len(b) > 0 {
					b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
				}
			case 2:
				b = append(b, alphabet[r.IntN(len(alphabet))])
			case 3:
				if len(b) > 0 {
					b = b[1:]
				}
			}
			s := string(b)
			want := re.MatchString(s)
			if got := c.Match(s, sp.min, sp.max); got != want {
				t.Fatalf("[%s]{%d,%d} on %q: Match %v, regexp %v", sp.spec, sp.min, sp.max, s, got, want)
			}
			if want {
				matched++
			}
		}
		if matched == 0 || matched == 20000 {
			t.Fatalf("[%s]: %d of 20000 strings matched; the test says nothing", sp.spec, matched)
		}
	}
}

func TestNew(t *testing.T) {
	c := New("A-Za-z0-9._-")
	for _, b := range []byte("AZaz09._-") {
		if !c.Has(b) {
			t.Errorf("%q not in the class", b)
		}
	}
	for _, b := range []byte("@[`{/ \x00\x80") {
		if c.Has(b) {
			t.Errorf("%q in the class", b)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New(\"z-a\") did not panic")
		}
	}()
	New("z-a")
}
