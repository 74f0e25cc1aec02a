package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/logging"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/redis/go-redis/v9"
)

// Doctor's bounds: each check gets checkTimeout; recentDeliveries is how
// many of GitHub's latest deliveries the webhook line counts.
const (
	checkTimeout     = 20 * time.Second
	recentDeliveries = 10
)

// Words of a doctor line.
const (
	checkOK   = "ok"
	checkFail = "FAIL"
	checkSkip = "skip" // not configured; counts as passing
)

// checkResult is one line of the doctor's report.
type checkResult struct {
	Name, Word, Detail string
}

// doctorCheck is one check; it returns what it saw, or why it failed.
type doctorCheck struct {
	name string
	run  func(ctx context.Context, cfg *config.Config) (word, detail string)
}

var doctorChecks = []doctorCheck{
	{"redis", checkRedis},
	{"github_app", checkGitHubApp},
	{"webhook", checkWebhookDeliveries},
	{"export", checkExport},
	{"claims_api", checkClaimsAPI},
}

func runDoctor(args []string, stdout, stderr io.Writer) int {
	const synopsis = ""
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	if err := parseFlags(fs, args, nil); err != nil {
		code := usageError(err, "doctor", synopsis, fs, stdout, stderr)
		if code == 0 {
			fmt.Fprint(stdout, doctorAbout)
		}
		return code
	}
	// The worker's variables are the widest set: Redis, the App, the export.
	cfg, err := config.Load(config.Worker, os.Getenv)
	if err != nil {
		printErr(stderr, "doctor", err)
		return 2
	}
	// The report says what Redis did; go-redis's own pool lines on stderr
	// would only repeat it.
	redis.SetLogger(logging.Redis(slog.New(slog.DiscardHandler)))
	results := doctor(context.Background(), cfg)
	writeReport(stdout, results)
	for _, r := range results {
		if r.Word == checkFail {
			return 1
		}
	}
	return 0
}

const doctorAbout = `
Checks a deployment with the webhook's and worker's variables, one line each
(ok, FAIL or skip) with the reason; the exit status is 0 only when none FAILs:
  redis       QUEEN_REDIS_URL answers, with maxmemory-policy noeviction
  github_app  GitHub accepts the App's JWT (GET /app): GITHUB_APP_ID and its key
  webhook     GitHub's latest deliveries to the App's webhook URL were answered 2xx
              (a 401 means GITHUB_WEBHOOK_SECRET differs from the App's webhook secret)
  export      QUEEN_EXPORT_URL lists with QUEEN_EXPORT_TOKEN (skip when unset)
  claims_api  QUEEN_API_URL answers an authenticated GET with QUEEN_API_TOKEN
`

// doctor runs every check in order.
func doctor(ctx context.Context, cfg *config.Config) []checkResult {
	out := make([]checkResult, 0, len(doctorChecks))
	for _, c := range doctorChecks {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		word, detail := c.run(cctx, cfg)
		cancel()
		out = append(out, checkResult{Name: c.name, Word: word, Detail: detail})
	}
	return out
}

func writeReport(w io.Writer, rs []checkResult) {
	for _, r := range rs {
		fmt.Fprintf(w, "%-4s  %-10s  %s\n", r.Word, r.Name, oneLine(r.Detail))
	}
}

// oneLine keeps a report line one line: errors from servers may hold
// newlines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func failed(format string, a ...any) (string, string) { return checkFail, fmt.Sprintf(format, a...) }

func checkRedis(ctx context.Context, cfg *config.Config) (string, string) {
	spec, err := cfg.Redis()
	if err != nil {
		return failed("%v", err)
	}
	rdb := redisconn.New(spec)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		var refused *redisconn.RefusedError
		if errors.As(redisconn.Refusal(err, spec), &refused) {
			return failed("%s answers, but %v", spec, refused)
		}
		return failed("QUEEN_REDIS_URL (%s) does not answer: %v", spec, err)
	}
	s := redisconn.ReadSettings(ctx, rdb)
	switch {
	case s.Err != nil:
		return failed("QUEEN_REDIS_URL (%s) does not answer CONFIG GET: %v", spec, s.Err)
	case s.Refused != nil:
		// A managed Redis may refuse CONFIG; what it answers is the
		// provider's setting to check.
		return checkOK, fmt.Sprintf("%s answers; its maxmemory-policy is unknown (CONFIG GET refused: %v): it must be %s", spec, s.Refused, redisconn.NoEviction)
	case s.Evicts():
		return failed("%s answers, but its maxmemory-policy is %q: set %s, or Redis drops queued tasks and claims when full", spec, s.Policy, redisconn.NoEviction)
	case !s.Persistent():
		return checkOK, fmt.Sprintf("%s answers, maxmemory-policy %s; persistence is off (appendonly no, no save rule): a restart loses the ledger", spec, redisconn.NoEviction)
	}
	return checkOK, fmt.Sprintf("%s answers, maxmemory-policy %s", spec, redisconn.NoEviction)
}

