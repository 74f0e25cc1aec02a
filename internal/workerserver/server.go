// Package workerserver assembles cmd/worker: the asynq server running
// internal/worker's handlers, the periodic scheduler (one leader among the
// replicas), the installation sync and the health server, over one Redis.
package workerserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/logging"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/schedule"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/worker"
)

// Defaults of Options.
const (
	// DefaultConcurrency is 250 so that a burst of closes is read 100
	// branches per GraphQL query: only re-evaluations running at once share
	// a read (BenchmarkBurst: 1,000 closes cost 100 GitHub requests at 10,
	// 11 at 100), and while one read waits for its joiners the next fill
	// (BenchmarkWebhookToFree, 1,000 closes with no delay: p99 258-335 ms at
	// 100, 220-244 ms at 250). The handlers mostly wait on GitHub and Redis;
	// export pushes keep their own limit per installation.
	DefaultConcurrency = 250
	// StartupGrace is how long the health server waits for the worker to
	// start (Redis, the migration, a first installation sync) before it
	// answers anyway, /readyz saying why not ready.
	StartupGrace = 2 * time.Second
	// ReadyPoll is how often the worker asks whether GitHub takes the App's
	// key again before it logs "ready" (GitHub is asked at most every
	// githubapp.CredentialsCheckEvery whatever this says).
	ReadyPoll = 5 * time.Second
	// ShutdownTimeout is how long running tasks get to finish at SIGTERM;
	// the unfinished go back to the queue.
	ShutdownTimeout = 20 * time.Second

	// TaskCheckInterval is how often an idle worker asks Redis for a
	// pending task (asynq sleeps 0.5x to 1.5x of it), and
	// DelayedTaskCheckInterval how often a delayed or retried task is moved
	// to pending. asynq's defaults (1 s and 5 s) added up to 6.5 s on top of
	// QUEEN_REEVALUATE_DELAY before a webhook's re-read ran; these add at
	// most 55 ms. asynq scores a delayed task in whole seconds, so a burst
	// comes due at one instant: at that worst phase the p99 of 1,000 closes
	// was 372-514 ms past the delay at 50 ms and 100 ms, 336-416 ms at these,
	// the code otherwise the same (BenchmarkWebhookToFree). The price is
	// Redis commands while idle, those inside asynq's scripts counted: about
	// 300 a second, up from 100.
	TaskCheckInterval        = 20 * time.Millisecond
	DelayedTaskCheckInterval = 25 * time.Millisecond
)

// Options are the worker process's settings beyond config.Config.
type Options struct {
	Concurrency int    // QUEEN_WORKER_CONCURRENCY, DefaultConcurrency
	CacheDir    string // QUEEN_WORKER_CACHE_DIR: cached clones; default os.UserCacheDir()/queen-app
	// Listener serves /healthz, /readyz and /metrics; nil listens on
	// cfg.APIListen (tests pass one bound to a free port).
	Listener net.Listener
	// ReplicaID names this replica in the scheduler lease; default
	// hostname-pid-random.
	ReplicaID string
}

// OptionsFromEnv reads QUEEN_WORKER_CONCURRENCY and QUEEN_WORKER_CACHE_DIR.
// An error names each bad variable, like config's (config.Join).
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	var o Options
	var errs []error
	if v := strings.TrimSpace(getenv("QUEEN_WORKER_CONCURRENCY")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1000 {
			errs = append(errs, &config.Error{Var: "QUEEN_WORKER_CONCURRENCY", Problem: "must be a whole number from 1 to 1000"})
		}
		o.Concurrency = n
	}
	if v := strings.TrimSpace(getenv("QUEEN_WORKER_CACHE_DIR")); v != "" {
		if !filepath.IsAbs(v) {
			errs = append(errs, &config.Error{Var: "QUEEN_WORKER_CACHE_DIR", Problem: "must be an absolute path"})
		}
		o.CacheDir = v
	}
	return o, config.Join(errs...)
}

