package apiclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
)

// Transport is the HTTP transport of a client of an https:// API whose
// certificate a private CA signed: Go's default transport trusting the PEM
// certificates in ca beside the system's. With no ca it is
// http.DefaultTransport itself.
func Transport(ca []byte) (http.RoundTripper, error) {
	if len(ca) == 0 {
		return http.DefaultTransport, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system store: the CA alone
	}
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("holds no PEM certificate")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = t.TLSClientConfig.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = new(tls.Config)
	}
	t.TLSClientConfig.RootCAs = pool
	return t, nil
}
