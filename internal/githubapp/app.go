// Package githubapp is queen-app's access to GitHub as a GitHub App: the App
// JWT for app endpoints, one cached installation token per installation, the
// REST and GraphQL reads and writes the worker needs, webhook redelivery, and
// the classification of GitHub errors into retry, rate-limited and permanent.
package githubapp

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/queen-app/queen-app/internal/redact"
	"github.com/queen-app/queen-app/internal/redirect"
)

// DefaultAPIURL is the REST base of github.com.
const DefaultAPIURL = "https://api.github.com/"

const defaultTimeout = 30 * time.Second

// Config says how to reach GitHub as the App.
type Config struct {
	AppID      int64
	PrivateKey []byte // PEM (PKCS#1 or PKCS#8 RSA)
	// APIURL is the REST base, used verbatim (an Enterprise user gives the
	// full base, e.g. https://ghe.example/api/v3/). Default DefaultAPIURL.
	APIURL string
	// GraphQLURL defaults to one derived from APIURL: api.github.com's
	// /graphql, an Enterprise .../api/v3/'s .../api/graphql, else APIURL+"graphql".
	GraphQLURL string
	// HTTPClient supplies the base transport and timeout (default
	// http.DefaultTransport and 30s).
	HTTPClient *http.Client
	UserAgent  string  // default "queen-app"
	Metrics    Metrics // optional
	// Now is the clock of the installations' rate-limit holds (default
	// time.Now); GitHub's resets are wall-clock times.
	Now func() time.Time
}

// App talks to GitHub as the App and as its installations. It is safe for
// concurrent use; keep one per process so installation tokens are reused.
type App struct {
	appID      int64
	key        *rsa.PrivateKey
	api        *url.URL
	graphqlURL string
	base       http.RoundTripper
	timeout    time.Duration
	userAgent  string
	appClient  *github.Client
	now        func() time.Time

	mu       sync.Mutex
	installs map[int64]*installation
}

// installation holds the one token transport of an installation and the
// clients built on it, so its token is minted once and reused until expiry.
type installation struct {
	tr     *ghinstallation.Transport
	http   *http.Client
	gh     *github.Client
	limits *limits
}

// New checks cfg and builds the App. Errors name the field, never the key.
func New(cfg Config) (*App, error) {
	if cfg.AppID <= 0 {
		return nil, errors.New("githubapp: AppID must be a positive App id")
	}
	key, err := ParsePrivateKey(cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("githubapp: PrivateKey: %w", err)
	}
	apiURL := cfg.APIURL
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/" // go-github requires it; the path itself is kept
	}
	api, err := parseBase(apiURL)
	if err != nil {
		return nil, fmt.Errorf("githubapp: APIURL: %v", err)
	}
	gql := cfg.GraphQLURL
	if gql == "" {
		gql = GraphQLURLFor(api.String())
	}
	if _, err := parseBase(gql); err != nil {
		return nil, fmt.Errorf("githubapp: GraphQLURL: %v", err)
	}
	a := &App{
		appID:      cfg.AppID,
		key:        key,
		api:        api,
		graphqlURL: gql,
		base:       http.DefaultTransport,
		timeout:    defaultTimeout,
		userAgent:  cfg.UserAgent,
		installs:   map[int64]*installation{},
		now:        cfg.Now,
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.userAgent == "" {
		a.userAgent = "queen-app"
	}
	if c := cfg.HTTPClient; c != nil {
		if c.Transport != nil {
			a.base = c.Transport
		}
		if c.Timeout > 0 {
			a.timeout = c.Timeout
		}
	}
	a.base = &wire{next: a.base, userAgent: a.userAgent, metrics: cfg.Metrics}
	a.appClient = a.newGitHub(a.client(a.appsTransport()))
	return a, nil
}

// APIURL is the REST base in use.
func (a *App) APIURL() string { return a.api.String() }

// GraphQLURL is the GraphQL endpoint in use.
func (a *App) GraphQLURL() string { return a.graphqlURL }

