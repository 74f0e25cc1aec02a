// Package worker is queen-app's asynq worker: one handler per task type
// (claim:reevaluate, claim:sweep, deliveries:redeliver, export:sweep,
// export:push); internal/workerserver runs them in the worker process.
//
// Every handler follows the same rules: a GitHub or export read that failed
// decides nothing; rate limits and outages return a retry.Wait, which keeps
// the task's retry budget; a refusal GitHub will not change is
// retry.Permanent (archived with its reason); anything else is an ordinary
// error, retried with backoff until the budget is spent.
package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/schedule"
	"github.com/queen-app/queen-app/internal/tasks"
)

// Defaults of Deps.
const (
	// DefaultSuspendedWait is how long a task of a suspended installation
	// waits before looking again.
	DefaultSuspendedWait = 5 * time.Minute
	// DefaultCloseRetries is how many times a PR still listed open right
	// after its close event is read again before the read counts.
	DefaultCloseRetries = 3
	// DefaultPushesPerInstallation bounds concurrent export pushes of one
	// installation (GitHub's secondary limits punish bursts of writes).
	DefaultPushesPerInstallation = 2
	// DefaultWriteSpacing spaces the content-creating requests (PR
	// creations) of one installation; git pushes are not paced.
	DefaultWriteSpacing = time.Second
	// DefaultListingBudget bounds the export:sweep's best-effort listing.
	DefaultListingBudget = 3 * time.Minute
	// DefaultUnsyncedWait is how long a task waits for the installs
	// registry's first complete sync before looking again.
	DefaultUnsyncedWait = 10 * time.Second
)

// GitHub is what the handlers read from GitHub; *githubapp.App is one.
type GitHub interface {
	ListBranchPRs(ctx context.Context, installationID int64, owner, repo, branch string) ([]githubapp.PR, error)
	BatchPRStates(ctx context.Context, installationID int64, owner, repo string, branches []string) map[string]githubapp.BatchResult
	BranchHead(ctx context.Context, installationID int64, owner, repo, branch string) (string, error)
	Issue(ctx context.Context, installationID int64, owner, repo string, n int) (open bool, title string, err error)
	CreatePR(ctx context.Context, installationID int64, owner, repo, base, head, title, body string) (int, error)
	InstallationToken(ctx context.Context, installationID int64) (string, error)
	installs.Source
}

// Export configures the export push; a nil *Export in Deps disables it.
type Export struct {
	Repo    string // QUEEN_EXPORT_REPO
	Client  *export.Client
	Git     *export.Git
	Base    string // QUEEN_BASE_BRANCH
	DryRun  bool
	Lister  Lister // the listing read by export:sweep; default Client
	Enqueue *tasks.Enqueuer
}

// Lister reads the export's listing; *export.Client is one.
type Lister interface {
	List(ctx context.Context) (*export.Listing, error)
}

// Deps are the worker's collaborators.
type Deps struct {
	Ledger      *ledger.Ledger
	Installs    *installs.Registry
	GitHub      GitHub
	Redeliverer *githubapp.Redeliverer // nil: deliveries:redeliver does nothing
	Export      *Export                // nil: export tasks do nothing
	Metrics     *metrics.Worker        // nil: unregistered collectors
	Registerer  prometheus.Registerer  // the worker's own extra collectors; nil: none
	Logger      *slog.Logger
	Now         func() time.Time
	// RDB holds the leases that keep each periodic task to one run at a
	// time across every worker, and the PR-creation turns of each
	// installation (nil: PR creations are not paced; tests only).
	RDB redis.UniversalClient

	// Tuning; zero values take the Default* constants.
	SuspendedWait         time.Duration // wait of a suspended installation's task
	CloseRetries          int           // reads of a PR still open after its close
	PushesPerInstallation int           // concurrent export pushes per installation
	WriteSpacing          time.Duration // between PR creations of one installation; < 0: none
	PRsPerMinute          int           // PR creations per installation in any minute
	PRsPerHour            int           // PR creations per installation in any hour
	PaceMaxWait           time.Duration // longest in-task wait for a turn; further out: waiting
	ListingBudget         time.Duration // export:sweep's listing read
	ReadWindow            time.Duration // a reevaluation's wait for others to read with; < 0: none
}

// Worker holds the task handlers.
type Worker struct {
	d       Deps
	log     *slog.Logger
	m       *metrics.Worker
	now     func() time.Time
	pub     *export.Publisher // template; nil when the export is off
	orphans prometheus.Gauge

	// Outages, across the tasks of this worker. GitHub failing (5xx,
	// timeouts, GraphQL INTERNAL) fails every installation's calls alike;
	// a secondary rate limit that named no wait is one installation's own
	// (appLimits: the App's calls as itself).
	github  retry.Outage
	limited retry.Outages[int64]
	export  retry.Outage // the export or git failing

	pace *pacer // PR-creation turns per installation, in Redis

	mu    sync.Mutex
	slots map[int64]chan struct{} // concurrent pushes per installation

	// syncing is set while a sync started by a task that found the
	// registry unsynced runs (resync).
	syncing atomic.Bool

	batches map[batchKey]*readBatch // reads waiting to be sent together
}

