package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/sandbox"
	"github.com/queen-app/queen-app/internal/testkit"
)

// rename moves c's files over certFile and keyFile, as the kubelet swaps
// a renewed Secret's files.
func renameCert(t *testing.T, c testkit.Cert, certFile, keyFile string) {
	t.Helper()
	for from, to := range map[string]string{c.CertFile: certFile, c.KeyFile: keyFile} {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
}

// The built webhook serves the claims API over HTTPS with the pair of
// QUEEN_API_TLS_CERT_FILE/_KEY_FILE; queenctl reaches it with QUEEN_CA_FILE
// trusting the private CA (and not without); a renewed pair is served
// without a restart.
func TestWebhookServesTheClaimsAPIOverTLS(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.Start(sandbox.Options{Dir: t.TempDir(), Repo: repo, Installation: instID, ExportToken: exToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := testkit.SelfSigned(t, dir, "first", "localhost", "127.0.0.1")
	renameCert(t, first, certFile, keyFile)

	api := freeAddr(t)
	_, port, _ := net.SplitHostPort(api)
	env := mergedEnv(sb.GitHubEnv(), map[string]string{
		"GITHUB_WEBHOOK_SECRET": secret, "QUEEN_API_TOKEN": apiToken, "QUEEN_REDIS_URL": redistest.Start(t).URL(),
		"QUEEN_LISTEN": freeAddr(t), "QUEEN_API_LISTEN": api,
		"QUEEN_API_TLS_CERT_FILE": certFile, "QUEEN_API_TLS_KEY_FILE": keyFile,
	})
	p := start(t, "webhook", env)

	pool := x509.NewCertPool()
	pool.AddCert(first.Cert)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://localhost:" + port
	eventually(t, 20*time.Second, "the claims API answers over https", func() bool {
		if ok, code := p.exited(); ok {
			t.Fatalf("webhook exited with %d:\n%s", code, p.out.String())
		}
		req, _ := http.NewRequest("GET", base+"/v1/claims?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+apiToken)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if resp, err := hc.Get(base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /healthz over https: %v", err)
	} else {
		resp.Body.Close()
	}
	// Plain http on the TLS port carries no token anywhere.
	if resp, err := http.Get("http://" + api + "/healthz"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain http on the TLS port: %d %s", resp.StatusCode, b)
		}
	}

	ctl := map[string]string{"QUEEN_API_URL": base, "QUEEN_API_TOKEN": apiToken, "QUEEN_CA_FILE": writeFile(t, "ca.crt", string(first.PEM))}
	if code, out, errOut := runArgs(t, "queenctl", ctl, "claims", "list"); code != 0 {
		t.Errorf("queenctl claims list with QUEEN_CA_FILE: exit %d\n%s%s", code, out, errOut)
	}
	delete(ctl, "QUEEN_CA_FILE")
	if code, _, errOut := runArgs(t, "queenctl", ctl, "claims", "list"); code != 1 || !strings.Contains(errOut, "certificate") {
		t.Errorf("queenctl without QUEEN_CA_FILE: exit %d, %q; want refused for the unknown authority", code, errOut)
	}

	// cert-manager renews: the new pair serves at the next handshake.
	second := testkit.SelfSigned(t, dir, "second", "localhost", "127.0.0.1")
	pool.AddCert(second.Cert)
	renameCert(t, second, certFile, keyFile)
	conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("handshake after renewal: %v", err)
	}
	served := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if !served.Equal(second.Cert) {
		t.Errorf("after renewal the webhook serves %q, want the renewed certificate", served.Subject.CommonName)
	}
	// The log line travels through the process's pipe after the handshake.
	eventually(t, 10*time.Second, "the reload is logged", func() bool {
		return strings.Contains(p.out.String(), "TLS pair reloaded")
	})
}

// A bad pair stops the webhook at start, exit 2, one line naming the
// variable of the file at fault.
func TestWebhookRefusesABadTLSPairNamingTheVariable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := testkit.SelfSigned(t, dir, "a", "localhost")
	b := testkit.SelfSigned(t, dir, "b", "localhost")
	base := map[string]string{
		"QUEEN_REDIS_URL": "redis://127.0.0.1:1/0", "GITHUB_APP_ID": "1",
		"GITHUB_WEBHOOK_SECRET": secret, "QUEEN_API_TOKEN": apiToken,
		"GITHUB_APP_PRIVATE_KEY_FILE": writeFile(t, "app.pem", anotherKey(t)),
	}
	for _, tc := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"QUEEN_API_TLS_CERT_FILE": a.CertFile, "QUEEN_API_TLS_KEY_FILE": b.KeyFile},
			"webhook: QUEEN_API_TLS_KEY_FILE: holds a private key that does not match the certificate of QUEEN_API_TLS_CERT_FILE: " + b.KeyFile + "\n"},
		{map[string]string{"QUEEN_API_TLS_CERT_FILE": a.CertFile},
			"webhook: QUEEN_API_TLS_KEY_FILE: is required with QUEEN_API_TLS_CERT_FILE\n"},
		{map[string]string{"QUEEN_TLS_CERT_FILE": a.KeyFile, "QUEEN_TLS_KEY_FILE": a.KeyFile},
			"webhook: QUEEN_TLS_CERT_FILE: holds no PEM certificate: " + a.KeyFile + "\n"},
	} {
		code, out, errOut := runEnv(t, "webhook", mergedEnv(base, tc.set))
		if code != 2 || out != "" || errOut != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.set, code, out, errOut, tc.want)
		}
	}
}

// queenctl takes the in-cluster URL NOTES.txt prints without
// QUEEN_ALLOW_INSECURE_URLS: outside the cluster the name does not
// resolve, and the error says where it looked; any other http:// host is
// refused before a request.
func TestQueenctlTakesTheClusterLocalURLNotesPrint(t *testing.T) {
	t.Parallel()
	env := map[string]string{"QUEEN_API_TOKEN": apiToken, "QUEEN_API_URL": "http://q-queen-app-api.queen.svc.cluster.local:8081"}
	code, _, errOut := runArgs(t, "queenctl", env, "claims", "list")
	if code != 1 || !strings.Contains(errOut, "cannot reach the claims API at QUEEN_API_URL=http://q-queen-app-api.queen.svc.cluster.local:8081") {
		t.Errorf("the cluster-local URL: exit %d, %q; want it taken and the lookup to fail", code, errOut)
	}
	env["QUEEN_API_URL"] = "http://queen-api.example.com:8081"
	code, _, errOut = runArgs(t, "queenctl", env, "claims", "list")
	if code != 2 || !strings.Contains(errOut, "QUEEN_API_URL: must be https:// unless on loopback or a cluster-local Service") {
		t.Errorf("a public http:// URL: exit %d, %q; want refused naming QUEEN_API_URL", code, errOut)
	}
}
