// Package config reads queen-app's settings from the environment, as
// docs/install.md and docs/design.md describe them. Every missing or malformed
// value is one line naming its variable, all of them at once (Errors), so a
// newcomer fixes the whole environment in one pass.
package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/serve"
)

// Role says which binary is loading: each needs a different subset.
type Role int

const (
	Webhook Role = iota // receiver + claims API: secret, API token, App, Redis
	Worker              // asynq server: App, Redis, export settings
	CLI                 // queenctl: the API URL and token
)

// Default listen addresses. The worker's health port differs from the
// webhook's API port so both binaries run side by side on one host.
const (
	DefaultListen           = ":8080" // the webhook receiver (QUEEN_LISTEN)
	DefaultWebhookAPIListen = ":8081" // the claims API, health and metrics of webhook
	DefaultWorkerAPIListen  = ":8082" // health and metrics of worker
	DefaultQueenAPI         = "http://127.0.0.1:8081"
)

// MinSecretLen is the fewest characters any secret may have, in every
// binary: shorter ones can be guessed, and each binary's logger masks every
// secret of its environment, so a short one it does not even use (a
// one-character webhook secret in the worker) masks ordinary words in
// every line.
const MinSecretLen = 16

// maxSecretFile bounds what a *_FILE read takes: a secret is a line, and a
// larger file is the wrong file.
const maxSecretFile = 64 << 10

// Config is every setting of the design.
type Config struct {
	RedisURL              string // one of redisconn's three forms
	RedisPassword         string // never logged
	RedisSentinelPassword string // never logged

	AppID             int64
	PrivateKey        []byte // never logged
	WebhookSecret     string // never logged
	WebhookSecretPrev string // accepted while rotating
	APIURL            string
	GraphQLURL        string
	GitURL            string

	Listen    string
	APIListen string
	APIToken  string  // never logged
	UIToken   string  // QUEEN_UI_TOKEN: reads the claims page and GET /v1/*, never writes; never logged
	QueenAPI  string  // where queenctl finds the claims API
	QueenCA   []byte  // PEM certificates queenctl trusts for QueenAPI beyond the system's
	TLS       TLSPair // QUEEN_LISTEN's certificate, webhook only
	APITLS    TLSPair // QUEEN_API_LISTEN's certificate, webhook only

	FreeClosedPR      bool
	ReleaseDeadClaims bool
	ReviewFirst       bool

	ExportURL    string
	ExportToken  string // never logged
	ExportRepo   string
	ExportDryRun bool
	BaseBranch   string

	ReevaluateDelay     time.Duration
	SweepInterval       time.Duration
	ExportSweepInterval time.Duration
	RedeliverInterval   time.Duration
	AuditMaxLen         int64
	APIMaxWatchers      int64 // watch streams open at once on the claims API
}

// ExportEnabled reports whether the export push is configured.
func (c *Config) ExportEnabled() bool { return c.ExportURL != "" }

// Error is a bad or missing variable.
type Error struct {
	Var, Problem string
}

func (e *Error) Error() string { return e.Var + ": " + e.Problem }

// Errors is every bad or missing variable of one load, in the order they
// were found, at most one per variable: Error is one line each.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the first *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Join is errs' bad variables as one error: nil for none, the *Error for
// one, Errors for more; an error that names no variable is kept as it is
// only when there is none that does.
func Join(errs ...error) error {
	var all Errors
	var other error
	for _, err := range errs {
		var es Errors
		var e *Error
		switch {
		case err == nil:
		case errors.As(err, &es):
			all = all.add(es...)
		case errors.As(err, &e):
			all = all.add(e)
		case other == nil:
			other = err
		}
	}
	switch {
	case len(all) == 0:
		return other
	case len(all) == 1:
		return all[0]
	}
	return all
}

// add appends the errors of variables not named yet.
func (es Errors) add(more ...*Error) Errors {
	for _, e := range more {
		if !slices.ContainsFunc(es, func(x *Error) bool { return x.Var == e.Var }) {
			es = append(es, e)
		}
	}
	return es
}

