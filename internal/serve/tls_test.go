package serve_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/testkit"
)

// install puts c's files at the paths the server reads, by rename as the
// kubelet swaps a Secret's files.
func install(t *testing.T, c testkit.Cert, certFile, keyFile string) {
	t.Helper()
	if err := os.Rename(c.CertFile, certFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(c.KeyFile, keyFile); err != nil {
		t.Fatal(err)
	}
}

// servedCert is the certificate a client trusting pool is shown at addr.
func servedCert(t *testing.T, addr string, pool *x509.CertPool) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// A renewed pair is served without a restart; a broken one is refused
// with the previous pair still serving; TLS below 1.2 is refused.
func TestTLSListenerReloadsItsPairWhenTheFilesChange(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := testkit.SelfSigned(t, dir, "first", "localhost")
	install(t, first, certFile, keyFile)
	var logs testkit.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	cfg, err := serve.TLSConfig(certFile, keyFile, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.NewServer(ln.Addr().String(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}), log)
	srv.TLSConfig = cfg
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.RunListener(ctx, srv, ln, log) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := ln.Addr().String()

	pool := x509.NewCertPool()
	pool.AddCert(first.Cert)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get("https://localhost:" + strings.Split(addr, ":")[1] + "/")
	if err != nil {
		t.Fatalf("GET over https: %v", err)
	}
	resp.Body.Close()
	if got := servedCert(t, addr, pool); !got.Equal(first.Cert) {
		t.Fatalf("serves %v, want the first certificate", got.Subject)
	}

	second := testkit.SelfSigned(t, dir, "second", "localhost")
	pool.AddCert(second.Cert)
	install(t, second, certFile, keyFile)
	if got := servedCert(t, addr, pool); !got.Equal(second.Cert) {
		t.Fatalf("after renewal serves %v, want the second certificate", got.Subject)
	}

	// A certificate whose key has not arrived yet: the second pair serves on.
	third := testkit.SelfSigned(t, dir, "third", "localhost")
	pool.AddCert(third.Cert)
	if err := os.Rename(third.CertFile, certFile); err != nil {
		t.Fatal(err)
	}
	if got := servedCert(t, addr, pool); !got.Equal(second.Cert) {
		t.Fatalf("with a mismatched key serves %v, want the second certificate kept", got.Subject)
	}
	if !strings.Contains(logs.String(), "TLS pair not reloaded") || !strings.Contains(logs.String(), "does not match") {
		t.Errorf("the refused pair is not logged:\n%s", logs.String())
	}
	if err := os.Rename(third.KeyFile, keyFile); err != nil {
		t.Fatal(err)
	}
	if got := servedCert(t, addr, pool); !got.Equal(third.Cert) {
		t.Fatalf("once the key arrived serves %v, want the third certificate", got.Subject)
	}

	old, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err == nil {
		old.Close()
		t.Error("a TLS 1.1 client was served")
	}
}

func TestLoadKeyPairNamesTheFileAtFault(t *testing.T) {
	dir := t.TempDir()
	a := testkit.SelfSigned(t, dir, "a", "localhost")
	b := testkit.SelfSigned(t, dir, "b", "localhost")
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := serve.LoadKeyPair(a.CertFile, a.KeyFile); err != nil {
		t.Fatalf("a good pair: %v", err)
	}
	for _, c := range []struct {
		name, cert, key string
		keyFile         bool
		problem         string
	}{
		{"missing certificate", filepath.Join(dir, "absent"), a.KeyFile, false, "cannot be read"},
		{"missing key", a.CertFile, filepath.Join(dir, "absent"), true, "cannot be read"},
		{"not a certificate", garbage, a.KeyFile, false, "holds no PEM certificate"},
		{"key as certificate", a.KeyFile, a.KeyFile, false, "holds no PEM certificate"},
		{"not a key", a.CertFile, garbage, true, "holds no PEM private key"},
		{"certificate as key", a.CertFile, a.CertFile, true, "holds no PEM private key"},
		{"another's key", a.CertFile, b.KeyFile, true, "does not match the certificate"},
	} {
		_, err := serve.LoadKeyPair(c.cert, c.key)
		var kp *serve.KeyPairError
		if !errors.As(err, &kp) || kp.KeyFile != c.keyFile || !strings.Contains(kp.Problem, c.problem) {
			t.Errorf("%s: %v, want the %s file named with %q", c.name, err, map[bool]string{true: "key", false: "certificate"}[c.keyFile], c.problem)
		}
	}
}
