package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/ghevents"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/serve"
)

// Issue 22: 32 requests of headers only (Content-Length 25 MiB, one byte
// of body, a forged signature) took the webhook from 15 MB to 837 MB and
// held every place for a minute, so a signed ping got 503. Now they hold a
// first read each, a signed ping is answered at once, the process stays
// under the chart's memory limit, and the held requests are dropped after
// the body timeout.
func TestWebhookBinaryHoldsForgeriesAndAnswersGitHub(t *testing.T) {
	limit, goMemLimit := chartWebhook(t)
	h := startHook(t, map[string]string{"GOMEMLIMIT": goMemLimit})
	before := procMiB(t, h.pid(), "VmRSS")
	began := time.Now()
	var held []net.Conn
	for i := range 32 {
		held = append(held, forgery(t, h.hookAddr, "127.0.0.1", fmt.Sprint("forged-", i), 1))
	}
	eventually(t, ghevents.BodyTimeout, "32 forgeries in flight", func() bool {
		return gaugeValue(h.apiURL, "queen_webhook_in_flight") == 32
	})
	if b := gaugeValue(h.apiURL, "queen_webhook_body_bytes"); b != 32*serve.FirstRead {
		t.Fatalf("32 forgeries claiming 25 MiB hold %v body bytes, want 32 first reads (%d)", b, 32*serve.FirstRead)
	}

	ping := githubtest.Payload(t, "ping/with-app_id.payload.json")
	req, _ := http.NewRequest("POST", "http://"+h.hookAddr+"/webhook", bytes.NewReader(ping))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "ping")
	req.Header.Set("X-GitHub-Delivery", "ping-while-held")
	req.Header.Set("X-Hub-Signature-256", sign(secret, ping))
	resp, err := (&http.Client{Timeout: time.Second}).Do(req)
	if err != nil {
		t.Fatalf("a signed ping while 32 forgeries are held: %v; want an answer within 1 s", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a signed ping while 32 forgeries are held: %d, want 200", resp.StatusCode)
	}
	if held := time.Since(began); held >= ghevents.BodyTimeout {
		t.Fatalf("the checks took %v, past the body timeout: the forgeries were not all held", held)
	}
	rss, hwm := procMiB(t, h.pid(), "VmRSS"), procMiB(t, h.pid(), "VmHWM")
	t.Logf("webhook RSS %.1f MiB before, %.1f MiB with 32 forgeries held (peak %.1f); chart limit %.0f MiB", before, rss, hwm, limit)
	if hwm >= limit {
		t.Fatalf("webhook peak RSS %.1f MiB, want under the chart's %.0f MiB", hwm, limit)
	}

	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(ghevents.BodyTimeout + 10*time.Second))
		code, _, err := readAnswer(c)
		if err != nil || code != http.StatusRequestTimeout {
			t.Fatalf("forgery %d: %d %v; want it dropped with a 408 after %v", i, code, err, ghevents.BodyTimeout)
		}
	}
	if took := time.Since(began); took > ghevents.BodyTimeout+5*time.Second {
		t.Fatalf("the forgeries were dropped after %v, want about %v", took, ghevents.BodyTimeout)
	}
	eventually(t, 5*time.Second, "no delivery in flight", func() bool {
		return gaugeValue(h.apiURL, "queen_webhook_in_flight") == 0
	})
}
