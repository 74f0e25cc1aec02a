package export

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/testkit"
)

// newEchoServer answers 500 with the request's Authorization header in the body.
func newEchoServer(t *testing.T) string {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad token "+r.Header.Get("Authorization"), http.StatusInternalServerError)
	}))
	srv.Config.ReadHeaderTimeout, srv.Config.ReadTimeout = time.Second, time.Second
	srv.Config.WriteTimeout, srv.Config.IdleTimeout = time.Second, time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestClientListsTheExport(t *testing.T) {
	e := newEnv(t)
	h5 := e.branch(t, 5, map[string]string{"a.txt": "a\n"}, map[string]string{"b.txt": "b\n"})
	h3 := e.branch(t, 3, map[string]string{"c.txt": "c\n"})
	e.work.Branch(t, "queen-4", "origin/master") // nothing ahead: left out
	l, err := e.client.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l.Count != 2 || len(l.Branches) != 2 || l.Base != "origin/master" {
		t.Fatalf("listing %+v", l)
	}
	want := []ListedBranch{{3, "queen-3", 1, 1, h3}, {5, "queen-5", 2, 2, h5}}
	for i, b := range l.Branches {
		if b != want[i] {
			t.Fatalf("branch %d: %+v, want %+v", i, b, want[i])
		}
	}
}

func TestClientRetriesAnOutageInsideOneCall(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 7, map[string]string{"a.txt": "a\n"})
	e.export.Fail(http.StatusServiceUnavailable, 2)
	b, err := e.client.Bundle(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.export.Requests("/queen/export/7"); n != 3 {
		t.Fatalf("%d requests, want 3 (two failures, one success)", n)
	}
	if b.Branch != "queen-7" || len(b.Commits) != 1 || b.Commits[0].SHA != head || b.Files[0] != "a.txt" ||
		!strings.HasPrefix(string(b.Data), "# v2 git bundle") {
		t.Fatalf("bundle %+v", b)
	}

	e.export.Fail(http.StatusBadGateway, -1)
	_, err = e.client.Bundle(context.Background(), 7)
	mustRetryable(t, err)
	if !strings.Contains(err.Error(), "GET /queen/export/7: status 502") {
		t.Fatalf("error %q", err)
	}
}

func TestClientAnswersOfNoBundle(t *testing.T) {
	e := newEnv(t)
	e.work.Branch(t, "queen-8", "origin/master")
	_, err := e.client.Bundle(context.Background(), 9)
	if !errors.Is(err, ErrNoBundle) || IsRetryable(err) {
		t.Fatalf("404: %v", err)
	}
	_, err = e.client.Bundle(context.Background(), 8)
	if !errors.Is(err, ErrNothingAhead) || IsRetryable(err) {
		t.Fatalf("409: %v", err)
	}
	if e.export.Requests("/queen/export/9") != 1 {
		t.Fatal("a 404 was retried")
	}
	bad, _ := NewClient(e.export.URL, "wrong", nil)
	_, err = bad.Bundle(context.Background(), 8)
	var ee *Error
	if !errors.As(err, &ee) || ee.Status != http.StatusUnauthorized || IsRetryable(err) {
		t.Fatalf("401: %v", err)
	}
}

func TestClientReadsTheStoredFallback(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, 11, map[string]string{"a.txt": "a\n"})
	e.export.Stored(t, 11, "runner-2")
	e.work.Git(t, "checkout", "--quiet", "--detach")
	e.work.Git(t, "branch", "-D", "queen-11") // gone from the checkout, kept in the store
	b, err := e.client.Bundle(context.Background(), 11)
	if err != nil {
		t.Fatal(err)
	}
	if b.Runner != "runner-2" || b.At == "" || b.Commits != nil || len(b.Data) == 0 {
		t.Fatalf("stored bundle %+v", b)
	}
	out, err := e.pub.Push(context.Background(), e.job(11, head))
	if err != nil || out.State != StatePROpened || e.remote.Ref(t, "queen-11") != head {
		t.Fatalf("publishing a stored bundle: %+v %v", out, err)
	}
}

func TestAListingTimeoutIsRetryable(t *testing.T) {
	e := newEnv(t)
	e.export.Slow(10*time.Second, -1)
	e.client.ListTimeout, e.client.Retries = 100*time.Millisecond, 2
	_, err := e.client.List(context.Background())
	mustRetryable(t, err)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "GET /queen/export:") {
		t.Fatalf("error %q", err)
	}
	if n := e.export.Requests("/queen/export"); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	// The stretch ends: the next call lists.
	e.export.Slow(0, 0)
	if _, err := e.client.List(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestNewClientRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x/y", "/queen/export", "https://user:pw@host/queen/export"} {
		if _, err := NewClient(u, "t", nil); err == nil {
			t.Fatalf("%q accepted", u)
		}
	}
}

// The export's error body echoes the Authorization header at any offset,
// past the cut included: no piece of the token survives in the error.
func TestAnEchoedExportTokenNeverLeaksWhereverItIsCut(t *testing.T) {
	var pad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "%s Authorization: %s was refused by the gateway; %s\n",
			strings.Repeat("x", int(pad.Load())), r.Header.Get("Authorization"), strings.Repeat("y", 300))
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL+"/queen/export", exportToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Retries = 0
	for p := 0; p <= 5000; p += 7 {
		pad.Store(int64(p))
		_, err := c.Bundle(context.Background(), 3)
		mustRetryable(t, err)
		if !strings.HasPrefix(err.Error(), "GET /queen/export/3: status 502") {
			t.Fatalf("error %q", err)
		}
		if l := leak(err.Error(), exportToken); l != "" {
			t.Fatalf("padding %d: error %q holds %q of the token", p, err, l)
		}
		if p < 150 && !strings.Contains(err.Error(), "Authorization: Bearer ***") {
			t.Fatalf("padding %d: error %q: want the echo kept readable, the token masked", p, err)
		}
	}
}

// A redirect to another port or scheme of the export's host is refused
// before anything is sent there: Go's client would have sent the token
// along (it drops Authorization only for another host).
func TestTheExportTokenNeverFollowsARedirectOffTheExport(t *testing.T) {
	fronts, leaked := testkit.OffOriginRedirects(t, http.StatusFound, `{"base": "origin/master", "count": 0, "branches": []}`)
	for name, front := range fronts {
		for _, hc := range []*http.Client{nil, {}} {
			c, err := NewClient(front+"/queen/export", exportToken, hc)
			if err != nil {
				t.Fatal(err)
			}
			c.Retries = 0
			_, err = c.List(context.Background())
			if err == nil || !strings.Contains(err.Error(), "refused") || leak(err.Error(), exportToken) != "" {
				t.Errorf("%s: %v, want the redirect refused", name, err)
			}
		}
	}
	if n := leaked(); n != 0 {
		t.Fatalf("the token reached another port %d times", n)
	}
}
