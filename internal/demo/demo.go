// Package demo is `queenctl demo`: the whole of queen-app on one machine
// with nothing installed or configured. An embedded Redis (miniredis), the
// real webhook receiver, claims API and worker on loopback ports, and the
// sandbox standing in for GitHub and the Queen's export; the scenarios of
// the measured jams are played through the real paths (the claims API,
// signed webhooks over HTTP, asynq, GitHub's REST and GraphQL over HTTP,
// git pushes) and every expected outcome is checked.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/logging"
	"github.com/queen-app/queen-app/internal/plural"
	"github.com/queen-app/queen-app/internal/sandbox"
	"github.com/queen-app/queen-app/internal/webhookserver"
	"github.com/queen-app/queen-app/internal/workerserver"
)

// Timing of the demo's worker. The sweeps run at worker start and then
// every interval; a webhook's re-evaluation waits ReevaluateDelay, plus up
// to asynq's 5 s check of delayed tasks (not configurable through
// workerserver.Run).
const (
	ReevaluateDelay     = time.Second
	SweepInterval       = 30 * time.Second
	ExportSweepInterval = 10 * time.Second
	// ExportDownFor bounds the export's outage at the start; it ends
	// sooner, once every push has failed on it.
	ExportDownFor = 20 * time.Second
	// DefaultLimit bounds the wait for every expected outcome.
	DefaultLimit = 50 * time.Second
)

// Options of Run.
type Options struct {
	FlagsOn bool          // QUEEN_FREE_CLOSED_PR and QUEEN_RELEASE_DEAD_CLAIMS
	Keep    bool          // after the table, keep running until ctx ends
	Out     io.Writer     // the live log and the table
	Logs    io.Writer     // the components' JSON logs; nil discards them
	Limit   time.Duration // DefaultLimit when 0
}

// Failed is the outcome that did not happen.
type Failed struct {
	Row  string // owner/name#N, or "" for an outcome of the whole run
	What string
	Want string
}

func (f *Failed) Error() string {
	if f.Row == "" {
		return "expected " + f.Want + "; it did not happen"
	}
	return fmt.Sprintf("expected %s (%s) to be %s; it was not", f.Row, f.What, f.Want)
}

// Run plays the demo. It returns nil when every expected outcome happened,
// a *Failed naming the first one that did not, or the error that stopped it.
func Run(ctx context.Context, o Options) error {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Logs == nil {
		o.Logs = io.Discard
	}
	d := &run{o: o, start: time.Now(), obs: map[int64]*observed{}}
	defer d.close()
	if err := d.assemble(ctx); err != nil {
		return err
	}
	err := d.play()
	if err == nil || isFailed(err) {
		d.table()
	}
	if err == nil {
		freed, would := d.tally()
		what := plural.Count(freed, "claim freed", "claims freed")
		if !o.FlagsOn {
			what = plural.Count(would, "would_free", "would_free") + " recorded, nothing freed"
		}
		fmt.Fprintf(o.Out, "\nEvery expected outcome happened: %s, %s pushed with their PRs (%s, %s).\n",
			what, plural.Count(len(d.exported), "accepted head", "accepted heads"), plural.Rows(len(scenarios)), d.since())
	}
	if o.Keep && (err == nil || isFailed(err)) {
		d.keep()
	}
	return err
}

func isFailed(err error) bool {
	var f *Failed
	return errors.As(err, &f)
}

// run is one demo: its parts and what it saw.
type run struct {
	o      Options
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc
	done   []chan error

	dir      string
	mr       *miniredis.Miniredis
	rdb      *redis.Client
	insp     *asynq.Inspector
	sb       *sandbox.Sandbox
	api      *apiclient.Client
	secret   string
	token    string
	hookURL  string
	apiURL   string
	workURL  string
	heads    map[int64]string // the export's accepted heads
	prOf     map[int64]int    // each scenario's PR on GitHub
	obs      map[int64]*observed
	exported []int64
	// exportDown: the sandbox's export answers 503 until exportBack.
	exportDown bool
}

func (d *run) since() string {
	return fmt.Sprintf("%.1fs", time.Since(d.start).Seconds())
}

func (d *run) logf(who, format string, args ...any) {
	fmt.Fprintf(d.o.Out, "[%5.1fs] %-8s %s\n", time.Since(d.start).Seconds(), who, fmt.Sprintf(format, args...))
}