// FromEnv loads the configuration for role from the process environment.
func FromEnv(role Role) (*Config, error) { return Load(role, os.Getenv) }

// Load loads the configuration for role through getenv.
func Load(role Role, getenv func(string) string) (*Config, error) {
	r := newReader(getenv)
	r.insecure = r.flag("QUEEN_ALLOW_INSECURE_URLS")
	c := &Config{
		RedisURL: r.str(redisconn.URLVar, ""),
		// Passwords are taken byte for byte, spaces included.
		RedisPassword:         r.secret(redisconn.PasswordVar, "QUEEN_REDIS_PASSWORD_FILE", exact),
		RedisSentinelPassword: r.secret(redisconn.SentinelPasswordVar, "QUEEN_REDIS_SENTINEL_PASSWORD_FILE", exact),
		APIURL:                r.url("GITHUB_API_URL", "https://api.github.com/"),
		GitURL:                r.url("GITHUB_GIT_URL", "https://github.com/"),
		Listen:                r.listen("QUEEN_LISTEN", DefaultListen),
		APIListen:             r.listen("QUEEN_API_LISTEN", apiListenOf(role)),
		APIToken:              r.secret("QUEEN_API_TOKEN", "QUEEN_API_TOKEN_FILE", 0),
		UIToken:               r.secret("QUEEN_UI_TOKEN", "QUEEN_UI_TOKEN_FILE", 0),
		QueenAPI:              r.apiURL("QUEEN_API_URL", DefaultQueenAPI),
		WebhookSecret:         r.secret("GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_FILE", 0),
		WebhookSecretPrev:     r.secret("GITHUB_WEBHOOK_SECRET_PREVIOUS", "GITHUB_WEBHOOK_SECRET_PREVIOUS_FILE", absentIsUnset),
		FreeClosedPR:          r.flag("QUEEN_FREE_CLOSED_PR"),
		ReleaseDeadClaims:     r.flag("QUEEN_RELEASE_DEAD_CLAIMS"),
		ReviewFirst:           r.flag("QUEEN_REVIEW_FIRST"),
		ExportURL:             r.url("QUEEN_EXPORT_URL", ""),
		ExportToken:           r.secret("QUEEN_EXPORT_TOKEN", "QUEEN_EXPORT_TOKEN_FILE", 0),
		ExportRepo:            r.str("QUEEN_EXPORT_REPO", ""),
		ExportDryRun:          r.flag("QUEEN_EXPORT_DRY_RUN"),
		BaseBranch:            r.str("QUEEN_BASE_BRANCH", "master"),
		ReevaluateDelay:       r.duration("QUEEN_REEVALUATE_DELAY", 5*time.Second),
		SweepInterval:         r.duration("QUEEN_SWEEP_INTERVAL", 10*time.Minute),
		ExportSweepInterval:   r.duration("QUEEN_EXPORT_SWEEP_INTERVAL", 5*time.Minute),
		RedeliverInterval:     r.duration("QUEEN_REDELIVER_INTERVAL", 15*time.Minute),
		AuditMaxLen:           r.int("QUEEN_AUDIT_MAXLEN", 1_000_000),
		APIMaxWatchers:        r.int("QUEEN_API_MAX_WATCHERS", 256),
	}
	c.GraphQLURL = r.url("GITHUB_GRAPHQL_URL", githubapp.GraphQLURLFor(c.APIURL))
	var redisSpec *redisconn.Spec
	if c.RedisURL != "" && !r.failed(redisconn.URLVar, redisconn.PasswordVar, redisconn.SentinelPasswordVar) {
		var err error
		if redisSpec, err = c.Redis(); err != nil {
			r.failWith(err)
		}
	}
	r.secretsLongEnough(c, redisSpec)
	r.tokensSendable(c)
	if c.ExportRepo != "" && !ghrepo.Valid(c.ExportRepo) {
		r.fail("QUEEN_EXPORT_REPO", "must be owner/name")
	}
	if !ValidBranchName(c.BaseBranch) {
		r.fail("QUEEN_BASE_BRANCH", "is not a valid git branch name")
	}
	switch role {
	case Webhook, Worker:
		if c.RedisURL == "" {
			r.fail("QUEEN_REDIS_URL", "is required")
		}
		r.app(c)
		if role == Worker { // queenctl doctor asks the claims API as the worker's settings
			c.QueenCA = r.caFile("QUEEN_CA_FILE")
		}
		if role == Webhook {
			c.TLS = r.tlsPair("QUEEN_TLS_CERT_FILE", "QUEEN_TLS_KEY_FILE")
			c.APITLS = r.tlsPair("QUEEN_API_TLS_CERT_FILE", "QUEEN_API_TLS_KEY_FILE")
			if c.WebhookSecret == "" {
				r.fail("GITHUB_WEBHOOK_SECRET", "is required and must not be empty (or GITHUB_WEBHOOK_SECRET_FILE)")
			}
			if c.APIToken == "" {
				r.fail("QUEEN_API_TOKEN", "is required (or QUEEN_API_TOKEN_FILE)")
			}
			if c.UIToken != "" && c.UIToken == c.APIToken {
				r.fail("QUEEN_UI_TOKEN", "must differ from QUEEN_API_TOKEN: it is the read-only token")
			}
		}
		if role == Worker && c.ExportURL != "" {
			if c.ExportToken == "" {
				r.fail("QUEEN_EXPORT_TOKEN", "is required with QUEEN_EXPORT_URL (or QUEEN_EXPORT_TOKEN_FILE)")
			}
			if c.ExportRepo == "" {
				r.fail("QUEEN_EXPORT_REPO", "is required with QUEEN_EXPORT_URL")
			}
		}
	case LedgerTool:
		if c.RedisURL == "" {
			r.fail("QUEEN_REDIS_URL", "is required")
		}
	case CLI:
		c.QueenCA = r.caFile("QUEEN_CA_FILE")
		if c.APIToken == "" {
			r.fail("QUEEN_API_TOKEN", "is required (or QUEEN_API_TOKEN_FILE)")
		}
	}
	if err := r.error(); err != nil {
		return nil, err
	}
	return c, nil
}

