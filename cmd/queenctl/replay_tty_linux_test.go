package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: what is written to tty is read
// from master, as a terminal would show it.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("a pseudo-terminal is needed: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var n uint32
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// On a terminal the summary comes first as well as last, so it does not
// scroll away; into a pipe or a file it comes once, at the end.
func TestReplaySummaryFirstOnATerminal(t *testing.T) {
	master, tty := openPTY(t)
	if !isTerminal(tty) {
		t.Fatal("isTerminal: a pseudo-terminal does not count as a terminal")
	}
	read := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, master) // ends when the tty side closes
		read <- strings.ReplaceAll(b.String(), "\r\n", "\n")
	}()
	var errb bytes.Buffer
	code := run([]string{"replay", snapshot}, tty, &errb)
	tty.Close()
	out := <-read
	const first = "taken_at 2026-10-11T12:55:00Z, 463 rows (rules applied as if both freeing flags were on)\n"
	if code != 0 || !strings.HasPrefix(out, first) || strings.Count(out, first) != 2 || !strings.HasSuffix(out, "unread 0)\n") {
		head, _, _ := strings.Cut(out, "ROW")
		t.Fatalf("exit %d, stderr %q; output starts %q", code, errb.String(), head)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if isTerminal(w) || isTerminal(&bytes.Buffer{}) {
		t.Fatal("isTerminal: a pipe or a buffer counted as a terminal")
	}
	r.Close()
	w.Close()
	_, piped, _ := runCLI("replay", snapshot)
	if !strings.HasPrefix(piped, "ROW ") || strings.Count(piped, first) != 1 {
		t.Fatalf("not a terminal: the summary is printed once, at the end; got %q...", piped[:80])
	}
}
