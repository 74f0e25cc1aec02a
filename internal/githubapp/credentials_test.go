package githubapp_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// otherKey is a private key GitHub never saw: an App key from another App
// or a rotated-out one.
func otherKey(t *testing.T) []byte {
	t.Helper()
	return []byte(testkit.RSAKeyPEM(t, 2048))
}

func appWith(t *testing.T, s *githubtest.Server, id int64, key []byte) *githubapp.App {
	t.Helper()
	a, err := githubapp.New(githubapp.Config{AppID: id, PrivateKey: key, APIURL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestIdentifyReadsTheAppAndARefusalNamesTheVariables(t *testing.T) {
	s := githubtest.New(t)
	s.AddInstallation(inst, "hive", repo)
	id, err := appWith(t, s, s.AppID(), s.Key()).Identify(context.Background())
	if err != nil || id.ID != s.AppID() || id.Slug == "" {
		t.Fatalf("Identify with the App's own key: %+v, %v", id, err)
	}
	for name, a := range map[string]*githubapp.App{
		"another key":    appWith(t, s, s.AppID(), otherKey(t)),
		"another App id": appWith(t, s, s.AppID()+1, s.Key()),
	} {
		_, err := a.Identify(context.Background())
		if !errors.Is(err, githubapp.ErrRefused) || githubapp.Classify(err) != githubapp.Permanent {
			t.Fatalf("%s: Identify: %v (%v); want ErrRefused, permanent", name, err, githubapp.Classify(err))
		}
		for _, v := range []string{"GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_FILE", "401"} {
			if !strings.Contains(err.Error(), v) {
				t.Errorf("%s: %q does not name %s", name, err, v)
			}
		}
		// The installation sync's calls say the same, so its log names them.
		if _, err := a.Installations(context.Background()); !errors.Is(err, githubapp.ErrRefused) {
			t.Errorf("%s: Installations: %v, want ErrRefused", name, err)
		}
		if _, err := a.InstallationToken(context.Background(), inst); !errors.Is(err, githubapp.ErrRefused) {
			t.Errorf("%s: the token mint: %v, want ErrRefused", name, err)
		}
		if _, _, err := a.DeliveriesPage(context.Background(), ""); !errors.Is(err, githubapp.ErrRefused) {
			t.Errorf("%s: deliveries: %v, want ErrRefused", name, err)
		}
	}
}

// A 401 to an installation token is not the App's credentials: the
// token expired or was revoked, and a new mint fixes it.
func TestOnlyTheJWTsRefusalIsCalledRefused(t *testing.T) {
	s, a := setup(t)
	s.FailNext("/app/installations", http.StatusServiceUnavailable, nil, 1)
	if _, err := a.Installations(context.Background()); err == nil || errors.Is(err, githubapp.ErrRefused) {
		t.Fatalf("a 503: %v, want an error that is not ErrRefused", err)
	}
	s.FailNext("/installation/repositories", http.StatusUnauthorized, nil, 1)
	if _, err := a.InstallationRepos(context.Background(), inst); err == nil || errors.Is(err, githubapp.ErrRefused) {
		t.Fatalf("an installation token's 401: %v, want an error that is not ErrRefused", err)
	}
}

func TestCredentialsCheckFailsWhileGitHubRefusesOnly(t *testing.T) {
	s := githubtest.New(t)
	ctx := context.Background()
	if err := githubapp.CredentialsCheck(appWith(t, s, s.AppID(), s.Key()))(ctx); err != nil {
		t.Fatalf("the App's own key: %v", err)
	}
	check := githubapp.CredentialsCheck(appWith(t, s, s.AppID(), otherKey(t)))
	err := check(ctx)
	var w interface{ Word() string }
	if !errors.Is(err, githubapp.ErrRefused) || !errors.As(err, &w) || w.Word() != "refused" {
		t.Fatalf("a wrong key: %v, want ErrRefused with the word refused", err)
	}
	// GitHub away is no verdict: the refusal stands, and a first check
	// with GitHub away passes (it takes no replica out for an outage).
	s.Down(true)
	if err := check(ctx); !errors.Is(err, githubapp.ErrRefused) {
		t.Fatalf("GitHub down after a refusal: %v, want the refusal to stand", err)
	}
	if err := githubapp.CredentialsCheck(appWith(t, s, s.AppID(), otherKey(t)))(ctx); err != nil {
		t.Fatalf("GitHub down, no verdict yet: %v, want ready", err)
	}
}