// secretsLongEnough holds every secret given to MinSecretLen, whichever
// binary loads it; an error names the variable the value came from. spec
// is the parsed QUEEN_REDIS_URL, nil when unset.
func (r *reader) secretsLongEnough(c *Config, spec *redisconn.Spec) {
	redisPW, redisVar := c.RedisPassword, redisconn.PasswordVar
	if spec != nil && c.RedisPassword == "" {
		redisPW, redisVar = spec.Password, redisconn.URLVar // the URL's own
	}
	for _, s := range []struct{ name, value string }{
		{"GITHUB_WEBHOOK_SECRET", c.WebhookSecret},
		{"GITHUB_WEBHOOK_SECRET_PREVIOUS", c.WebhookSecretPrev},
		{"QUEEN_API_TOKEN", c.APIToken},
		{"QUEEN_UI_TOKEN", c.UIToken},
		{"QUEEN_EXPORT_TOKEN", c.ExportToken},
		{redisVar, redisPW},
		{redisconn.SentinelPasswordVar, c.RedisSentinelPassword},
	} {
		if s.value == "" || utf8.RuneCountInString(s.value) >= MinSecretLen {
			continue
		}
		problem := fmt.Sprintf("must be at least %d characters", MinSecretLen)
		if s.name == redisconn.URLVar {
			problem = "its password " + problem
		}
		r.fail(r.varOf(s.name), problem)
	}
}

// tokensSendable refuses a token that no HTTP header can carry (a token
// file of two lines, say): every request would then fail, and some HTTP
// clients (Node's) quote the header value, token and all, in their error.
func (r *reader) tokensSendable(c *Config) {
	for _, s := range []struct{ name, value string }{
		{"QUEEN_API_TOKEN", c.APIToken},
		{"QUEEN_UI_TOKEN", c.UIToken},
		{"QUEEN_EXPORT_TOKEN", c.ExportToken},
	} {
		for i := 0; i < len(s.value); i++ {
			if b := s.value[i]; b < 0x21 || b > 0x7e {
				r.fail(r.varOf(s.name), "must be one line of visible ASCII characters (no spaces): it is sent in an HTTP header")
				break
			}
		}
	}
}

