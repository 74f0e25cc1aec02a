package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/testkit"
)

// errLines is err's lines, one per bad variable.
func errLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// A listener's TLS is both files or neither, a pair that serves; each
// problem is one line naming the variable of the file at fault.
func TestListenerTLSIsAPairOfReadableFiles(t *testing.T) {
	dir := t.TempDir()
	a := testkit.SelfSigned(t, dir, "a", "localhost")
	b := testkit.SelfSigned(t, dir, "b", "localhost")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := without(full(t), "QUEEN_TLS_CERT_FILE", "QUEEN_TLS_KEY_FILE", "QUEEN_API_TLS_CERT_FILE", "QUEEN_API_TLS_KEY_FILE")
	c, err := load(config.Webhook, base, nil)
	if err != nil || c.TLS.Enabled() || c.APITLS.Enabled() {
		t.Fatalf("neither file: %v, TLS %v/%v; want plain HTTP", err, c.TLS.Enabled(), c.APITLS.Enabled())
	}
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string // the one line
	}{
		{"certificate alone", map[string]string{"QUEEN_API_TLS_CERT_FILE": a.CertFile},
			"QUEEN_API_TLS_KEY_FILE: is required with QUEEN_API_TLS_CERT_FILE"},
		{"key alone", map[string]string{"QUEEN_API_TLS_KEY_FILE": a.KeyFile},
			"QUEEN_API_TLS_CERT_FILE: is required with QUEEN_API_TLS_KEY_FILE"},
		{"unreadable certificate", map[string]string{"QUEEN_API_TLS_CERT_FILE": filepath.Join(dir, "absent.crt"), "QUEEN_API_TLS_KEY_FILE": a.KeyFile},
			"QUEEN_API_TLS_CERT_FILE: cannot be read: open " + filepath.Join(dir, "absent.crt") + ": no such file or directory"},
		{"not a certificate", map[string]string{"QUEEN_API_TLS_CERT_FILE": garbage, "QUEEN_API_TLS_KEY_FILE": a.KeyFile},
			"QUEEN_API_TLS_CERT_FILE: holds no PEM certificate: " + garbage},
		{"not a key", map[string]string{"QUEEN_TLS_CERT_FILE": a.CertFile, "QUEEN_TLS_KEY_FILE": garbage},
			"QUEEN_TLS_KEY_FILE: holds no PEM private key: " + garbage},
		{"another certificate's key", map[string]string{"QUEEN_API_TLS_CERT_FILE": a.CertFile, "QUEEN_API_TLS_KEY_FILE": b.KeyFile},
			"QUEEN_API_TLS_KEY_FILE: holds a private key that does not match the certificate of QUEEN_API_TLS_CERT_FILE: " + b.KeyFile},
	} {
		env := without(base)
		for k, v := range tc.set {
			env[k] = v
		}
		_, err := load(config.Webhook, env, nil)
		if got := errLines(err); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %q, want the one line %q", tc.name, got, tc.want)
		}
	}
	// Both listeners wrong: both lines at once, as every other error.
	env := without(base)
	env["QUEEN_TLS_CERT_FILE"], env["QUEEN_API_TLS_KEY_FILE"] = a.CertFile, a.KeyFile
	var es config.Errors
	if _, err := load(config.Webhook, env, nil); !errors.As(err, &es) || len(es) != 2 ||
		es[0].Var != "QUEEN_TLS_KEY_FILE" || es[1].Var != "QUEEN_API_TLS_CERT_FILE" {
		t.Errorf("both listeners half set: %v, want a line for each", err)
	}
	env["QUEEN_TLS_KEY_FILE"], env["QUEEN_API_TLS_CERT_FILE"] = a.KeyFile, a.CertFile
	c, err = load(config.Webhook, env, nil)
	if err != nil || c.TLS.CertFile != a.CertFile || c.APITLS.KeyFile != a.KeyFile || !c.APITLS.Enabled() {
		t.Errorf("good pairs: %v, %+v %+v", err, c.TLS, c.APITLS)
	}
	// The worker serves no claims API: it does not read them.
	if _, err := load(config.Worker, map[string]string{}, func(k string) string {
		if strings.Contains(k, "TLS_") {
			t.Errorf("the worker reads %s", k)
		}
		return base[k]
	}); err != nil {
		t.Fatal(err)
	}
}

