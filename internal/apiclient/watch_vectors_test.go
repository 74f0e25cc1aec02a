package apiclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
)

// watchVector is one case of testdata/watch (its README says the format);
// the TypeScript client plays the same files.
type watchVector struct {
	About      string        `json:"about"`
	After      string        `json:"after"`
	IdleMs     int           `json:"idle_ms"`
	CallbackMs int           `json:"callback_ms"`
	Answers    []vectorReply `json:"answers"`
	Expect     []vectorStep  `json:"expect"`
}

type vectorReply struct {
	Path        string            `json:"path"`
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
	HoldHeaders bool              `json:"hold_headers"`
	Play        []struct {
		Send     string `json:"send"`
		Times    int    `json:"times"`
		EveryMs  int    `json:"every_ms"`
		PauseMs  int    `json:"pause_ms"`
		BigEvent *struct {
			ID        string `json:"id"`
			Lines     int    `json:"lines"`
			LineBytes int    `json:"line_bytes"`
		} `json:"big_event"`
	} `json:"play"`
	End string `json:"end"`
}

// vectorStep is one thing the client did: a request, an event or a retry.
type vectorStep struct {
	Request     string `json:"request,omitempty"`
	LastEventID string `json:"last_event_id,omitempty"`
	Event       string `json:"event,omitempty"`
	ID          string `json:"id,omitempty"`
	Retry       *struct {
		Status int   `json:"status"`
		WaitMs []int `json:"wait_ms,omitempty"`
	} `json:"retry,omitempty"`
}

// matches says whether got, what the client did, is the expected step.
func (want vectorStep) matches(got vectorStep) bool {
	if (want.Retry == nil) != (got.Retry == nil) {
		return false
	}
	if want.Retry != nil {
		if want.Retry.Status != got.Retry.Status {
			return false
		}
		if w := want.Retry.WaitMs; len(w) == 2 && (got.Retry.WaitMs[0] < w[0] || got.Retry.WaitMs[0] > w[1]) {
			return false
		}
		return true
	}
	return want.Request == got.Request && want.LastEventID == got.LastEventID && want.Event == got.Event && want.ID == got.ID
}

var httpDateIn = regexp.MustCompile(`\{\{http-date \+(\d+)s\}\}`)

// vectorPlayer serves a vector's answers in order and records the steps.
type vectorPlayer struct {
	v     watchVector
	mu    sync.Mutex
	n     int
	steps []vectorStep
	more  chan struct{} // a step was recorded
}

func (p *vectorPlayer) record(s vectorStep) {
	p.mu.Lock()
	p.steps = append(p.steps, s)
	p.mu.Unlock()
	select {
	case p.more <- struct{}{}:
	default:
	}
}

func (p *vectorPlayer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.record(vectorStep{Request: r.URL.Path, LastEventID: r.Header.Get("Last-Event-ID")})
	p.mu.Lock()
	i := p.n
	p.n++
	p.mu.Unlock()
	if i >= len(p.v.Answers) {
		<-r.Context().Done()
		return
	}
	a := p.v.Answers[i]
	if a.HoldHeaders {
		<-r.Context().Done()
		return
	}
	for k, v := range a.Headers {
		w.Header().Set(k, httpDateIn.ReplaceAllStringFunc(v, func(m string) string {
			s, _ := strconv.Atoi(httpDateIn.FindStringSubmatch(m)[1])
			return time.Now().Add(time.Duration(s) * time.Second).UTC().Format(http.TimeFormat)
		}))
	}
	w.WriteHeader(a.Status)
	fmt.Fprint(w, a.Body)
	flush := func() { w.(http.Flusher).Flush() }
	flush()
	wait := func(ms int) bool {
		select {
		case <-r.Context().Done():
			return false
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return true
		}
	}
	for _, s := range a.Play {
		switch {
		case s.BigEvent != nil:
			bw := bufio.NewWriter(w)
			id := s.BigEvent.ID
			fmt.Fprintf(bw, "id: %s\nevent: change\ndata: {\"entry\":{\"id\":%q,\"repo\":\"hive/t27\",\"issue\":1,\"version\":1},\"claim\":null\n", id, id)
			pad := strings.Repeat("a", s.BigEvent.LineBytes)
			for i := range s.BigEvent.Lines {
				fmt.Fprintf(bw, "data: ,\"p%d\":\"%s\"\n", i, pad)
			}
			bw.WriteString("data: }\n\n")
			if bw.Flush() != nil {
				return
			}
			flush()
		case s.PauseMs > 0:
			if !wait(s.PauseMs) {
				return
			}
		default:
			for range max(s.Times, 1) {
				if s.EveryMs > 0 && !wait(s.EveryMs) {
					return
				}
				if _, err := fmt.Fprint(w, s.Send); err != nil {
					return
				}
				flush()
			}
		}
	}
	switch a.End {
	case "hang":
		<-r.Context().Done()
	case "drop":
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}
}

// The Go client against every shared vector of the watch protocol.
func TestWatchVectors(t *testing.T) {
	files, err := filepath.Glob("../../testdata/watch/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors in testdata/watch: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p := &vectorPlayer{more: make(chan struct{}, 1)}
			if err := json.Unmarshal(data, &p.v); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			playVector(t, p)
		})
	}
}

func playVector(t *testing.T, p *vectorPlayer) {
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	c := client(t, strings.TrimPrefix(srv.URL, "http://"), token)
	idle := 5 * time.Second
	if p.v.IdleMs > 0 {
		idle = time.Duration(p.v.IdleMs) * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, apiclient.WatchOptions{After: p.v.After, IdleTimeout: idle,
			OnRetry: func(err error, wait time.Duration) {
				s := vectorStep{Retry: &struct {
					Status int   `json:"status"`
					WaitMs []int `json:"wait_ms,omitempty"`
				}{WaitMs: []int{int(wait / time.Millisecond)}}}
				var ae *apiclient.Error
				if errors.As(err, &ae) {
					s.Retry.Status = ae.Status
				}
				p.record(s)
			}},
			func(ev apiclient.Event) error {
				p.record(vectorStep{Event: ev.Type, ID: ev.ID})
				time.Sleep(time.Duration(p.v.CallbackMs) * time.Millisecond)
				return nil
			})
	}()
	defer func() { cancel(); <-done }()
	limit := time.After(20 * time.Second)
	for {
		p.mu.Lock()
		got := append([]vectorStep(nil), p.steps...)
		p.mu.Unlock()
		if len(got) >= len(p.v.Expect) {
			for i, want := range p.v.Expect {
				if !want.matches(got[i]) {
					t.Fatalf("%s\nstep %d: got %s, want %s\nall: %s", p.v.About, i, show(got[i]), show(want), show(got))
				}
			}
			return
		}
		select {
		case <-p.more:
		case err := <-done:
			t.Fatalf("%s\nthe watch ended (%v) after %s", p.v.About, err, show(got))
		case <-limit:
			t.Fatalf("%s\nnot within 20 s; so far %s", p.v.About, show(got))
		}
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
