package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Past the limit a request is refused at once, and admitted again once a
// place is free.
func TestLimitRefusesPastTheBoundAtOnce(t *testing.T) {
	const n = 3
	var inside atomic.Int32
	release := make(chan struct{})
	l := NewLimiter(n)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.Acquire() {
			Refuse(w)
			return
		}
		defer l.Release()
		if r.URL.Path == "/hold" {
			inside.Add(1)
			<-release
		}
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	client := &http.Client{Timeout: 10 * time.Second} // a queued request would hang here
	get := func(path string) int {
		resp, err := client.Get(ts.URL + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var held sync.WaitGroup
	for i := 0; i < n; i++ {
		held.Add(1)
		go func() { defer held.Done(); get("/hold") }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for inside.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests in flight", inside.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := client.Get(ts.URL + "/other")
	if err != nil {
		t.Fatalf("past the limit: %v (queued instead of refused)", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("past the limit: %d %v %s, want a JSON 503 with Retry-After", resp.StatusCode, resp.Header, body)
	}
	close(release)
	held.Wait()
	if code := get("/other"); code != http.StatusOK {
		t.Fatalf("after the held requests ended: %d, want 200", code)
	}
}
