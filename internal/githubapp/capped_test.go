package githubapp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A GitHub answer past MaxResponseBytes fails the read instead of filling
// memory.
func TestResponsesAreCapped(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxResponseBytes+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(big) }))
	defer srv.Close()
	c := &http.Client{Transport: &wire{next: http.DefaultTransport, userAgent: "t"}}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if !errors.Is(err, errTooLarge) || n != MaxResponseBytes {
		t.Fatalf("read %d bytes, err %v; want %d then errTooLarge", n, err, MaxResponseBytes)
	}
	small := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	defer small.Close()
	resp, err = c.Get(small.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "{}" {
		t.Fatalf("a small answer: %q %v", b, err)
	}
}
