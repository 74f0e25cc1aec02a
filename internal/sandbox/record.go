package sandbox

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// Exchange is one request the GitHub stand-in received and the answer it
// sent, as recorded for the contract tests.
type Exchange struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	Status                 int
	RespHeader             http.Header
	RespBody               []byte
}

// recorder keeps every exchange while on, so tests can hold both sides to
// GitHub's published description.
type recorder struct {
	mu  sync.Mutex
	on  bool
	log []Exchange
}

// Record starts keeping every request and answer from now on.
func (s *GitHub) Record() {
	s.srv.rec.mu.Lock()
	defer s.srv.rec.mu.Unlock()
	s.srv.rec.on, s.srv.rec.log = true, nil
}

// Recorded are the exchanges kept since Record, in the order answered.
func (s *GitHub) Recorded() []Exchange {
	s.srv.rec.mu.Lock()
	defer s.srv.rec.mu.Unlock()
	return append([]Exchange(nil), s.srv.rec.log...)
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		on := rec.on
		rec.mu.Unlock()
		if !on {
			h.ServeHTTP(w, r)
			return
		}
		// Read one byte past the cap so the server still sees an oversize body.
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		r.Body = io.NopCloser(bytes.NewReader(body))
		cw := &captureWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(cw, r)
		if cw.header == nil {
			cw.header = w.Header().Clone()
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.log = append(rec.log, Exchange{
			Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body,
			Status: cw.status, RespHeader: cw.header, RespBody: cw.body.Bytes(),
		})
	})
}

type captureWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
	wrote  bool
}

func (c *captureWriter) WriteHeader(code int) {
	if !c.wrote {
		c.wrote, c.status, c.header = true, code, c.ResponseWriter.Header().Clone()
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}
