package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/testkit"
)

// A newcomer with nothing set learns every required variable in one run,
// a line each, not one per attempt.
func TestNothingSetListsEveryRequiredVariable(t *testing.T) {
	for role, want := range map[Role][]string{
		Webhook: {"QUEEN_REDIS_URL", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_FILE", "GITHUB_WEBHOOK_SECRET", "QUEEN_API_TOKEN"},
		Worker:  {"QUEEN_REDIS_URL", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_FILE"},
	} {
		_, err := Load(role, env(map[string]string{}))
		if err == nil {
			t.Fatalf("%v loaded with nothing set", role)
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(want) {
			t.Errorf("%v with nothing set: %d lines, want %d:\n%v", role, len(lines), len(want), err)
		}
		for i, name := range want {
			if i < len(lines) && !strings.HasPrefix(lines[i], name+": ") {
				t.Errorf("%v line %d: %q, want it to name %s", role, i+1, lines[i], name)
			}
		}
		var bad *Error
		if !errors.As(err, &bad) || bad.Var != want[0] {
			t.Errorf("%v: errors.As finds %v, want the first, %s", role, bad, want[0])
		}
	}
}

// Malformed values of several variables are all reported, one line each,
// beside the missing ones.
func TestEveryMalformedVariableIsListed(t *testing.T) {
	m := base()
	m["QUEEN_FREE_CLOSED_PR"] = "maybe"
	m["QUEEN_LISTEN"] = ":abc"
	m["GITHUB_APP_ID"] = "x"
	m["QUEEN_BASE_BRANCH"] = "a..b"
	m["QUEEN_API_TOKEN"] = "short"
	m["QUEEN_SWEEP_INTERVAL"] = "soon"
	delete(m, "GITHUB_WEBHOOK_SECRET")
	_, err := Load(Webhook, env(m))
	if err == nil {
		t.Fatal("loaded")
	}
	got := map[string]int{}
	for _, l := range strings.Split(err.Error(), "\n") {
		name, _, _ := strings.Cut(l, ": ")
		got[name]++
	}
	for _, name := range []string{"QUEEN_FREE_CLOSED_PR", "QUEEN_LISTEN", "GITHUB_APP_ID", "QUEEN_BASE_BRANCH",
		"QUEEN_API_TOKEN", "QUEEN_SWEEP_INTERVAL", "GITHUB_WEBHOOK_SECRET"} {
		if got[name] != 1 {
			t.Errorf("%s named %d times in\n%v", name, got[name], err)
		}
	}
	if len(got) != 7 {
		t.Errorf("%d variables named, want 7:\n%v", len(got), err)
	}
}

// A refused *_FILE is the one line about its secret: no "is required"
// for the variable it stands for.
func TestRefusedSecretFileIsItsOnlyLine(t *testing.T) {
	m := base()
	delete(m, "QUEEN_API_TOKEN")
	m["QUEEN_API_TOKEN_FILE"] = filepath.Join(t.TempDir(), "missing")
	_, err := Load(Webhook, env(m))
	if err == nil || err.Error() != "QUEEN_API_TOKEN_FILE: cannot be read: "+m["QUEEN_API_TOKEN_FILE"]+" no such file or directory" {
		t.Errorf("got %v", err)
	}
}

func TestJoin(t *testing.T) {
	a, b := &Error{"A", "bad"}, &Error{"B", "bad"}
	other := errors.New("no variable")
	if Join() != nil || Join(nil, nil) != nil {
		t.Error("Join of nothing is not nil")
	}
	if Join(nil, a) != a {
		t.Error("Join of one *Error is not it")
	}
	if Join(other) != other {
		t.Error("Join of an error naming no variable is not it")
	}
	if got := Join(a, other, Errors{b, &Error{"A", "again"}}); got.Error() != "A: bad\nB: bad" {
		t.Errorf("Join: %q", got)
	}
}

// Both the key file and the inline key is refused, as two Redis passwords
// are: which one is meant is not for us to guess.
func TestBothAppKeysAreRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(path, []byte(keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	m := base()
	m["GITHUB_APP_PRIVATE_KEY_FILE"] = path
	for _, role := range []Role{Webhook, Worker} {
		_, err := Load(role, env(m))
		if err == nil || err.Error() != "GITHUB_APP_PRIVATE_KEY_FILE: is set and so is GITHUB_APP_PRIVATE_KEY: give the key in one place" {
			t.Errorf("%v: %v", role, err)
		}
	}
	if _, err := LoadApp(env(m)); err == nil || !strings.HasPrefix(err.Error(), "GITHUB_APP_PRIVATE_KEY_FILE: is set and so is") {
		t.Errorf("LoadApp: %v", err)
	}
}

// The public half of a key pair gets its own message naming the variable.
func TestPublicKeyHasItsOwnMessage(t *testing.T) {
	pemPub := testkit.PublicKeyPEM(t)
	rsaPub := strings.ReplaceAll(pemPub, "PUBLIC KEY", "RSA PUBLIC KEY")
	ssh := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl op@laptop\n"
	dir := t.TempDir()
	for _, key := range []string{pemPub, rsaPub, ssh} {
		m := base()
		m["GITHUB_APP_PRIVATE_KEY"] = key
		_, err := Load(Webhook, env(m))
		if err == nil || !strings.HasPrefix(err.Error(), "GITHUB_APP_PRIVATE_KEY: is a public key; ") || !strings.Contains(err.Error(), ".pem") {
			t.Errorf("inline %.20q: %v", key, err)
		}
		path := filepath.Join(dir, "key.pub")
		if err := os.WriteFile(path, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		delete(m, "GITHUB_APP_PRIVATE_KEY")
		m["GITHUB_APP_PRIVATE_KEY_FILE"] = path
		if _, err := Load(Worker, env(m)); err == nil || !strings.HasPrefix(err.Error(), "GITHUB_APP_PRIVATE_KEY_FILE: is a public key; ") {
			t.Errorf("file %.20q: %v", key, err)
		}
	}
	// A private key that is not RSA keeps the general message.
	m := base()
	m["GITHUB_APP_PRIVATE_KEY"] = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n-----END OPENSSH PRIVATE KEY-----\n"
	if _, err := Load(Webhook, env(m)); err == nil || err.Error() != "GITHUB_APP_PRIVATE_KEY: is not a PEM-encoded RSA private key" {
		t.Errorf("an ssh private key: %v", err)
	}
}
