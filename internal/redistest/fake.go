package redistest

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Fake is a TCP server speaking just enough RESP to answer every command
// with one error, as a Redis that is LOADING, a cluster that is down or a
// replica that lost its primary does; with no error it reads and never
// answers, as a hung Redis does.
type Fake struct {
	Addr string // host:port

	ln    net.Listener
	reply string
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// StartFake starts a Fake answering every command with "-" + reply, e.g.
// "LOADING Redis is loading the dataset in memory"; reply "" never answers.
// It stops at cleanup.
func StartFake(tb testing.TB, reply string) *Fake {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("fake redis: listen: %v", err)
	}
	f := &Fake{Addr: ln.Addr().String(), ln: ln, reply: reply}
	f.wg.Add(1)
	go f.accept()
	tb.Cleanup(f.close)
	return f
}

// URL is the fake's redis:// URL.
func (f *Fake) URL() string { return "redis://" + f.Addr + "/0" }

func (f *Fake) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *Fake) serve(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		if err := skipCommand(r); err != nil {
			return
		}
		if f.reply == "" {
			continue
		}
		if _, err := io.WriteString(c, "-"+f.reply+"\r\n"); err != nil {
			return
		}
	}
}

// skipCommand reads one command: a RESP array of bulk strings or an inline
// line.
func skipCommand(r *bufio.Reader) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "*") {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		head, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if err != nil {
			return err
		}
		if _, err := r.Discard(size + 2); err != nil {
			return err
		}
	}
	return nil
}

func (f *Fake) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
