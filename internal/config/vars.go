package config

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Deliveries is queenctl deliveries' role: only the App's id and key and
// the REST base (LoadApp).
const Deliveries Role = CLI + 1

// LedgerTool is queenctl ledger's role: only Redis (Load requires
// QUEEN_REDIS_URL and nothing else).
const LedgerTool Role = CLI + 2

// Var is one environment variable queen-app reads: the one list the
// binaries' help is made from. A test holds it to what Load, LoadApp and
// the worker's options read.
type Var struct {
	Name    string
	Meaning string
	// Default is the value an unset variable takes, "" when there is none;
	// PerRole overrides it for a role.
	Default string
	PerRole map[Role]string
	// DefaultText says in words what an unset variable means when no value
	// says it (a derived URL, a feature off).
	DefaultText string
	Roles       []Role // the roles that read it
	Required    []Role // the roles that refuse to start without it
	// RequiredWith names the variable whose presence makes this one
	// required by Required; "" means always.
	RequiredWith string
}

// DefaultFor is v's default for role.
func (v Var) DefaultFor(role Role) string {
	if d, ok := v.PerRole[role]; ok {
		return d
	}
	return v.Default
}

// RequiredBy reports whether role needs v (when RequiredWith is set).
func (v Var) RequiredBy(role Role) bool { return slices.Contains(v.Required, role) }

// Starred reports whether the help stars v for role: required whatever
// else is set. One required only with another variable is not.
func (v Var) Starred(role Role) bool { return v.RequiredBy(role) && v.RequiredWith == "" }

var (
	both     = []Role{Webhook, Worker}
	redisAll = []Role{Webhook, Worker, LedgerTool}
	app      = []Role{Webhook, Worker, Deliveries}
	webhook  = []Role{Webhook}
	worker   = []Role{Worker}
	cli      = []Role{CLI}
	duration = "a duration such as 30s or 10m; 0s turns it off"
	atLeast  = fmt.Sprintf("at least %d characters, in every binary given it", MinSecretLen)
)

// fileOf is the variable file of the secret name: the path of a file
// holding its value, for the chart and compose to mount secrets as files.
func fileOf(file, name string, roles []Role) Var {
	return Var{Name: file, Meaning: fileMeaning(name), Roles: roles}
}

func fileMeaning(name string) string {
	return "path of a file holding the value of " + name + " instead (a mounted secret; a final line break is not part of it); not both"
}