// ParsePrivateKey reads an App's private key: PEM, RSA, PKCS#1 or PKCS#8, as
// GitHub issues them. Its error never quotes the key.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	if len(pemBytes) == 0 {
		return nil, errors.New("is empty")
	}
	bad := errors.New("is not a PEM-encoded RSA private key")
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, bad
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, bad
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, bad
	}
	return rk, nil
}

// GraphQLURLFor derives the GraphQL endpoint from a REST base: GitHub's own,
// an Enterprise /api/v3/ base, or the base plus "graphql".
func GraphQLURLFor(api string) string {
	switch {
	case api == "":
		return ""
	case strings.HasPrefix(api, "https://api.github.com"):
		return "https://api.github.com/graphql"
	case strings.HasSuffix(strings.TrimSuffix(api, "/"), "/api/v3"):
		return strings.TrimSuffix(strings.TrimSuffix(api, "/"), "/v3") + "/graphql"
	default:
		return strings.TrimSuffix(api, "/") + "/graphql"
	}
}

func parseBase(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", s)
	}
	return u, nil
}

// appsTransport signs requests with a fresh App JWT. Each installation gets
// its own: ghinstallation's token refresh writes to the AppsTransport it was
// built from, which would race between installations sharing one.
func (a *App) appsTransport() *ghinstallation.AppsTransport {
	atr := ghinstallation.NewAppsTransportFromPrivateKey(a.base, a.appID, a.key)
	atr.BaseURL = a.api.String()
	atr.Client = a.client(a.base)
	return atr
}

// client is an http.Client over tr that follows a redirect only within the
// origin of the request (redirect.Check): an answer from elsewhere decides
// nothing.
func (a *App) client(tr http.RoundTripper) *http.Client {
	return &http.Client{Transport: tr, Timeout: a.timeout, CheckRedirect: redirect.Check}
}

func (a *App) newGitHub(hc *http.Client) *github.Client {
	c := github.NewClient(hc)
	base := *a.api
	c.BaseURL = &base
	upload := *a.api
	c.UploadURL = &upload
	c.UserAgent = a.userAgent
	return c
}

// installation returns the cached clients of an installation, creating them
// on first use.
func (a *App) installation(id int64) (*installation, error) {
	if id <= 0 {
		return nil, fmt.Errorf("githubapp: installation id %d is not positive", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if in, ok := a.installs[id]; ok {
		return in, nil
	}
	tr := ghinstallation.NewFromAppsTransport(a.appsTransport(), id)
	tr.BaseURL = a.api.String()
	tr.Client = a.client(a.base)
	// Nil options are sent as a JSON null; GitHub documents an object.
	tr.InstallationTokenOptions = &github.InstallationTokenOptions{}
	lim := &limits{now: a.now, until: map[string]time.Time{}}
	hc := a.client(&gate{next: tr, limits: lim})
	in := &installation{tr: tr, http: hc, gh: a.newGitHub(hc), limits: lim}
	a.installs[id] = in
	return in, nil
}

// fail wraps err with the operation. A failed token mint arrives as
// ghinstallation's HTTPError holding an unread response: it is read (capped),
// closed and turned into go-github's typed error so Classify sees the status
// and rate-limit headers.
func fail(op string, err error) error {
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil && he.Response.StatusCode/100 != 2 {
		resp := he.Response
		body := resp.Body
		if body == nil {
			body = http.NoBody
		}
		resp.Body = io.NopCloser(io.LimitReader(body, 64<<10))
		cerr := github.CheckResponse(resp)
		body.Close()
		he.Response = nil
		if cerr != nil {
			// The mint is signed with the App's JWT.
			err = fmt.Errorf("installation %d token: %w", he.InstallationID, refusedIf(cerr))
		}
	}
	return &opError{op: op, err: err}
}

// opError is a failed GitHub call. Its text is scrubbed of credentials:
// GitHub's error bodies are quoted into it and may echo a token.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return "githubapp: " + e.op + ": " + redact.String(e.err.Error()) }
func (e *opError) Unwrap() error { return e.err }
