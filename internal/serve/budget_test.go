package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func from(remote string) *http.Request {
	r := httptest.NewRequest("POST", "/webhook", nil)
	r.RemoteAddr = remote
	return r
}

// One client address takes at most its places, and every address together
// at most the listener's; a place freed is taken again.
func TestBudgetPlacesInAllAndPerClient(t *testing.T) {
	b := NewBudget(Limits{Places: 4, ClientPlaces: 2, Bytes: 100, ClientBytes: 60})
	admit := func(remote string, want bool) *Lease {
		t.Helper()
		l, ok := b.Admit(from(remote))
		if ok != want {
			t.Fatalf("Admit from %s = %v, want %v", remote, ok, want)
		}
		return l
	}
	a1 := admit("192.0.2.1:1000", true)
	admit("192.0.2.1:1001", true)
	admit("192.0.2.1:1002", false) // its two places are taken
	admit("192.0.2.2:1000", true)  // another address still has room
	admit("192.0.2.2:1001", true)
	admit("192.0.2.3:1000", false) // four in all
	a1.Release()
	a1.Release() // a second release frees nothing more
	if places, _ := b.InUse(); places != 3 {
		t.Fatalf("%d places after one release, want 3", places)
	}
	admit("192.0.2.3:1000", true)
	admit("192.0.2.1:1003", false) // all four taken again
}

// Body bytes are charged per client and in all; a refused growth charges
// nothing, and a release gives everything back.
func TestBudgetBytesInAllAndPerClient(t *testing.T) {
	b := NewBudget(Limits{Places: 10, ClientPlaces: 5, Bytes: 100, ClientBytes: 60})
	a, _ := b.Admit(from("192.0.2.1:1"))
	a2, _ := b.Admit(from("192.0.2.1:2"))
	c, _ := b.Admit(from("192.0.2.2:1"))
	for _, step := range []struct {
		l    *Lease
		n    int64
		want bool
	}{
		{a, 40, true}, {a2, 20, true}, {a2, 1, false}, // the client's 60
		{c, 40, true}, {c, 1, false}, // 100 in all
	} {
		if got := step.l.Grow(step.n); got != step.want {
			t.Fatalf("Grow(%d) = %v, want %v", step.n, got, step.want)
		}
	}
	if _, bytes := b.InUse(); bytes != 100 {
		t.Fatalf("%d bytes in use, want 100", bytes)
	}
	a.Release()
	d, _ := b.Admit(from("192.0.2.3:1"))
	if !d.Grow(40) || d.Grow(1) {
		t.Fatal("after a release of 40 bytes: want 40 bytes for another client and no more")
	}
	a2.Release()
	c.Release()
	d.Release()
	if places, bytes := b.InUse(); places != 0 || bytes != 0 {
		t.Fatalf("after every release: %d places, %d bytes; want none", places, bytes)
	}
	if c.Grow(1) {
		t.Fatal("a released lease grew")
	}
}

func TestClientOf(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"192.0.2.1:1", "192.0.2.1:2"},
		{"[::ffff:192.0.2.1]:1", "192.0.2.1:2"},
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:2:ffff::9]:2"}, // one /64
	} {
		if ClientOf(from(c.a)) != ClientOf(from(c.b)) {
			t.Errorf("%s and %s are two clients (%s, %s), want one", c.a, c.b, ClientOf(from(c.a)), ClientOf(from(c.b)))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"192.0.2.1:1", "192.0.2.2:1"},
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:3::1]:1"},
		{"pipe", "192.0.2.1:1"},
	} {
		if ClientOf(from(c.a)) == ClientOf(from(c.b)) {
			t.Errorf("%s and %s are one client (%s), want two", c.a, c.b, ClientOf(from(c.a)))
		}
	}
}
