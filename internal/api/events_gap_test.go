package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/ledger"
)

// exactlyOnceOrReset fails unless events give every id of want (the
// entries after the resume id, in order) exactly once, with a reset
// before any id it leaves out.
func exactlyOnceOrReset(t *testing.T, events []sseEvent, want []string) (resets int) {
	t.Helper()
	i := 0
	for _, ev := range events {
		switch ev.Event {
		case "reset":
			resets++
			// Everything up to the reset's id is re-read by the client.
			for i < len(want) && ev.ID != "" && want[i] <= ev.ID {
				i++
			}
		case "change":
			if i >= len(want) || ev.ID != want[i] {
				next := "none"
				if i < len(want) {
					next = want[i]
				}
				t.Fatalf("change %s with no reset before it, want %s next", ev.ID, next)
			}
			i++
		}
	}
	if i != len(want) {
		t.Fatalf("%d of %d entries given, the rest neither sent nor reset", i, len(want))
	}
	return resets
}

// A resumed watcher whose backlog is trimmed between two of its pages (a
// concurrent XADD MAXLEN ~) gets a reset, never a silent gap.
func TestEventsResetWhenTrimmedBetweenPages(t *testing.T) {
	e := newWatchEnv(t, watchOpts{heartbeat: time.Hour, server: func(s *httptest.Server) { s.Listener = smallBuffers{s.Listener} }})
	detail := strings.Repeat("a long owned path/", 20)
	for i := 1; i <= 249; i++ {
		e.put(t, "hive/t27", i, `{"started": true, "owned_paths": ["`+detail+fmt.Sprint(i)+`"]}`)
	}
	_, ids := e.auditEntries(t)
	if len(ids) != 249 {
		t.Fatalf("%d entries, want 249", len(ids))
	}
	// A reader with small buffers holds the server inside its first page.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	req, _ := http.NewRequest("GET", e.url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Last-Event-ID", ids[0])
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	w := &watch{resp: resp, events: make(chan sseEvent, 1000), cancel: func() {}}
	t.Cleanup(func() { resp.Body.Close() })
	go w.read(bufio.NewReaderSize(resp.Body, 16))
	var got []sseEvent
	for {
		ev := w.nextChange(t)
		if ev.Event != "" {
			got = append(got, ev)
			break
		}
	}
	// The stream keeps its newest 50 while the server is in page one.
	if err := e.redis.Client().XTrimMaxLen(t.Context(), "queen:audit", 50).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		got = append(got, w.nextChange(t))
		if last := got[len(got)-1]; last.ID == ids[248] {
			break
		}
	}
	if resets := exactlyOnceOrReset(t, got, ids[1:]); resets != 1 {
		t.Fatalf("%d resets, want 1", resets)
	}
}

// A resume id the stream does not hold any more because Redis was restored
// from an older backup gets a reset, whether it is newer than the newest
// held or new writes came after the restore.
func TestEventsResetAfterARestore(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	ctx := t.Context()
	for i := 1; i <= 3; i++ {
		e.put(t, "hive/t27", i, working)
	}
	backup := filepath.Join(t.TempDir(), "ledger.jsonl")
	f, err := os.Create(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ledger.Backup(ctx, f, "test"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 4; i <= 5; i++ {
		e.put(t, "hive/t27", i, working)
	}
	_, ids := e.auditEntries(t)
	if _, err := e.ledger.Restore(ctx, backup, ledger.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	newer := e.watch(t, "", "Last-Event-ID", ids[4])
	if ev := newer.next(t); ev.Event != "reset" || ev.ID != ids[2] {
		t.Fatalf("resume after %s, newer than the restored stream: %+v, want a reset at %s", ids[4], ev, ids[2])
	}
	e.put(t, "hive/t27", 6, working)
	lost := e.watch(t, "", "Last-Event-ID", ids[3])
	if ev := lost.next(t); ev.Event != "reset" {
		t.Fatalf("resume after %s, lost in the restore, with a later write: %+v, want a reset", ids[3], ev)
	}
	if d := newer.nextChange(t).change(t); d.Entry["issue"] != 6.0 {
		t.Fatalf("after the reset: issue %v, want 6", d.Entry["issue"])
	}
}

// "0-0" on a stream that never dropped an entry is every entry: a client
// that found the stream empty and connects after the first writes gets
// them, not a reset.
func TestEventsFromZeroOnAnUntrimmedStreamGetsEveryEntry(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	for i := 1; i <= 3; i++ {
		e.put(t, "hive/t27", i, working)
	}
	_, ids := e.auditEntries(t)
	w := e.watch(t, "", "Last-Event-ID", "0-0")
	for _, want := range ids {
		if ev := w.nextChange(t); ev.Event != "change" || ev.ID != want {
			t.Fatalf("after 0-0: %+v, want change %s", ev, want)
		}
	}
	w.quiet(t, 100*time.Millisecond)
}
