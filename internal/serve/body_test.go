package serve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// trickle yields data a chunk at a time and records, before each read, the
// bytes the budget holds against the bytes already given.
type trickle struct {
	t      *testing.T
	data   []byte
	chunk  int
	given  int
	budget *Budget
}

func (r *trickle) Read(p []byte) (int, error) {
	_, held := r.budget.InUse()
	if limit := max(FirstRead, 2*int64(r.given)); held > limit {
		r.t.Fatalf("%d bytes held after %d received, want at most %d", held, r.given, limit)
	}
	if r.given == len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.given:min(len(r.data), r.given+r.chunk)])
	r.given += n
	return n, nil
}

func lease(t *testing.T, b *Budget) *Lease {
	t.Helper()
	l, ok := b.Admit(from("192.0.2.1:1"))
	if !ok {
		t.Fatal("no place")
	}
	t.Cleanup(l.Release)
	return l
}

// The buffer grows with the bytes that arrived, never with the length the
// request claims: a body claiming 25 MiB that brings 300 KiB holds at most
// twice what came.
func TestReadBodyFollowsTheBytesReceived(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16)
	for _, claimed := range []int64{25 << 20, -1, int64(len(data))} {
		t.Run(fmt.Sprint(claimed), func(t *testing.T) {
			b := NewBudget(Limits{Places: 1, ClientPlaces: 1, Bytes: 64 << 20, ClientBytes: 64 << 20})
			r := httptest.NewRequest("POST", "/", nil)
			r.Body = io.NopCloser(&trickle{t: t, data: data, chunk: 1 << 10, budget: b})
			r.ContentLength = claimed
			got, err := ReadBody(httptest.NewRecorder(), r, lease(t, b), 25<<20, time.Second)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("ReadBody: %d bytes, %v; want the %d sent", len(got), err, len(data))
			}
			_, held := b.InUse()
			if claimed == int64(len(data)) && held != claimed {
				t.Fatalf("%d bytes held for a body of %d that said its length, want exactly that", held, claimed)
			}
		})
	}
}

type unread struct{ t *testing.T }

func (u unread) Read([]byte) (int, error) {
	u.t.Fatal("a body over the limit by its Content-Length was read")
	return 0, io.EOF
}

func TestReadBodyRefusesTooLong(t *testing.T) {
	const most = 100 << 10
	b := NewBudget(Limits{Places: 3, ClientPlaces: 3, Bytes: 1 << 20, ClientBytes: 1 << 20})
	r := httptest.NewRequest("POST", "/", nil)
	r.Body, r.ContentLength = io.NopCloser(unread{t}), most+1
	var tooLong *http.MaxBytesError
	if _, err := ReadBody(httptest.NewRecorder(), r, lease(t, b), most, time.Second); !errors.As(err, &tooLong) {
		t.Fatalf("Content-Length past the limit: %v, want a MaxBytesError", err)
	}
	for n, want := range map[int]bool{most: true, most + 1: false} {
		r := httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, n)))
		r.ContentLength = -1
		got, err := ReadBody(httptest.NewRecorder(), r, lease(t, b), most, time.Second)
		if ok := err == nil && len(got) == n; ok != want || (!ok && !errors.As(err, &tooLong)) {
			t.Errorf("%d bytes of unknown length: %d, %v; want taken %v", n, len(got), err, want)
		}
	}
}

func TestReadBodyStopsAtTheBudget(t *testing.T) {
	b := NewBudget(Limits{Places: 1, ClientPlaces: 1, Bytes: 64 << 10, ClientBytes: 64 << 10})
	r := httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, 100<<10)))
	if _, err := ReadBody(httptest.NewRecorder(), r, lease(t, b), 25<<20, time.Second); !errors.Is(err, ErrBudget) {
		t.Fatalf("a body past the budget: %v, want ErrBudget", err)
	}
	if _, held := b.InUse(); held > 64<<10 {
		t.Fatalf("%d bytes held, past the budget", held)
	}
}

// bodyReader serves each request by reading its body with ReadBody (a
// 1 MiB budget, the 25 MiB cap, wait for the body), then hands ReadBody's
// error to then, the lease still held.
func bodyReader(t *testing.T, wait time.Duration, then func(w http.ResponseWriter, r *http.Request, err error)) *httptest.Server {
	t.Helper()
	b := NewBudget(Limits{Places: 1, ClientPlaces: 1, Bytes: 1 << 20, ClientBytes: 1 << 20})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, _ := b.Admit(r)
		defer l.Release()
		_, err := ReadBody(w, r, l, 25<<20, wait)
		then(w, r, err)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// A body that does not arrive in time is dropped: the handler learns it
// and the client's connection is answered and closed.
func TestReadBodyDropsASlowBody(t *testing.T) {
	errc := make(chan error, 1)
	ts := bodyReader(t, 300*time.Millisecond, func(w http.ResponseWriter, r *http.Request, err error) {
		errc <- err
		w.WriteHeader(http.StatusRequestTimeout)
	})
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 26214400\r\n\r\n{")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a held body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Fatalf("answer %d (close %v), want 408 and the connection closed", resp.StatusCode, resp.Close)
	}
	if err := <-errc; !errors.Is(err, ErrSlowBody) {
		t.Fatalf("ReadBody: %v, want ErrSlowBody", err)
	}
}

// The read deadline ends with the body: a handler that goes on past it
// (waiting on Redis) keeps its request's context.
func TestReadBodyDeadlineEndsWithTheBody(t *testing.T) {
	errc := make(chan error, 1)
	ts := bodyReader(t, 200*time.Millisecond, func(w http.ResponseWriter, r *http.Request, err error) {
		if err != nil {
			errc <- err
			return
		}
		time.Sleep(600 * time.Millisecond)
		errc <- r.Context().Err()
	})
	resp, err := http.Post(ts.URL, "application/json", strings.NewReader(`{"zen":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-errc; err != nil {
		t.Fatalf("past the body's deadline: %v, want the request's context alive", err)
	}
}
