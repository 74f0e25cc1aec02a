package testkit

import (
	"net"
	"strconv"
	"testing"
)

// FreePort's ports lie below the ephemeral range with room for PortGap, are
// not handed out twice, and can be listened on.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p := FreePort(t)
		if p < lowestPort || p+PortGap >= ephemeralStart() {
			t.Fatalf("port %d: want it in [%d, %d)", p, lowestPort, ephemeralStart()-PortGap)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("listen on port %d: %v", p, err)
		}
		l.Close()
	}
}