// New returns a Worker over d, filling in defaults.
func New(d Deps) *Worker {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.SuspendedWait <= 0 {
		d.SuspendedWait = DefaultSuspendedWait
	}
	if d.CloseRetries <= 0 {
		d.CloseRetries = DefaultCloseRetries
	}
	if d.PushesPerInstallation <= 0 {
		d.PushesPerInstallation = DefaultPushesPerInstallation
	}
	if d.WriteSpacing < 0 {
		d.WriteSpacing = 0
	} else if d.WriteSpacing == 0 {
		d.WriteSpacing = DefaultWriteSpacing
	}
	if d.ListingBudget <= 0 {
		d.ListingBudget = DefaultListingBudget
	}
	if d.PRsPerMinute <= 0 {
		d.PRsPerMinute = DefaultPRsPerMinute
	}
	if d.PRsPerHour <= 0 {
		d.PRsPerHour = DefaultPRsPerHour
	}
	if d.PaceMaxWait <= 0 {
		d.PaceMaxWait = DefaultPaceMaxWait
	}
	if d.ReadWindow < 0 {
		d.ReadWindow = 0
	} else if d.ReadWindow == 0 {
		d.ReadWindow = DefaultReadWindow
	}
	w := &Worker{d: d, log: d.Logger, m: d.Metrics, now: d.Now,
		slots: map[int64]chan struct{}{}, batches: map[batchKey]*readBatch{},
		pace: &pacer{rdb: d.RDB, gap: d.WriteSpacing, perMinute: d.PRsPerMinute, perHour: d.PRsPerHour,
			maxWait: d.PaceMaxWait, now: d.Now},
		limited: retry.Outages[int64]{Base: SecondaryLimitWait, Max: MaxSecondaryLimitWait, Floor: SecondaryLimitWait}}
	if w.m == nil {
		w.m = metrics.NewWorker(prometheus.NewRegistry())
	}
	w.orphans = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "queen_export_unmatched_branches",
		Help: "Export branches with no ledger row, as of the last export listing read.",
	})
	if d.Registerer != nil {
		d.Registerer.MustRegister(w.orphans)
	}
	if e := d.Export; e != nil {
		if e.Lister == nil && e.Client != nil {
			e.Lister = e.Client
		}
		w.pub = &export.Publisher{Export: e.Client, Git: e.Git, Base: e.Base, DryRun: e.DryRun, Logger: w.log}
	}
	return w
}

// Register installs one handler per task type on mux.
func (w *Worker) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(tasks.TypeReevaluate, w.observe(tasks.TypeReevaluate, w.Reevaluate))
	mux.HandleFunc(tasks.TypeSweep, w.observe(tasks.TypeSweep, w.alone(tasks.TypeSweep, w.Sweep)))
	mux.HandleFunc(tasks.TypeRedeliver, w.observe(tasks.TypeRedeliver, w.alone(tasks.TypeRedeliver, w.Redeliver)))
	mux.HandleFunc(tasks.TypeExportSweep, w.observe(tasks.TypeExportSweep, w.alone(tasks.TypeExportSweep, w.ExportSweep)))
	mux.HandleFunc(tasks.TypeExportPush, w.observe(tasks.TypeExportPush, w.ExportPush))
}

// PeriodicLeaseTTL bounds how long a killed worker's periodic run keeps the
// next ones out; the running one renews its lease every third of it.
const PeriodicLeaseTTL = 30 * time.Second

// PeriodicLeaseKey is the lease of periodic task typ's running run.
func PeriodicLeaseKey(typ string) string { return "queen:periodic:" + typ + ":running" }

// alone runs a periodic task only when no run of its type goes on anywhere:
// a run that outlasted its period was joined by the next slot's, and 7 of 10
// failed deliveries were redelivered twice. A skipped slot is counted.
func (w *Worker) alone(typ string, h func(context.Context, *asynq.Task) error) func(context.Context, *asynq.Task) error {
	return func(ctx context.Context, t *asynq.Task) error {
		if w.d.RDB == nil {
			return h(ctx, t)
		}
		id, _ := asynq.GetTaskID(ctx)
		l := &schedule.Lease{RDB: w.d.RDB, Key: PeriodicLeaseKey(typ), Owner: id + ":" + randomID(), TTL: PeriodicLeaseTTL}
		held, err := l.Hold(ctx, func(ctx context.Context) error { return h(ctx, t) })
		if !held && err == nil {
			w.m.PeriodicSkipped.WithLabelValues(typ).Inc()
			w.taskLog(ctx, t).Info("periodic run skipped: an earlier run still goes on")
		}
		return err // not held with an error: Redis unreachable, asynq retries the slot
	}
}

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// observe counts a handler's runs by result and times them.
func (w *Worker) observe(typ string, h func(context.Context, *asynq.Task) error) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		start := time.Now()
		// A ledger that is missing, replaced or newer decides nothing: no
		// free, no push; the task waits for it without spending retries.
		err := w.d.Ledger.Err(ctx)
		if err == nil {
			err = h(ctx, t)
		}
		var ue *ledger.UnavailableError
		if errors.As(err, &ue) {
			err = retry.Wait(ledger.CheckEvery, "ledger "+ue.State, err)
		}
		w.m.TaskDuration.WithLabelValues(typ).Observe(time.Since(start).Seconds())
		w.m.TaskRuns.WithLabelValues(typ, resultOf(err)).Inc()
		return err
	}
}