func doctorApp(cfg *config.Config) (*githubapp.App, error) {
	return githubapp.New(githubapp.Config{AppID: cfg.AppID, PrivateKey: cfg.PrivateKey, APIURL: cfg.APIURL,
		UserAgent: "queen-app-queenctl"})
}

func checkGitHubApp(ctx context.Context, cfg *config.Config) (string, string) {
	app, err := doctorApp(cfg)
	if err != nil {
		return failed("%v", err)
	}
	id, err := app.Identify(ctx)
	if err != nil {
		return failed("%v", err)
	}
	return checkOK, fmt.Sprintf("GitHub (%s) accepts App %d (%s)", app.APIURL(), id.ID, id.Slug)
}

func checkWebhookDeliveries(ctx context.Context, cfg *config.Config) (string, string) {
	app, err := doctorApp(cfg)
	if err != nil {
		return failed("%v", err)
	}
	ds, _, err := app.DeliveriesPage(ctx, "")
	if err != nil {
		return failed("GitHub's deliveries cannot be read: %v", err)
	}
	return judgeDeliveries(ds)
}

// judgeDeliveries reads GitHub's latest deliveries (newest first): the
// newest says whether GitHub reaches the webhook now.
func judgeDeliveries(ds []githubapp.Delivery) (string, string) {
	if len(ds) == 0 {
		return failed("GitHub has made no delivery in 3 days: check the App's webhook URL and that it is active (a redelivered ping shows it)")
	}
	ds = ds[:min(len(ds), recentDeliveries)]
	ok, refused := 0, 0
	for _, d := range ds {
		if d.Succeeded() {
			ok++
		}
		if d.StatusCode == http.StatusUnauthorized {
			refused++
		}
	}
	latest := ds[0]
	summary := fmt.Sprintf("%d of the latest %d deliveries answered 2xx", ok, len(ds))
	if latest.StatusCode == http.StatusUnauthorized {
		return failed("%d of the latest %d deliveries (the latest %s %s, %s) got 401: the webhook refused them: "+
			"GITHUB_WEBHOOK_SECRET differs from the App's webhook secret; set one to the other",
			refused, len(ds), latest.Event, latest.GUID, latest.DeliveredAt.UTC().Format(time.RFC3339))
	}
	if refused > 0 {
		summary += fmt.Sprintf(" (%d got 401: GITHUB_WEBHOOK_SECRET differed from the App's webhook secret then)", refused)
	}
	if !latest.Succeeded() {
		answer := fmt.Sprintf("%d", latest.StatusCode)
		if latest.StatusCode == 0 {
			answer = "no answer (" + latest.Status + ")"
		}
		return failed("the latest delivery (%s %s, %s) got %s: %s; queenctl deliveries list shows them",
			latest.Event, latest.GUID, latest.DeliveredAt.UTC().Format(time.RFC3339), answer, summary)
	}
	return checkOK, summary + ", the latest " + latest.DeliveredAt.UTC().Format(time.RFC3339)
}

func checkExport(ctx context.Context, cfg *config.Config) (string, string) {
	if !cfg.ExportEnabled() {
		return checkSkip, "QUEEN_EXPORT_URL is unset: no export push"
	}
	c, err := export.NewClient(cfg.ExportURL, cfg.ExportToken, nil)
	if err != nil {
		return failed("QUEEN_EXPORT_URL: %v", err)
	}
	c.Retries = 0 // one look: the report says what is, the worker retries
	list, err := c.List(ctx)
	if err != nil {
		return failed("%s: %v", exportVarOf(err), err)
	}
	return checkOK, fmt.Sprintf("QUEEN_EXPORT_URL lists %d branches with QUEEN_EXPORT_TOKEN", len(list.Branches))
}

// exportVarOf names the variable an export failure points at: a refusal
// is the token's, anything else the URL's.
func exportVarOf(err error) string {
	var e *export.Error
	if errors.As(err, &e) && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) {
		return "QUEEN_EXPORT_TOKEN"
	}
	return "QUEEN_EXPORT_URL"
}

func checkClaimsAPI(ctx context.Context, cfg *config.Config) (string, string) {
	if cfg.APIToken == "" {
		return failed("QUEEN_API_TOKEN is unset (or QUEEN_API_TOKEN_FILE): the claims API cannot be asked")
	}
	c, err := newAPIClient(cfg, 0)
	if err != nil {
		return failed("QUEEN_API_URL: %v", err)
	}
	if _, err := c.List(ctx, apiclient.ListOptions{Limit: 1}); err != nil {
		var e *apiclient.Error
		if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
			return failed("QUEEN_API_TOKEN: %v", err)
		}
		return failed("QUEEN_API_URL (%s): %v", cfg.QueenAPI, err)
	}
	return checkOK, fmt.Sprintf("%s answers an authenticated GET", cfg.QueenAPI)
}