// Vars lists every variable, in the order the help shows them.
var Vars = []Var{
	{Name: "QUEEN_REDIS_URL", Meaning: "the Redis holding the queue and the ledger (noeviction, AOF): redis[s]://host:port/db, redis[s]+sentinel://h1:26379,h2:26379/MASTER[/DB] or redis[s]+cluster://h1:6379,h2:6379",
		Roles: redisAll, Required: redisAll},
	{Name: "QUEEN_REDIS_PASSWORD", Meaning: "the Redis data nodes' password, when not in QUEEN_REDIS_URL; " + atLeast, Roles: redisAll},
	fileOf("QUEEN_REDIS_PASSWORD_FILE", "QUEEN_REDIS_PASSWORD", redisAll),
	{Name: "QUEEN_REDIS_SENTINEL_PASSWORD", Meaning: "the sentinels' own password (Sentinel form); " + atLeast, Roles: redisAll},
	fileOf("QUEEN_REDIS_SENTINEL_PASSWORD_FILE", "QUEEN_REDIS_SENTINEL_PASSWORD", redisAll),
	{Name: "GITHUB_APP_ID", Meaning: "the GitHub App's id", Roles: app, Required: app},
	{Name: "GITHUB_APP_PRIVATE_KEY_FILE", Meaning: "path of the App's PEM private key (or GITHUB_APP_PRIVATE_KEY)",
		Roles: app, Required: app},
	{Name: "GITHUB_APP_PRIVATE_KEY", Meaning: "the App's PEM private key itself, instead of the file", Roles: app},
	{Name: "GITHUB_WEBHOOK_SECRET", Meaning: "the webhook secret deliveries are signed with; " + atLeast, Roles: webhook, Required: webhook},
	fileOf("GITHUB_WEBHOOK_SECRET_FILE", "GITHUB_WEBHOOK_SECRET", webhook),
	{Name: "GITHUB_WEBHOOK_SECRET_PREVIOUS", Meaning: "the previous webhook secret, also accepted while rotating; " + atLeast, Roles: webhook},
	{Name: "GITHUB_WEBHOOK_SECRET_PREVIOUS_FILE", Meaning: fileMeaning("GITHUB_WEBHOOK_SECRET_PREVIOUS") +
		"; a file that does not exist is no previous secret (a Secret's optional key, mounted only while rotating)", Roles: webhook},
	{Name: "GITHUB_API_URL", Meaning: "GitHub's REST base, used verbatim (Enterprise: https://HOST/api/v3/)",
		Default: "https://api.github.com/", Roles: app},
	{Name: "GITHUB_GRAPHQL_URL", Meaning: "GitHub's GraphQL endpoint", DefaultText: "derived from GITHUB_API_URL", Roles: worker},
	{Name: "QUEEN_ALLOW_INSECURE_URLS", Meaning: "on: allow http:// GitHub, export and API URLs off loopback", Default: "off",
		Roles: []Role{Webhook, Worker, CLI, Deliveries, LedgerTool}},
	{Name: "GITHUB_GIT_URL", Meaning: "base URL of git fetch and push", Default: "https://github.com/", Roles: worker},
	{Name: "QUEEN_LISTEN", Meaning: "address of the webhook receiver (POST /webhook)", Default: DefaultListen, Roles: webhook},
	{Name: "QUEEN_API_LISTEN", Meaning: "address of /healthz, /readyz, /metrics (and the claims API on webhook); the default is every interface, where probes and scrapes reach a pod; on a shared host use 127.0.0.1:PORT",
		PerRole: map[Role]string{Webhook: DefaultWebhookAPIListen, Worker: DefaultWorkerAPIListen}, Roles: both},
	{Name: "QUEEN_API_TOKEN", Meaning: "bearer token of the claims API (/v1/*); " + atLeast, Roles: []Role{Webhook, CLI},
		Required: []Role{Webhook, CLI}},
	fileOf("QUEEN_API_TOKEN_FILE", "QUEEN_API_TOKEN", []Role{Webhook, CLI}),
	{Name: "QUEEN_UI_TOKEN", Meaning: "optional viewer token: signs in to the claims page (/ui/) and reads GET /v1/*; any write with it is 403; " + atLeast,
		Roles: webhook},
	fileOf("QUEEN_UI_TOKEN_FILE", "QUEEN_UI_TOKEN", webhook),
	{Name: "QUEEN_API_MAX_WATCHERS", Meaning: "watch streams (GET /v1/events) open at once; past it 503, apart from the 64 requests in flight",
		Default: "256", Roles: webhook},
	{Name: "QUEEN_API_URL", Meaning: "where queenctl finds the claims API; http:// only on loopback (kubectl port-forward) or a cluster-local Service (NAME.NAMESPACE.svc)",
		Default: DefaultQueenAPI, Roles: cli},
	{Name: "QUEEN_CA_FILE", Meaning: "path of PEM certificates queenctl trusts for an https:// QUEEN_API_URL, beside the system's (a private CA)",
		Roles: cli},
	{Name: "QUEEN_TLS_CERT_FILE", Meaning: "path of the PEM certificate (chain) QUEEN_LISTEN serves HTTPS with, re-read when it changes; unset: plain HTTP",
		Roles: webhook, Required: webhook, RequiredWith: "QUEEN_TLS_KEY_FILE"},
	{Name: "QUEEN_TLS_KEY_FILE", Meaning: "path of the PEM private key of QUEEN_TLS_CERT_FILE",
		Roles: webhook, Required: webhook, RequiredWith: "QUEEN_TLS_CERT_FILE"},
	{Name: "QUEEN_API_TLS_CERT_FILE", Meaning: "path of the PEM certificate (chain) QUEEN_API_LISTEN serves HTTPS with, re-read when it changes; unset: plain HTTP",
		Roles: webhook, Required: webhook, RequiredWith: "QUEEN_API_TLS_KEY_FILE"},
	{Name: "QUEEN_API_TLS_KEY_FILE", Meaning: "path of the PEM private key of QUEEN_API_TLS_CERT_FILE",
		Roles: webhook, Required: webhook, RequiredWith: "QUEEN_API_TLS_CERT_FILE"},
	{Name: "QUEEN_FREE_CLOSED_PR", Meaning: "free by accept_claim; off records would_free only",
		Default: "off", Roles: both},
	{Name: "QUEEN_RELEASE_DEAD_CLAIMS", Meaning: "free by send_back_claim; off records would_free only",
		Default: "off", Roles: both},
	{Name: "QUEEN_REVIEW_FIRST", Meaning: "apply the review-first admission", Default: "off", Roles: webhook},
	{Name: "QUEEN_EXPORT_URL", Meaning: "the Queen's export API", DefaultText: "unset: no export push", Roles: worker},
	{Name: "QUEEN_EXPORT_TOKEN", Meaning: "bearer token of the export API; " + atLeast, Roles: worker, Required: worker,
		RequiredWith: "QUEEN_EXPORT_URL"},
	fileOf("QUEEN_EXPORT_TOKEN_FILE", "QUEEN_EXPORT_TOKEN", worker),
	{Name: "QUEEN_EXPORT_REPO", Meaning: "owner/name whose accepted work the export holds, the only repository an export push goes to (the webhook's claims API refuses a push request for another; unset there, every one)",
		Roles: both, Required: worker, RequiredWith: "QUEEN_EXPORT_URL"},
	{Name: "QUEEN_EXPORT_DRY_RUN", Meaning: "decide and record the export push, push and open nothing",
		Default: "off", Roles: worker},
	{Name: "QUEEN_BASE_BRANCH", Meaning: "base branch of the PRs the export push opens", Default: "master", Roles: worker},
	{Name: "QUEEN_REEVALUATE_DELAY", Meaning: "delay before a webhook's re-evaluation runs (GitHub's eventual consistency)",
		Default: "5s", Roles: webhook},
	{Name: "QUEEN_SWEEP_INTERVAL", Meaning: "period of claim:sweep, " + duration, Default: "10m", Roles: worker},
	{Name: "QUEEN_EXPORT_SWEEP_INTERVAL", Meaning: "period of export:sweep, " + duration, Default: "5m", Roles: worker},
	{Name: "QUEEN_REDELIVER_INTERVAL", Meaning: "period of deliveries:redeliver, " + duration, Default: "15m", Roles: worker},
	{Name: "QUEEN_AUDIT_MAXLEN", Meaning: "approximate cap of the audit stream", Default: "1000000", Roles: both},
	{Name: "QUEEN_WORKER_CONCURRENCY", Meaning: "tasks one worker runs at once (1 to 1000)", Default: "250", Roles: worker},
	{Name: "QUEEN_WORKER_CACHE_DIR", Meaning: "absolute path where the worker keeps its git clones",
		DefaultText: "queen-app in the user cache directory", Roles: worker},
}

// VarsOf lists the variables role reads.
func VarsOf(role Role) []Var {
	var out []Var
	for _, v := range Vars {
		if slices.Contains(v.Roles, role) {
			out = append(out, v)
		}
	}
	return out
}

// WriteVars writes the variables role reads, one per line: name, a star
// when always required, the meaning and the default (or what it is
// required with).
func WriteVars(w io.Writer, role Role) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range VarsOf(role) {
		mark := ""
		if v.Starred(role) {
			mark = "*"
		}
		meaning := v.Meaning
		switch {
		case v.RequiredBy(role) && v.RequiredWith != "":
			meaning += "; required with " + v.RequiredWith
		case v.DefaultFor(role) != "":
			meaning += "; default " + v.DefaultFor(role)
		case v.DefaultText != "":
			meaning += "; default " + v.DefaultText
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Name, mark, meaning)
	}
	return tw.Flush()
}

// String names the role as the help says it.
func (r Role) String() string {
	switch r {
	case Webhook:
		return "webhook"
	case Worker:
		return "worker"
	case CLI:
		return "queenctl"
	case Deliveries:
		return "queenctl deliveries"
	case LedgerTool:
		return "queenctl ledger"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}