// resultOf names what a handler's error asks of asynq: ok, wait (retry
// without spending the budget), refused (archived), retry.
func resultOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case !retry.IsFailure(err):
		return "wait"
	case retry.IsPermanent(err):
		return "refused"
	}
	return "retry"
}

// taskLog is the logger of one task run.
func (w *Worker) taskLog(ctx context.Context, t *asynq.Task) *slog.Logger {
	id, _ := asynq.GetTaskID(ctx)
	n, _ := asynq.GetRetryCount(ctx)
	return w.log.With("task_id", id, "task_type", t.Type(), "retried", n)
}

// resync syncs the installs registry from GitHub in the background, once
// at a time: a Redis that lost the registry (restarted empty, restored
// from a ledger backup, which does not hold it) is synced again when a
// task needs it, not only by the next claim sweep.
func (w *Worker) resync() {
	if w.d.GitHub == nil || !w.syncing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer w.syncing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), DefaultUnsyncedWait)
		defer cancel()
		if err := installs.Sync(ctx, w.d.GitHub, w.d.Installs); err != nil {
			w.log.Warn("installation sync for a waiting task failed", "err", err)
			return
		}
		w.log.Info("installations synced again: a task found the registry unsynced")
	}()
}

// errNotInstalled means the repository is not in the installs registry.
var errNotInstalled = errors.New("repository not installed")

// installation finds repo's installation: errNotInstalled when it has none,
// a wait while it is suspended or while the registry has never synced.
func (w *Worker) installation(ctx context.Context, repo string) (int64, error) {
	id, suspended, ok, err := w.d.Installs.Lookup(ctx, repo)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		synced, err := w.d.Installs.Synced(ctx)
		if err != nil {
			return 0, err
		}
		if !synced {
			w.resync()
			return 0, retry.Wait(DefaultUnsyncedWait, "installations not synced yet", fmt.Errorf("%s not in the registry", repo))
		}
		return 0, errNotInstalled
	case suspended:
		return 0, retry.Wait(w.d.SuspendedWait, "installation suspended", fmt.Errorf("installation %d of %s", id, repo))
	}
	return id, nil
}

// Waits of a secondary rate limit that named none: GitHub's guidance is at
// least a minute, then exponentially longer while retries fail.
const (
	SecondaryLimitWait    = time.Minute
	MaxSecondaryLimitWait = 30 * time.Minute
)

// appLimits keys the rate limits of the App's calls as itself (JWT: the
// webhook deliveries), which are no installation's.
const appLimits int64 = 0

// githubFailure turns a failed GitHub call of installation inst into what
// asynq should do: wait out a rate limit or an outage without spending the
// budget, archive a refusal, retry an unusable answer against the budget;
// never decide anything.
func (w *Worker) githubFailure(inst int64, err error) error {
	switch githubapp.Classify(err) {
	case githubapp.RateLimited:
		d, _ := githubapp.WaitFor(err)
		if !githubapp.NamedWait(err) {
			d = w.limited.Fail(inst, w.now())
		}
		return retry.Wait(d, "github rate limited", err)
	case githubapp.Permanent:
		return retry.Permanent(err)
	case githubapp.BadAnswer:
		return err // each try counts: waiting would park it forever
	}
	return retry.Wait(w.github.Fail(w.now()), "github unavailable", err)
}

// githubAnswered ends GitHub's outage and installation inst's rate-limit
// backoff.
func (w *Worker) githubAnswered(inst int64) {
	w.github.Succeed()
	w.limited.Succeed(inst)
}

// claimOutcome is the metric label of a ledger decision.
func claimOutcome(outcome string) string {
	switch outcome {
	case ledger.DecisionFree:
		return "freed"
	case ledger.DecisionWouldFree:
		return "would_free"
	case ledger.DecisionUnfree:
		return "unfreed"
	case ledger.DecisionWouldUnfree:
		return "would_unfree"
	}
	return "kept"
}

// redisStore keeps the Redeliverer's mark in Redis.
type redisStore struct{ rdb redis.UniversalClient }

// NewRedisStore is a githubapp.Store in rdb.
func NewRedisStore(rdb redis.UniversalClient) githubapp.Store { return redisStore{rdb} }

func (s redisStore) Get(ctx context.Context, key string) (string, error) {
	v, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

func (s redisStore) Set(ctx context.Context, key, value string) error {
	return s.rdb.Set(ctx, key, value, 0).Err()
}

func (s redisStore) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return s.rdb.SetNX(ctx, key, "1", ttl).Result()
}

func (s redisStore) Unclaim(ctx context.Context, key string) error { return s.rdb.Del(ctx, key).Err() }
