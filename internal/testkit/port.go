package testkit

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// PortGap is how far above a FreePort port another port of the same server
// may lie and still be outside the ephemeral range (a Redis Cluster node's
// bus port is its port + 10000).
const PortGap = 10000

// lowestPort is where FreePort starts: above the well-known services.
const lowestPort = 10000

var ports struct {
	sync.Mutex
	given map[int]bool
}

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago, for a
// server a test is about to start in another process. A port from ":0" comes
// from the ephemeral range (ip_local_port_range, 32768-60999 by default),
// which every outgoing connection draws from too: in a busy suite a client's
// connection took such a port between its check and the webhook's bind. The
// kernel never hands out the ports below that range on its own, so FreePort
// picks there, at random (test binaries run side by side), never the same
// twice in one process, with room for PortGap above. Where the range leaves
// no room it falls back to ":0".
func FreePort(tb testing.TB) int {
	tb.Helper()
	top := ephemeralStart() - PortGap
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = map[int]bool{}
	}
	for range 200 {
		if top <= lowestPort {
			break
		}
		p := lowestPort + rand.IntN(top-lowestPort)
		if ports.given[p] || !free(p) || !free(p+PortGap) {
			continue
		}
		ports.given[p] = true
		return p
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr is FreePort as "127.0.0.1:port".
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768 // Linux's default; elsewhere a guess
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
