package githubapp_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

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

func TestCredentialsFailWhileGitHubRefusesOnly(t *testing.T) {
	s := githubtest.New(t)
	ctx := context.Background()
	ok := githubapp.NewCredentials(appWith(t, s, s.AppID(), s.Key()))
	if err := ok.Check(ctx); err != nil || ok.State() != githubapp.AppAccepted {
		t.Fatalf("the App's own key: %v (%s)", err, ok.State())
	}
	creds := githubapp.NewCredentials(appWith(t, s, s.AppID(), otherKey(t)))
	if creds.State() != githubapp.AppUnknown {
		t.Fatalf("state %s before any check, want unknown", creds.State())
	}
	err := creds.Check(ctx)
	var w interface{ Word() string }
	if !errors.Is(err, githubapp.ErrRefused) || !errors.As(err, &w) || w.Word() != "refused" || creds.State() != githubapp.AppRefused {
		t.Fatalf("a wrong key: %v (%s), want ErrRefused with the word refused", err, creds.State())
	}
	// GitHub away says nothing of the key: the refusal stands.
	s.Down(true)
	if err := creds.Check(ctx); !errors.Is(err, githubapp.ErrRefused) {
		t.Fatalf("GitHub down after a refusal: %v, want the refusal to stand", err)
	}
}

// GitHub unreachable with no refusal standing is ready but degraded:
// unreachable, with its state for the metric, never refused.
func TestCredentialsUnreachableIsDegradedNotRefused(t *testing.T) {
	s := githubtest.New(t)
	ctx := context.Background()
	s.Down(true)
	creds := githubapp.NewCredentials(appWith(t, s, s.AppID(), otherKey(t)))
	err := creds.Check(ctx)
	var d interface{ Degraded() bool }
	var w interface{ Word() string }
	if errors.Is(err, githubapp.ErrRefused) || !errors.As(err, &d) || !d.Degraded() || !errors.As(err, &w) ||
		w.Word() != "unreachable" || creds.State() != githubapp.AppUnreachable {
		t.Fatalf("GitHub down, no verdict yet: %v (%s), want degraded unreachable", err, creds.State())
	}
	// WaitTaken does not wait on an outage: the ready line says it instead.
	if err := creds.WaitTaken(ctx, time.Millisecond, slog.New(slog.DiscardHandler)); !errors.As(err, &d) {
		t.Fatalf("WaitTaken while unreachable: %v, want the unreachable error at once", err)
	}
}