func apiListenOf(role Role) string {
	if role == Worker {
		return DefaultWorkerAPIListen
	}
	return DefaultWebhookAPIListen
}

// Redis is the Redis deployment the settings name, for redisconn.New. An
// error names its variable; Load has checked the settings already.
func (c *Config) Redis() (*redisconn.Spec, error) {
	s, err := redisconn.Parse(c.RedisURL, c.RedisPassword, c.RedisSentinelPassword)
	if err != nil {
		return nil, RedisError(err)
	}
	return s, nil
}

// RedisError is err as a configuration error (exit 2) when it is a
// *redisconn.Error naming a variable, else err.
func RedisError(err error) error {
	var bad *redisconn.Error
	if errors.As(err, &bad) {
		return &Error{Var: bad.Var, Problem: bad.Problem}
	}
	return err
}

// LoadApp reads only the App id and key, for queenctl deliveries.
func LoadApp(getenv func(string) string) (*Config, error) {
	r := newReader(getenv)
	r.insecure = r.flag("QUEEN_ALLOW_INSECURE_URLS")
	c := &Config{APIURL: r.url("GITHUB_API_URL", "https://api.github.com/")}
	r.app(c)
	if err := r.error(); err != nil {
		return nil, err
	}
	return c, nil
}

type reader struct {
	getenv   func(string) string
	insecure bool // QUEEN_ALLOW_INSECURE_URLS: http:// off loopback too
	errs     Errors
	// from names the *_FILE variable a secret was read through, so that
	// an error about its value names what the operator set.
	from map[string]string
}

func newReader(getenv func(string) string) *reader {
	return &reader{getenv: getenv, from: map[string]string{}}
}

// varOf is the variable name's value came from: name, or its *_FILE.
func (r *reader) varOf(name string) string {
	if v, ok := r.from[name]; ok {
		return v
	}
	return name
}

// How secret reads a value.
type secretMode int

const (
	// exact keeps the value byte for byte (passwords), so a file loses
	// only its final line break (echo and most editors end a file with
	// one); otherwise surrounding white space goes, as it always did from
	// the environment.
	exact secretMode = 1 << iota
	// absentIsUnset takes a file that does not exist for no value: the
	// chart mounts the previous webhook secret, an optional key, only
	// while the Secret holds it (rotating).
	absentIsUnset
)

// secret reads the secret name from the environment or from the file its
// fileVar (name_FILE) names, a mounted Kubernetes or compose secret; both
// set is an error.
func (r *reader) secret(name, fileVar string, mode secretMode) string {
	v := r.getenv(name)
	if mode&exact == 0 {
		v = strings.TrimSpace(v)
	}
	path := strings.TrimSpace(r.getenv(fileVar))
	if path == "" {
		return v
	}
	if v != "" {
		r.fail(fileVar, "is set and so is "+name+": give the secret in one place")
		r.from[name] = fileVar
		return ""
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && mode&absentIsUnset != 0 {
		return ""
	}
	r.from[name] = fileVar
	b, err := readSecretFile(path)
	if err != nil {
		r.fail(fileVar, err.Error())
		return ""
	}
	s := string(b)
	if mode&exact != 0 {
		s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	} else {
		s = strings.TrimSpace(s)
	}
	if s == "" {
		r.fail(fileVar, "names an empty file: "+path)
	}
	return s
}

// readSecretFile reads at most maxSecretFile bytes of path.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %s", pathError(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %s", pathError(err))
	}
	if len(b) > maxSecretFile {
		return nil, fmt.Errorf("names a file larger than %d KiB, not a secret: %s", maxSecretFile>>10, path)
	}
	return b, nil
}

// fail records name's problem. A variable already refused keeps its
// first, and one whose *_FILE is refused gets no second line.
func (r *reader) fail(name, problem string) {
	if !r.failed(r.varOf(name)) {
		r.errs = r.errs.add(&Error{name, problem})
	}
}