// Run is the worker process: the asynq server with every handler, the
// periodic scheduler (one leader among the replicas, by a Redis lease),
// the installation sync and the health server. It returns when ctx ends,
// after stopping the scheduler, shutting asynq down (tasks still running
// after ShutdownTimeout go back to the queue) and stopping the health server.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, o Options) error {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	spec, err := cfg.Redis()
	if err != nil {
		return err
	}
	// Listen before anything waits on Redis or GitHub: a port in use stops
	// the binary naming its variable, and the probes reach a live process.
	ln := o.Listener
	if ln == nil {
		if ln, err = config.Listen("QUEEN_API_LISTEN", cfg.APIListen); err != nil {
			return err
		}
	}
	rdb := redisconn.New(spec)
	defer rdb.Close()

	reg := metrics.NewRegistry()
	ghm, err := githubapp.NewPromMetrics(reg)
	if err != nil {
		return err
	}
	app, err := githubapp.New(githubapp.Config{
		AppID: cfg.AppID, PrivateKey: cfg.PrivateKey, APIURL: cfg.APIURL, GraphQLURL: cfg.GraphQLURL, Metrics: ghm,
	})
	if err != nil {
		return err // config.Load has parsed the key already
	}
	client := asynq.NewClientFromRedisClient(rdb)
	defer client.Close()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	reg.MustRegister(metrics.NewQueueCollector(insp, tasks.Queue))
	reg.MustRegister(redisavail.NewUpCollector(func(ctx context.Context) error { return rdb.Ping(ctx).Err() }))
	settings := redisavail.NewSettingsWatch(rdb, log)
	settings.Register(reg)
	wm := metrics.NewWorker(reg)

	registry := installs.New(rdb)
	led := ledger.New(rdb, ledger.Options{AuditMaxLen: cfg.AuditMaxLen,
		FreeClosedPR: cfg.FreeClosedPR, ReleaseDeadClaims: cfg.ReleaseDeadClaims})
	d := worker.Deps{
		Ledger:      led,
		Installs:    registry,
		GitHub:      app,
		Redeliverer: &githubapp.Redeliverer{App: app, Store: worker.NewRedisStore(rdb)},
		Metrics:     wm,
		Registerer:  reg,
		Logger:      log,
		RDB:         rdb,
	}
	if cfg.ExportEnabled() {
		ec, err := export.NewClient(cfg.ExportURL, cfg.ExportToken, nil)
		if err != nil {
			return &config.Error{Var: "QUEEN_EXPORT_URL", Problem: err.Error()}
		}
		dir, err := cacheDir(o.CacheDir)
		if err != nil {
			return err
		}
		d.Export = &worker.Export{
			Repo: cfg.ExportRepo, Client: ec, Git: export.NewGit(dir, cfg.GitURL),
			Base: cfg.BaseBranch, DryRun: cfg.ExportDryRun, Enqueue: tasks.NewEnqueuer(client, insp),
		}
		log.Info("export push enabled", "repo", cfg.ExportRepo, "dry_run", cfg.ExportDryRun, "cache", dir)
	}
	w := worker.New(d)
	mux := asynq.NewServeMux()
	w.Register(mux)

	ctx, stop := context.WithCancel(ctx)
	// Everything started here stops, and is waited for, before Redis closes.
	var bg sync.WaitGroup
	defer func() { stop(); bg.Wait() }()
	// The worker decides nothing while the ledger is not open (see
	// worker.Worker.observe): its tasks wait.
	led.Guard()
	reg.MustRegister(metrics.NewStateGauge("queen_ledger_state",
		"1 for the ledger's state (open, or why it cannot be used), 0 for the others.", ledger.States, led.State))
	// The health server outlives the scheduler and asynq's shutdown.
	hctx, stopHealth := context.WithCancel(context.Background())
	defer stopHealth()
	creds := githubapp.NewCredentials(app)
	reg.MustRegister(githubapp.NewStateGauge(creds))
	health := serve.NewServer(cfg.APIListen, serve.RefuseUnclean(metrics.Health(reg, log, map[string]metrics.Check{
		"redis":  func(ctx context.Context) error { return redisconn.Refusal(rdb.Ping(ctx).Err(), spec) },
		"ledger": led.Err,
		// A maxmemory-policy that evicts drops rows and tasks silently.
		"redis_settings": settings.Check,
		// "refused" while GitHub refuses the App's id and key: every
		// delivery would wait for an installation sync that cannot succeed;
		// "unreachable" (degraded, still ready) while GitHub cannot be reached.
		"github_app": creds.Check,
	})), log)
	healthDone := make(chan error, 1)
	up := make(chan struct{}) // closed once the worker runs its tasks
	go func() {
		// Health answers once the worker runs, as it always did, or after
		// StartupGrace while it waits for Redis: then the liveness probe
		// keeps it and /readyz says why.
		select {
		case <-up:
		case <-time.After(StartupGrace):
		case <-hctx.Done():
			ln.Close()
			healthDone <- nil
			return
		}
		err := serve.RunListener(hctx, health, ln, log)
		stop() // a health server that fails stops the worker
		healthDone <- err
	}()
	// The tasks wait for Redis and the ledger's migration; meanwhile
	// /readyz says why.
	err = redisconn.WaitReady(ctx, rdb, spec, log)
	if err != nil {
		err = config.RedisError(err) // a Redis that can never answer as configured: exit 2
	} else {
		settings.Read(ctx)
		bg.Go(func() { settings.Watch(ctx, redisavail.SettingsEvery) })
		err = led.OpenUntilDone(ctx, log) // a newer ledger: exit 2
	}
	if err != nil {
		stopped := ctx.Err() != nil
		stopHealth()
		herr := <-healthDone
		if !stopped {
			return err
		}
		return herr // stopped before the ledger opened
	}
	go led.Watch(ctx, log)

	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:     o.Concurrency,
		Queues:          map[string]int{tasks.Queue: 1},
		IsFailure:       retry.IsFailure,
		RetryDelayFunc:  retry.Delay,
		ShutdownTimeout: ShutdownTimeout,
		// See TaskCheckInterval.
		TaskCheckInterval:        TaskCheckInterval,
		DelayedTaskCheckInterval: DelayedTaskCheckInterval,
		ErrorHandler:             ErrorHandler(log),
		Logger:                   logging.Asynq(log),
		LogLevel:                 asynq.WarnLevel,
	})
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("asynq server: %w", err)
	}
	// One attempt before the scheduler starts, so the first sweeps know the
	// installed repositories; then in the background until it completes.
	// Meanwhile tasks that find a repository missing wait (Synced).
	sctx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	err = installs.Sync(sctx, app, registry)
	cancelSync()
	if err != nil {
		log.Warn("installation sync failed; retrying in the background", "err", err)
		bg.Go(func() { installs.SyncUntilDone(ctx, app, registry, log) })
	} else {
		log.Info("installations synced")
	}

	id := o.ReplicaID
	if id == "" {
		id = replicaID()
	}
	if d.Export != nil {
		announceExport(ctx, &bg, rdb, id, log)
	}
	sched := &schedule.Scheduler{
		RDB: rdb, Client: client, ID: id, Entries: Entries(cfg), Log: log.With("component", "scheduler"),
		OnLead: func(leading bool) {
			if leading {
				wm.Leader.Set(1)
			} else {
				wm.Leader.Set(0)
			}
		},
	}
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(ctx) }()

	close(up)
	log.Info("worker started", "replica", id, "concurrency", o.Concurrency,
		"free_closed_pr", cfg.FreeClosedPR, "release_dead_claims", cfg.ReleaseDeadClaims)
	// "ready" is said once /readyz would say it: never while GitHub refuses
	// the App's key; with github_app unreachable while GitHub is away.
	bg.Go(func() {
		err := creds.WaitTaken(ctx, ReadyPoll, log)
		var away *githubapp.UnreachableError
		switch {
		case errors.As(err, &away):
			log.Info("ready: Redis answers and the ledger is open; GitHub cannot be reached (degraded)", "github_app", githubapp.AppUnreachable, "err", err)
		case err == nil:
			log.Info("ready: Redis answers, the ledger is open and GitHub takes the App's key", "ledger", led.ID())
		}
	})

	<-ctx.Done()
	serr := <-schedDone
	srv.Shutdown()
	stopHealth()
	herr := <-healthDone
	log.Info("worker stopped")
	return errors.Join(serr, herr)
}

