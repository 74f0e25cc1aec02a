// Package testkit holds the small concurrency-safe helpers several test
// packages need: a settable clock, a log buffer, free ports and the
// operator's documents as one text.
package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Clock is a clock that moves only when told; safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Buffer collects writes from several goroutines, e.g. a logger's and a
// process's output.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Eventually polls cond every 10 ms until it holds, failing tb naming what
// was awaited once limit has passed (a bound against hanging, not a speed
// assertion).
func Eventually(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	for end := time.Now().Add(limit); !cond(); {
		if time.Now().After(end) {
			tb.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// OperatorDocs is the operator's documents as one text, from the
// repository's root dir: the README, then docs/install.md and
// docs/operate.md, where its steps moved. Tests of the documented steps
// read it, so they follow a step wherever it lives.
func OperatorDocs(tb testing.TB, root string) string {
	tb.Helper()
	var all strings.Builder
	for _, f := range []string{"README.md", "docs/install.md", "docs/operate.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			tb.Fatal(err)
		}
		all.Write(b)
		all.WriteString("\n")
	}
	return all.String()
}
