package serve

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// maxPEMFile bounds a certificate or key file: a chain is a few KiB, and a
// larger file is the wrong file.
const maxPEMFile = 1 << 20

// KeyPairError is a certificate pair that cannot serve, naming which of
// the two files is at fault so that configuration can name its variable.
type KeyPairError struct {
	KeyFile bool // the key file's fault, else the certificate file's
	Problem string
}

func (e *KeyPairError) Error() string {
	if e.KeyFile {
		return "TLS key file " + e.Problem
	}
	return "TLS certificate file " + e.Problem
}

// LoadKeyPair reads a PEM certificate (its chain after it) and the PEM
// private key that matches it.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := readPEMFile(certFile)
	if err != nil {
		return tls.Certificate{}, &KeyPairError{Problem: err.Error()}
	}
	keyPEM, err := readPEMFile(keyFile)
	if err != nil {
		return tls.Certificate{}, &KeyPairError{KeyFile: true, Problem: err.Error()}
	}
	if !hasPEM(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		return tls.Certificate{}, &KeyPairError{Problem: "holds no PEM certificate: " + certFile}
	}
	if !hasPEM(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		return tls.Certificate{}, &KeyPairError{KeyFile: true, Problem: "holds no PEM private key: " + keyFile}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	switch {
	case err == nil:
		return cert, nil
	case strings.Contains(err.Error(), "does not match"):
		return tls.Certificate{}, &KeyPairError{KeyFile: true, Problem: "holds a private key that does not match the certificate: " + keyFile}
	case strings.Contains(err.Error(), "x509:"):
		return tls.Certificate{}, &KeyPairError{Problem: "holds a certificate that cannot be parsed: " + certFile}
	}
	return tls.Certificate{}, &KeyPairError{KeyFile: true, Problem: "holds a private key that cannot be used: " + keyFile}
}

func readPEMFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEMFile+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("is larger than %d KiB: %s", maxPEMFile>>10, path)
	}
	return b, nil
}

func hasPEM(b []byte, want func(typ string) bool) bool {
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return false
		}
		if want(block.Type) {
			return true
		}
	}
}

// TLSConfig is the server side of a listener serving the pair in certFile
// and keyFile, TLS 1.2 at least. The pair is read now, and again at a
// handshake after either file changed (cert-manager renews a Secret, the
// kubelet swaps the mounted files): a renewed certificate needs no restart.
// A pair that fails to load then is logged once and the previous one kept.
func TLSConfig(certFile, keyFile string, log *slog.Logger) (*tls.Config, error) {
	r := &certFiles{files: [2]string{certFile, keyFile}, log: log}
	if err := r.reload(r.stamps()); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get}, nil
}

// stamp tells a file's versions apart: the kubelet replaces the file (a
// new inode behind the symlink), an editor rewrites it (a new mtime).
type stamp struct {
	info os.FileInfo
	err  error
}

func (s stamp) same(o stamp) bool {
	if s.err != nil || o.err != nil {
		return s.err != nil && o.err != nil
	}
	return os.SameFile(s.info, o.info) && s.info.ModTime().Equal(o.info.ModTime()) && s.info.Size() == o.info.Size()
}

type certFiles struct {
	files [2]string // certificate, key
	log   *slog.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	loaded [2]stamp // the files the serving pair came from
	failed [2]stamp // the files whose load failed last, logged once
}

func (r *certFiles) stamps() [2]stamp {
	var s [2]stamp
	for i, f := range r.files {
		s[i].info, s[i].err = os.Stat(f)
	}
	return s
}

func same(a, b [2]stamp) bool { return a[0].same(b[0]) && a[1].same(b[1]) }

func (r *certFiles) reload(now [2]stamp) error {
	cert, err := LoadKeyPair(r.files[0], r.files[1])
	if err != nil {
		return err
	}
	r.cert, r.loaded = &cert, now
	return nil
}

func (r *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := r.stamps()
	r.mu.Lock()
	defer r.mu.Unlock()
	if same(now, r.loaded) || same(now, r.failed) {
		return r.cert, nil
	}
	if err := r.reload(now); err != nil {
		// Half-written or mismatched while being replaced: serve the
		// previous pair until the files change again.
		r.failed = now
		r.log.Warn("TLS pair not reloaded, the previous one still serves", "cert", r.files[0], "key", r.files[1], "err", err)
		return r.cert, nil
	}
	r.failed = [2]stamp{}
	r.log.Info("TLS pair reloaded", "cert", r.files[0], "key", r.files[1], "not_after", r.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return r.cert, nil
}
