// Package serve runs HTTP servers the way every queen-app listener must:
// with timeouts on every phase and a graceful shutdown.
package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts bound each phase so a slow or hostile client cannot hold a
// connection; the write timeout leaves room for a 25 MiB body on a slow link.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 60 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 120 * time.Second
	ShutdownTimeout   = 25 * time.Second
	MaxHeaderBytes    = 64 << 10
)

// NewServer returns an http.Server for addr with every timeout set.
func NewServer(addr string, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Run listens on srv.Addr and serves until ctx ends, then shuts down
// gracefully, letting requests in flight finish.
func Run(ctx context.Context, srv *http.Server, log *slog.Logger) error {
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		return err
	}
	return RunListener(ctx, srv, ln, log)
}

// RunListener is Run on an open listener; with srv.TLSConfig set (see
// TLSConfig) it serves HTTPS.
func RunListener(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			// The pair comes from TLSConfig's GetCertificate.
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	log.Info("listening", "addr", ln.Addr().String(), "tls", srv.TLSConfig != nil)
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		// Requests still running past the timeout are cut, so nothing of
		// this server outlives Run.
		_ = srv.Close()
	}
	<-errc
	log.Info("stopped", "addr", ln.Addr().String())
	return err
}