// failWith records err, a *Error or Errors.
func (r *reader) failWith(err error) {
	var es Errors
	var e *Error
	switch {
	case errors.As(err, &es):
		r.errs = r.errs.add(es...)
	case errors.As(err, &e):
		r.errs = r.errs.add(e)
	default:
		r.errs = r.errs.add(&Error{"QUEEN_REDIS_URL", err.Error()})
	}
}

// failed reports whether any of names has been refused.
func (r *reader) failed(names ...string) bool {
	return slices.ContainsFunc(r.errs, func(e *Error) bool { return slices.Contains(names, e.Var) })
}

// error is every refusal: nil, a *Error, or Errors.
func (r *reader) error() error { return Join(r.errs) }

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) url(name, def string) string { return r.checkURL(name, def, false) }

// apiURL is url for the claims API, whose plain http:// is also accepted
// at a cluster-local Service name (what the chart's NOTES print): those
// requests never leave the cluster.
func (r *reader) apiURL(name, def string) string { return r.checkURL(name, def, true) }

func (r *reader) checkURL(name, def string, clusterLocal bool) string {
	v := r.str(name, def)
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.fail(name, "must be an http:// or https:// URL")
		return ""
	}
	if u.User != nil {
		// Credentials in a URL end up in argv and error text; tokens have
		// their own variables.
		r.fail(name, "must not carry credentials (user:password@)")
		return ""
	}
	if u.Scheme == "http" && !r.insecure && !Loopback(u.Hostname()) && !(clusterLocal && ClusterLocal(u.Hostname())) {
		// Tokens travel with these requests: in clear only on this host
		// (or, for the claims API, inside the cluster).
		if clusterLocal {
			r.fail(name, "must be https:// unless on loopback or a cluster-local Service (NAME.NAMESPACE.svc) (or set QUEEN_ALLOW_INSECURE_URLS=on)")
		} else {
			r.fail(name, "must be https:// unless on loopback (or set QUEEN_ALLOW_INSECURE_URLS=on)")
		}
		return ""
	}
	return v
}

// Loopback reports whether host (a URL's Hostname) is this machine:
// localhost, 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ClusterLocal reports whether host is a Kubernetes Service's
// cluster-local name, NAME.NAMESPACE.svc or NAME.NAMESPACE.svc.cluster.local,
// which only the cluster's DNS answers.
func ClusterLocal(host string) bool {
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	for _, l := range labels {
		if l == "" {
			return false
		}
	}
	switch len(labels) {
	case 3:
		return labels[2] == "svc"
	case 5:
		return strings.Join(labels[2:], ".") == "svc.cluster.local"
	}
	return false
}

// TLSPair is a listener's certificate and key files, checked by Load to
// be a pair that serves; empty, the listener serves plain HTTP.
type TLSPair struct {
	CertVar, KeyVar   string
	CertFile, KeyFile string
}

// Enabled reports whether the listener serves TLS.
func (p TLSPair) Enabled() bool { return p.CertFile != "" }

// Error is err from serve.LoadKeyPair or serve.TLSConfig as a *Error
// naming the variable of the file at fault.
func (p TLSPair) Error(err error) error {
	var kp *serve.KeyPairError
	if !errors.As(err, &kp) {
		return &Error{p.CertVar, err.Error()}
	}
	if kp.KeyFile {
		return &Error{p.KeyVar, strings.Replace(kp.Problem, "the certificate", "the certificate of "+p.CertVar, 1)}
	}
	return &Error{p.CertVar, kp.Problem}
}

// tlsPair reads a listener's pair: both files or neither, a pair that
// serves.
func (r *reader) tlsPair(certVar, keyVar string) TLSPair {
	p := TLSPair{CertVar: certVar, KeyVar: keyVar, CertFile: r.str(certVar, ""), KeyFile: r.str(keyVar, "")}
	switch {
	case p.CertFile == "" && p.KeyFile == "":
		return TLSPair{}
	case p.KeyFile == "":
		r.fail(keyVar, "is required with "+certVar)
		return TLSPair{}
	case p.CertFile == "":
		r.fail(certVar, "is required with "+keyVar)
		return TLSPair{}
	}
	if _, err := serve.LoadKeyPair(p.CertFile, p.KeyFile); err != nil {
		r.failWith(p.Error(err))
		return TLSPair{}
	}
	return p
}

