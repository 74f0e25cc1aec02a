package sandbox

import (
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// server is one HTTP server on a loopback port.
type server struct {
	URL string // http://127.0.0.1:port, no trailing slash
	hs  *http.Server
	rec *recorder // off until a test asks (GitHub.Record)
}

// listen serves h on a free loopback port, with a timeout on every phase;
// the write timeout leaves room for a whole branch's push.
func listen(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rec := &recorder{}
	hs := &http.Server{
		Handler:           rec.wrap(h),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       time.Minute,
		// A client that goes away mid-answer is no news here; nothing of
		// the sandbox writes plain text into its host's logs.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() { _ = hs.Serve(ln) }()
	return &server{URL: "http://" + ln.Addr().String(), hs: hs, rec: rec}, nil
}

// Close stops the server and cuts its connections.
func (s *server) Close() { _ = s.hs.Close() }
