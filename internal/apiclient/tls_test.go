package apiclient_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/apiclient"
)

// An API behind a private CA is reached once its certificate is trusted
// (QUEEN_CA_FILE), and refused before.
func TestTransportTrustsTheGivenCA(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"claims":[]}`))
	}))
	defer ts.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	for _, trusted := range []bool{false, true} {
		var pemCA []byte
		if trusted {
			pemCA = ca
		}
		rt, err := apiclient.Transport(pemCA)
		if err != nil {
			t.Fatal(err)
		}
		c, err := apiclient.New(ts.URL, "token-0123456789abcdef", &http.Client{Transport: rt})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.List(context.Background(), apiclient.ListOptions{Limit: 1})
		switch {
		case trusted && err != nil:
			t.Errorf("with the CA: %v", err)
		case !trusted && (err == nil || !strings.Contains(err.Error(), "certificate")):
			t.Errorf("without the CA: %v, want the unknown authority refused", err)
		}
	}
	if _, err := apiclient.Transport([]byte("not pem")); err == nil {
		t.Error("a CA file with no certificate was taken")
	}
}
