package e2e

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/ghevents"
	"github.com/queen-app/queen-app/internal/serve"
)

// BenchmarkWebhookHostile runs the built webhook (with the chart's
// GOMEMLIMIT) against a private Redis and the local GitHub:
//
//   - 32 forgeries held (headers claiming 25 MiB, one byte of body, issue
//     22's attack) and the webhook's RSS;
//
//   - 256 signed pull_request deliveries from one address one after
//     another (the baseline), then a burst of 256 all in flight at once
//     (each sent its headers and first byte, then the rest together): how
//     many were refused (issue 22: at 64, about half, under the old cap of
//     32) and how long each took;
//
//   - then the worst a flood can pin: forged deliveries claiming 25 MiB
//     from as many addresses as it takes, each address holding all of its
//     places and body bytes (ghevents.Limits), first with bodies of 60 KiB
//     each, then with one body grown to 25 MiB per address beside the
//     smallest; the webhook's resident set (VmRSS) while each is held and
//     its peak (VmHWM) at the end, against the chart's memory limit.
//
//     go test -run '^$' -bench WebhookHostile -benchtime 1x ./e2e/
func BenchmarkWebhookHostile(b *testing.B) {
	for i := 0; i < b.N; i++ {
		hostileOnce(b)
	}
}

func hostileOnce(b *testing.B) {
	b.StopTimer()
	limit, goMemLimit := chartWebhook(b)
	env := map[string]string{}
	if goMemLimit != "" {
		env["GOMEMLIMIT"] = goMemLimit
	}
	h := startHook(b, env)
	idle := procMiB(b, h.pid(), "VmRSS")
	b.StartTimer()

	forged := flood(b, h, "forged", 1, 32, 1, 0)
	forgedRSS := procMiB(b, h.pid(), "VmRSS")
	closeAll(forged, h)

	const n = 256
	serial := time.Now()
	for i := range n {
		req := signedRequest(h.hookAddr, "pull_request", fmt.Sprint("serial-", i), prPayload(b, repo, int64(3000+i), 4000+i, "closed", false, instID))
		if code, answer, err := sendRaw(h.hookAddr, "127.0.0.1", req); err != nil || code != http.StatusAccepted {
			b.Fatalf("serial delivery %d: %d %s %v", i, code, answer, err)
		}
	}
	b.ReportMetric(float64(time.Since(serial).Milliseconds()), "serial-ms")
	codes, took := burst(b, h, "127.0.0.1", "burst", n)
	refused := 0
	for _, c := range codes {
		if c != http.StatusAccepted {
			refused++
		}
	}
	b.ReportMetric(float64(refused), "burst-refused")
	b.ReportMetric(float64(took.Milliseconds()), "burst-ms")
	afterBurst := procMiB(b, h.pid(), "VmRSS")

	l := ghevents.Limits
	addrs := int(l.Places / l.ClientPlaces)
	if int64(addrs)*l.ClientBytes < l.Bytes {
		addrs = int((l.Bytes + l.ClientBytes - 1) / l.ClientBytes)
	}
	// Many: every place of every address, the bytes spread over them.
	each := int(l.ClientBytes/l.ClientPlaces) - 4<<10 // grows to a power of two within the share
	many := flood(b, h, "many", addrs, int(l.ClientPlaces), each, 0)
	manyRSS := procMiB(b, h.pid(), "VmRSS")
	closeAll(many, h)
	// Large: per address one body grown to 25 MiB (16 MiB and a byte sent:
	// its buffer doubles to 32 MiB, clamped to the 25 claimed), then as
	// many first reads as its bytes still allow.
	large := flood(b, h, "large", addrs, 1, 16<<20+1, float64(addrs*ghevents.MaxBodyBytes))
	large = append(large, flood(b, h, "small", addrs, int(l.ClientPlaces)-1, 1, 0)...)
	largeRSS := procMiB(b, h.pid(), "VmRSS")
	closeAll(large, h)
	hwm := procMiB(b, h.pid(), "VmHWM")
	b.StopTimer()

	b.ReportMetric(limit, "chart-limit-MiB")
	b.ReportMetric(idle, "idle-rss-MiB")
	b.ReportMetric(afterBurst, "burst-rss-MiB")
	b.ReportMetric(forgedRSS, "forged32-rss-MiB")
	b.ReportMetric(manyRSS, "flood-many-rss-MiB")
	b.ReportMetric(largeRSS, "flood-large-rss-MiB")
	b.ReportMetric(hwm, "peak-rss-MiB")
	b.Logf("limits %+v, first read %d, GOMEMLIMIT %q; %d addresses; burst of %d: %d refused in %v",
		l, serve.FirstRead, goMemLimit, addrs, n, refused, took)
}

// flood holds up to places forgeries from each of addrs addresses
// (127.0.0.2 on), each sending size bytes of its body, and waits until the
// webhook holds want body bytes, or (want 0) what it took of them (a
// forgery past its address's bytes is refused at once). Each is dropped
// ghevents.BodyTimeout after it came: the whole flood is held well within.
func flood(b *testing.B, h *hookProc, name string, addrs, places, size int, want float64) []net.Conn {
	b.Helper()
	began := time.Now()
	// Opened 32 at a time, so a loaded machine still holds them all.
	conns := make([]net.Conn, addrs*places)
	errs := make([]error, len(conns))
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for k := range conns {
		a, i := k/places, k%places
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ip := fmt.Sprintf("127.0.0.%d", 2+a)
			conns[k], errs[k] = openForgery(h.hookAddr, ip, fmt.Sprintf("%s-%d-%d", name, a, i), size)
		})
	}
	wg.Wait()
	b.Cleanup(func() { closeAll(conns, nil) })
	for _, err := range errs {
		// A refused forgery's connection may be closed under the writer.
		if err != nil && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			b.Fatal(err)
		}
	}
	last := -2.0
	eventually(b, 20*time.Second, "the flood held", func() bool {
		v := gaugeValue(h.apiURL, "queen_webhook_body_bytes")
		if want > 0 {
			return v >= want
		}
		time.Sleep(50 * time.Millisecond)
		settled := v == last && v > 0
		last = v
		return settled
	})
	b.Logf("%s: %v in flight, %.1f MiB of bodies, %v after its first", name, gaugeValue(h.apiURL, "queen_webhook_in_flight"),
		gaugeValue(h.apiURL, "queen_webhook_body_bytes")/(1<<20), time.Since(began).Round(time.Millisecond))
	return conns
}

// closeAll closes conns and waits until the webhook (if any) holds
// nothing.
func closeAll(conns []net.Conn, h *hookProc) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	if h == nil {
		return
	}
	deadline := time.Now().Add(2 * ghevents.BodyTimeout)
	for gaugeValue(h.apiURL, "queen_webhook_in_flight") > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}