func (d *run) assemble(ctx context.Context) (err error) {
	d.ctx, d.cancel = context.WithCancel(ctx)
	if d.dir, err = os.MkdirTemp("", "queen-demo-"); err != nil {
		return err
	}
	d.secret, d.token = "demo-hook-"+randomHex(16), "demo-api-"+randomHex(16)
	logs := &lockedWriter{w: d.o.Logs}
	logging.Setup(logs, "demo", d.secret, d.token) // go-redis's own lines

	fmt.Fprintf(d.o.Out, "queen-app demo: the whole system on this machine; nothing installed, no network.\n"+
		"GitHub and the Queen's export are a local SANDBOX on 127.0.0.1 (internal/sandbox), not github.com.\n"+
		"Freeing: %s.\n\n", flagsText(d.o.FlagsOn))

	d.mr = miniredis.NewMiniRedis()
	if err := d.mr.StartAddr("127.0.0.1:0"); err != nil {
		return fmt.Errorf("embedded Redis: %w", err)
	}
	d.rdb = redis.NewClient(&redis.Options{Addr: d.mr.Addr()})
	d.insp = asynq.NewInspectorFromRedisClient(d.rdb)
	d.logf("redis", "embedded Redis (miniredis) on %s", d.mr.Addr())
	// The servers serve only a ledger that exists: the demo creates it, as
	// queenctl ledger init does before a first deployment starts.
	id, _, err := ledger.New(d.rdb, ledger.Options{}).Init(d.ctx, "demo")
	if err != nil {
		return fmt.Errorf("ledger init: %w", err)
	}
	d.logf("ledger", "created ledger %s (queenctl ledger init does this once per deployment)", id.ID)

	d.sb, err = sandbox.Start(sandbox.Options{Dir: filepath.Join(d.dir, "sandbox"), Repo: repo})
	if err != nil {
		return err
	}
	d.logf("sandbox", "GitHub (SANDBOX) %s: App %d installed on %s, git at %s", d.sb.GitHub.URL(),
		d.sb.GitHub.AppID(), repo, d.sb.Git.CloneURL())
	d.logf("sandbox", "the Queen's export (SANDBOX) %s", d.sb.Export.URL)

	var hookLn, apiLn, workLn net.Listener
	for _, ln := range []*net.Listener{&hookLn, &apiLn, &workLn} {
		if *ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
	}
	d.hookURL = "http://" + hookLn.Addr().String() + "/webhook"
	d.apiURL = "http://" + apiLn.Addr().String()
	d.workURL = "http://" + workLn.Addr().String()
	env := d.env(hookLn.Addr().String(), apiLn.Addr().String())
	hookCfg, err := config.Load(config.Webhook, func(k string) string { return env[k] })
	if err != nil {
		return fmt.Errorf("webhook configuration: %w", err)
	}
	workCfg, err := config.Load(config.Worker, func(k string) string {
		if k == "QUEEN_API_LISTEN" {
			return workLn.Addr().String()
		}
		return env[k]
	})
	if err != nil {
		return fmt.Errorf("worker configuration: %w", err)
	}

	d.goRun(func(ctx context.Context) error {
		return webhookserver.Run(ctx, hookCfg, logging.New(logs, "webhook", hookCfg.Secrets()...),
			webhookserver.Listeners{Webhook: hookLn, API: apiLn})
	})
	d.sb.GitHub.SetHook(d.hookURL, d.secret)
	if d.api, err = apiclient.New(d.apiURL, d.token, &http.Client{Timeout: 10 * time.Second}); err != nil {
		return err
	}
	d.api.Source = "queen"
	if err := d.waitHTTP(d.apiURL + "/healthz"); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	d.logf("webhook", "receiver %s, claims API %s", d.hookURL, d.apiURL)

	if err := d.stage(); err != nil {
		return err
	}
	if err := d.writeRows(); err != nil {
		return err
	}

	opts := workerserver.Options{Listener: workLn, CacheDir: filepath.Join(d.dir, "worker-cache"), Concurrency: 8}
	d.goRun(func(ctx context.Context) error {
		return workerserver.Run(ctx, workCfg, logging.New(logs, "worker", workCfg.Secrets()...), opts)
	})
	if err := d.waitHTTP(d.workURL + "/healthz"); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	d.logf("worker", "started (health and metrics %s): claim:sweep every %s, export:sweep every %s",
		d.workURL, SweepInterval, ExportSweepInterval)
	return nil
}

// env is the configuration of webhook and worker: what an operator would
// export, pointed at the embedded Redis and the sandbox.
func (d *run) env(hook, api string) map[string]string {
	env := map[string]string{}
	for _, m := range []map[string]string{d.sb.GitHubEnv(), d.sb.ExportEnv()} {
		for k, v := range m {
			env[k] = v
		}
	}
	flag := "off"
	if d.o.FlagsOn {
		flag = "on"
	}
	for k, v := range map[string]string{
		"QUEEN_REDIS_URL":             "redis://" + d.mr.Addr(),
		"GITHUB_WEBHOOK_SECRET":       d.secret,
		"QUEEN_API_TOKEN":             d.token,
		"QUEEN_LISTEN":                hook,
		"QUEEN_API_LISTEN":            api,
		"QUEEN_FREE_CLOSED_PR":        flag,
		"QUEEN_RELEASE_DEAD_CLAIMS":   flag,
		"QUEEN_REEVALUATE_DELAY":      ReevaluateDelay.String(),
		"QUEEN_SWEEP_INTERVAL":        SweepInterval.String(),
		"QUEEN_EXPORT_SWEEP_INTERVAL": ExportSweepInterval.String(),
		"QUEEN_REDELIVER_INTERVAL":    "0s", // every delivery here succeeds
		"QUEEN_BASE_BRANCH":           "master",
	} {
		env[k] = v
	}
	return env
}

func flagsText(on bool) string {
	if on {
		return "on (QUEEN_FREE_CLOSED_PR=on, QUEEN_RELEASE_DEAD_CLAIMS=on)"
	}
	return "off, shadow mode: every decision is recorded as would_free and nothing is freed"
}

// goRun runs a component until the demo ends.
func (d *run) goRun(fn func(context.Context) error) {
	done := make(chan error, 1)
	d.done = append(d.done, done)
	go func() { done <- fn(d.ctx) }()
}

func (d *run) waitHTTP(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within 30s: %v", url, err)
		}
		select {
		case err := <-d.firstExit():
			return fmt.Errorf("stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// firstExit reports a component that stopped on its own.
func (d *run) firstExit() <-chan error {
	out := make(chan error, 1)
	for _, c := range d.done {
		select {
		case err := <-c:
			c <- err
			out <- err
			return out
		default:
		}
	}
	return out
}

func (d *run) close() {
	if d.cancel != nil {
		d.cancel()
	}
	for _, c := range d.done {
		<-c
	}
	if d.rdb != nil {
		d.rdb.Close()
	}
	if d.sb != nil {
		d.sb.Close()
	}
	if d.mr != nil {
		d.mr.Close()
	}
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

// lockedWriter lets the components' loggers share one writer, a line at
// a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
