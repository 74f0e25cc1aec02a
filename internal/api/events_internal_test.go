package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// A batch of the stream's reader that starts past a watcher's place (the
// reader began after the watcher read where to start) is preceded by what
// the audit stream holds in between: no gap.
func TestStreamReadsTheGapBeforeABatch(t *testing.T) {
	l := ledger.New(redistest.Start(t).Client(), ledger.Options{})
	h, err := New(Config{Ledger: l, Token: "tok-internal-3f9a1c"})
	if err != nil {
		t.Fatal(err)
	}
	s := h.(*server)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var body map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"started": true}`), &body)
	for i := int64(1); i <= 5; i++ {
		if _, err := l.Upsert(ctx, "hive/t27", i, body, audit.API("test")); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := l.AuditAfter(ctx, ledger.AuditID{}, 10)
	es := rd.Entries
	if err != nil || len(es) != 5 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	id := func(i int) ledger.AuditID { a, _ := ledger.ParseAuditID(es[i].ID); return a }
	// The watcher sent up to entry 1; the batch holds entries 4 and 5.
	b, err := s.render(ctx, id(2), ledger.AuditRead{Entries: es[3:], Messages: 2, Last: id(4)}, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &syncRecorder{ResponseRecorder: httptest.NewRecorder()}
	w := &responseWriter{ResponseWriter: rec}
	st := &stream{s: s, w: w, rc: http.NewResponseController(w), last: id(0), sub: &watcher{ch: make(chan *batch, 1)}}
	st.sub.ch <- b
	done := make(chan error, 1)
	go func() { done <- st.follow(ctx, false) }()
	re := regexp.MustCompile(`(?m)^id: (\S+)$`)
	var got []string
	for deadline := time.Now().Add(10 * time.Second); len(got) < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sent %v", got)
		}
		got = nil
		for _, m := range re.FindAllStringSubmatch(rec.body(), -1) {
			got = append(got, m[1])
		}
	}
	cancel()
	<-done
	want := []string{es[1].ID, es[2].ID, es[3].ID, es[4].ID}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("sent %v, want %v", got, want)
	}
}

// syncRecorder lets the test read what the stream writes meanwhile.
type syncRecorder struct {
	*httptest.ResponseRecorder
	mu testkit.Buffer
}

func (r *syncRecorder) Write(p []byte) (int, error) { return r.mu.Write(p) }
func (r *syncRecorder) body() string                { return r.mu.String() }