// queenctl takes plain http:// where it never leaves the host or the
// cluster: loopback (kubectl port-forward) and the Service's cluster-local
// name NOTES.txt prints. Nowhere else, and for no other URL.
func TestQueenAPIURLTakesHTTPOnlyOnLoopbackAndInTheCluster(t *testing.T) {
	base := map[string]string{"QUEEN_API_TOKEN": "api-token-0123456789"}
	for url, ok := range map[string]bool{
		"http://127.0.0.1:8081":                           true,
		"http://localhost:8081":                           true,
		"http://[::1]:8081":                               true,
		"http://q-queen-app-api.queen.svc:8081":           true,
		"http://q-queen-app-api.queen.svc.:8081":          true,
		"http://Q-Queen-App-API.queen.SVC.cluster.local":  true,
		"https://queen-api.example.com":                   true,
		"http://queen-api.example.com:8081":               false,
		"http://svc:8081":                                 false,
		"http://queen.svc:8081":                           false,
		"http://a.b.queen.svc:8081":                       false,
		"http://api.queen.svc.example.com:8081":           false,
		"http://api.queen.svc.cluster.local.evil.example": false,
		"http://api..svc:8081":                            false,
	} {
		env := without(base)
		env["QUEEN_API_URL"] = url
		c, err := load(config.CLI, env, nil)
		switch {
		case ok && (err != nil || c.QueenAPI != url):
			t.Errorf("%s: %v, want it taken", url, err)
		case !ok && (err == nil || !strings.HasPrefix(err.Error(), "QUEEN_API_URL: must be https:// unless on loopback or a cluster-local Service")):
			t.Errorf("%s: %v, want it refused naming QUEEN_API_URL", url, err)
		}
		env["QUEEN_ALLOW_INSECURE_URLS"] = "on"
		if _, err := load(config.CLI, env, nil); err != nil {
			t.Errorf("%s with QUEEN_ALLOW_INSECURE_URLS=on: %v", url, err)
		}
	}
	// A GitHub URL at a cluster-local name is still refused: GitHub's
	// traffic has no reason to be clear.
	env := without(full(t))
	env["GITHUB_API_URL"] = "http://ghe.corp.svc/api/v3/"
	if _, err := load(config.Worker, env, nil); err == nil || !strings.HasPrefix(err.Error(), "GITHUB_API_URL: must be https:// unless on loopback (or set") {
		t.Errorf("GITHUB_API_URL at a .svc name over http: %v, want refused", err)
	}
}

func TestCAFileMustHoldACertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testkit.SelfSigned(t, dir, "ca", "localhost")
	base := map[string]string{"QUEEN_API_TOKEN": "api-token-0123456789", "QUEEN_API_URL": "https://localhost:8081"}
	env := without(base)
	env["QUEEN_CA_FILE"] = ca.CertFile
	c, err := load(config.CLI, env, nil)
	if err != nil || string(c.QueenCA) != string(ca.PEM) {
		t.Fatalf("a CA file: %v", err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "absent.pem"): "QUEEN_CA_FILE: cannot be read: " + filepath.Join(dir, "absent.pem"),
		ca.KeyFile:                       "QUEEN_CA_FILE: holds no PEM certificate: " + ca.KeyFile,
	} {
		env["QUEEN_CA_FILE"] = path
		if _, err := load(config.CLI, env, nil); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("QUEEN_CA_FILE=%s: %v, want %q", path, err, want)
		}
	}
}
