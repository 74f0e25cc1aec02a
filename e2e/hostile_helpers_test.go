package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/sandbox"
)

// hookProc is a running webhook binary on its own Redis and sandbox.
type hookProc struct {
	p        *proc
	hookAddr string // host:port of QUEEN_LISTEN
	apiURL   string
	redis    *redistest.Server
}

// startHook runs the built webhook against a private Redis and the sandbox
// (the App installed on hive/t27) with extra env, and waits until a signed
// delivery for hive/t27 is taken: its installations are synced.
func startHook(tb testing.TB, extra map[string]string) *hookProc {
	tb.Helper()
	sb, err := sandbox.Start(sandbox.Options{Dir: tb.TempDir(), Repo: repo, Installation: instID, ExportToken: exToken})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(sb.Close)
	h := &hookProc{redis: redistest.Start(tb), hookAddr: freeAddr(tb)}
	api := freeAddr(tb)
	h.apiURL = "http://" + api
	env := sb.GitHubEnv()
	for k, v := range map[string]string{
		"GITHUB_WEBHOOK_SECRET": secret, "QUEEN_API_TOKEN": apiToken, "QUEEN_REDIS_URL": h.redis.URL(),
		"QUEEN_LISTEN": h.hookAddr, "QUEEN_API_LISTEN": api, "QUEEN_REEVALUATE_DELAY": "0s",
	} {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	h.p = start(tb, "webhook", env)
	waitHTTP(tb, h.p, h.apiURL+"/healthz")
	body := prPayload(tb, repo, 1, 1, "closed", false, instID)
	eventually(tb, 20*time.Second, "the installed repository is taken", func() bool {
		code, _, err := sendRaw(h.hookAddr, "127.0.0.1", signedRequest(h.hookAddr, "pull_request", "sync-check", body))
		return err == nil && code == http.StatusAccepted
	})
	return h
}

func (h *hookProc) pid() int { return h.p.cmd.Process.Pid }

// signedRequest is the bytes of a delivery as GitHub sends it, signed with
// the webhook's secret.
func signedRequest(addr, event, id string, body []byte) []byte {
	return append([]byte(fmt.Sprintf("POST /webhook HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nX-GitHub-Event: %s\r\nX-GitHub-Delivery: %s\r\nX-Hub-Signature-256: %s\r\n\r\n",
		addr, len(body), event, id, sign(secret, body))), body...)
}

// dialFrom connects to addr from local address ip (any of 127.0.0.0/8 on
// loopback), so one test plays several clients.
func dialFrom(ip, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

// sendRaw writes req on a new connection from ip and reads the answer.
func sendRaw(addr, ip string, req []byte) (int, string, error) {
	c, err := dialFrom(ip, addr)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	if _, err := c.Write(req); err != nil {
		return 0, "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return readAnswer(c)
}

// readAnswer reads one HTTP answer from c.
func readAnswer(c net.Conn) (int, string, error) {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// forgery sends, from ip, the headers of a delivery claiming a 25 MiB body
// with a forged signature, then the first size bytes of its body, and
// leaves the connection open.
func forgery(tb testing.TB, addr, ip, id string, size int) net.Conn {
	tb.Helper()
	c, err := openForgery(addr, ip, id, size)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// openForgery is forgery for any goroutine: the caller closes the
// connection.
func openForgery(addr, ip, id string, size int) (net.Conn, error) {
	c, err := dialFrom(ip, addr)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("POST /webhook HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"X-GitHub-Event: pull_request\r\nX-GitHub-Delivery: %s\r\nX-Hub-Signature-256: sha256=%s\r\n\r\n{",
		addr, 25<<20, id, strings.Repeat("0", 64))
	if _, err := io.WriteString(c, head+strings.Repeat(" ", size-1)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// gaugeValue reads an unlabelled sample of name from url's /metrics; -1
// when it cannot.
func gaugeValue(url, name string) float64 {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}

// procMiB is field (VmRSS, VmHWM) of process pid's /proc status, in MiB.
func procMiB(tb testing.TB, pid int, field string) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				tb.Fatalf("%s %q: %v", field, v, err)
			}
			return kb / 1024
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// chartWebhook is what the chart gives the webhook container: its memory
// limit (MiB) and GOMEMLIMIT.
func chartWebhook(tb testing.TB) (limitMiB float64, goMemLimit string) {
	tb.Helper()
	b, err := os.ReadFile("../charts/queen-app/values.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var v struct {
		Webhook struct {
			GoMemLimit string `json:"goMemLimit"`
			Resources  struct {
				Limits struct {
					Memory string `json:"memory"`
				} `json:"limits"`
			} `json:"resources"`
		} `json:"webhook"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	q, err := resource.ParseQuantity(v.Webhook.Resources.Limits.Memory)
	if err != nil {
		tb.Fatalf("webhook.resources.limits.memory %q: %v", v.Webhook.Resources.Limits.Memory, err)
	}
	return float64(q.Value()) / (1 << 20), v.Webhook.GoMemLimit
}

// burst opens n signed deliveries from ip, each with its headers and first
// byte, waits until all n are in flight at once, then sends the rest of
// every body together and returns the answers' codes and the time from
// the release to the last answer.
func burst(tb testing.TB, h *hookProc, ip, prefix string, n int) ([]int, time.Duration) {
	tb.Helper()
	conns := make([]net.Conn, n)
	rest := make([][]byte, n)
	for i := range conns {
		body := prPayload(tb, repo, int64(1000+i), 2000+i, "closed", false, instID)
		req := signedRequest(h.hookAddr, "pull_request", fmt.Sprintf("%s-%d", prefix, i), body)
		c, err := dialFrom(ip, h.hookAddr)
		if err != nil {
			tb.Fatal(err)
		}
		defer c.Close()
		cut := len(req) - len(body) + 1
		if _, err := c.Write(req[:cut]); err != nil {
			tb.Fatal(err)
		}
		conns[i], rest[i] = c, req[cut:]
	}
	eventually(tb, 10*time.Second, fmt.Sprintf("%d deliveries in flight", n), func() bool {
		return gaugeValue(h.apiURL, "queen_webhook_in_flight") >= float64(n)
	})
	codes := make([]int, n)
	done := make(chan struct{}, n)
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, c := range conns {
		go func() {
			defer func() { done <- struct{}{} }()
			if _, err := c.Write(rest[i]); err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			codes[i], _, _ = readAnswer(c)
		}()
	}
	for range n {
		select {
		case <-done:
		case <-ctx.Done():
			tb.Fatal("the burst was not answered in 30 s")
		}
	}
	return codes, time.Since(begin)
}