// Entries are the periodic tasks of cfg; an interval of 0 turns one off.
func Entries(cfg *config.Config) []schedule.Entry {
	var out []schedule.Entry
	add := func(typ string, every time.Duration, maxRetry int, timeout time.Duration) {
		if every <= 0 {
			return
		}
		out = append(out, schedule.Entry{Type: typ, Every: every, Options: []asynq.Option{
			asynq.Queue(tasks.Queue), asynq.MaxRetry(maxRetry), asynq.Timeout(timeout)}})
	}
	add(tasks.TypeSweep, cfg.SweepInterval, tasks.SweepMaxRetry, tasks.SweepTimeout)
	if cfg.ExportEnabled() {
		add(tasks.TypeExportSweep, cfg.ExportSweepInterval, tasks.ExportSweepMaxRetry, tasks.ExportSweepTimeout)
	}
	add(tasks.TypeRedeliver, cfg.RedeliverInterval, tasks.RedeliverMaxRetry, tasks.RedeliverTimeout)
	return out
}

// ErrorHandler logs every failed task run: archived ones at error level
// with the reason, waits and ordinary retries below.
func ErrorHandler(log *slog.Logger) asynq.ErrorHandler {
	return asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
		id, _ := asynq.GetTaskID(ctx)
		n, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		l := log.With("task_id", id, "task_type", t.Type(), "retried", n, "max_retry", maxRetry, "err", err)
		switch {
		case retry.IsPermanent(err) || n >= maxRetry:
			l.Error("task archived")
		case !retry.IsFailure(err):
			l.Info("task waits")
		default:
			l.Warn("task failed; retried later")
		}
	})
}

func cacheDir(dir string) (string, error) {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", &config.Error{Var: "QUEEN_WORKER_CACHE_DIR", Problem: "is unset and there is no user cache directory: " + err.Error()}
		}
		dir = filepath.Join(base, "queen-app")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", &config.Error{Var: "QUEEN_WORKER_CACHE_DIR", Problem: "cannot be created: " + err.Error()}
	}
	return dir, nil
}

func replicaID() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