// caFile reads the PEM certificates of the file name names, "" for none.
func (r *reader) caFile(name string) []byte {
	path := r.str(name, "")
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		r.fail(name, "cannot be read: "+pathError(err))
		return nil
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		r.fail(name, "holds no PEM certificate: "+path)
		return nil
	}
	return b
}

func (r *reader) listen(name, def string) string {
	v := r.str(name, def)
	_, port, err := net.SplitHostPort(v)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		r.fail(name, "must be host:port or :port")
		return ""
	}
	return v
}

func (r *reader) flag(name string) bool {
	on, err := ParseFlag(r.getenv(name))
	if err != nil {
		r.fail(name, err.Error())
	}
	return on
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		r.fail(name, "must be a non-negative duration such as 5s or 10m")
		return def
	}
	return d
}

func (r *reader) int(name string, def int64) int64 {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		r.fail(name, "must be a positive whole number")
		return def
	}
	return n
}

// app reads the App's id and key.
func (r *reader) app(c *Config) {
	id := r.str("GITHUB_APP_ID", "")
	if id == "" {
		r.fail("GITHUB_APP_ID", "is required")
	} else if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 {
		r.fail("GITHUB_APP_ID", "must be a positive whole number")
	} else {
		c.AppID = n
	}
	keyVar := "GITHUB_APP_PRIVATE_KEY_FILE"
	pem := r.getenv("GITHUB_APP_PRIVATE_KEY")
	path := r.str("GITHUB_APP_PRIVATE_KEY_FILE", "")
	switch {
	case strings.TrimSpace(pem) != "" && path != "":
		r.fail("GITHUB_APP_PRIVATE_KEY_FILE", "is set and so is GITHUB_APP_PRIVATE_KEY: give the key in one place")
		return
	case strings.TrimSpace(pem) != "":
		keyVar = "GITHUB_APP_PRIVATE_KEY"
		c.PrivateKey = []byte(pem)
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			r.fail("GITHUB_APP_PRIVATE_KEY_FILE", "cannot be read: "+pathError(err))
			return
		}
		c.PrivateKey = b
	default:
		r.fail("GITHUB_APP_PRIVATE_KEY_FILE", "is required (or GITHUB_APP_PRIVATE_KEY with the PEM)")
		return
	}
	if _, err := githubapp.ParsePrivateKey(c.PrivateKey); err != nil {
		if IsPublicKey(c.PrivateKey) {
			r.fail(keyVar, "is a public key; GitHub's App private key is the .pem file the App's settings download (Generate a private key)")
			return
		}
		r.fail(keyVar, "is not a PEM-encoded RSA private key")
	}
}

// IsPublicKey reports whether b is a public key, PEM ("PUBLIC KEY") or an
// ssh one: the wrong half of a key pair, an easy mistake worth its own
// message.
func IsPublicKey(b []byte) bool {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "-----BEGIN ") {
		head, _, _ := strings.Cut(s, "\n")
		return strings.Contains(head, "PUBLIC KEY")
	}
	for _, prefix := range []string{"ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// pathError keeps the reason of a file error without repeating the path
// twice in the line.
func pathError(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Sprintf("%s %s", pe.Path, pe.Err)
	}
	return err.Error()
}

// ValidBranchName reports whether name is a branch name git accepts, by
// git check-ref-format's rules for refs/heads/<name>: no control character,
// space, ~ ^ : ? * [ or \; no "..", "@{", doubled slash or leading or
// trailing slash; no component that starts with "." or ends with ".lock";
// not ending with "."; not "@"; and, as git branch refuses them, not
// starting with "-" and not HEAD.
func ValidBranchName(name string) bool {
	switch {
	case name == "", name == "@", name == "HEAD", strings.HasPrefix(name, "-"),
		strings.HasSuffix(name, "."), strings.Contains(name, ".."), strings.Contains(name, "@{"):
		return false
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if comp == "" || strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}
