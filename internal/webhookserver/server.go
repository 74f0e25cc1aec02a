// Package webhookserver assembles cmd/webhook: the GitHub-facing receiver
// on QUEEN_LISTEN, and the claims API with /healthz, /readyz and /metrics
// on QUEEN_API_LISTEN, over one Redis.
package webhookserver

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ghevents"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/tasks"
)

// WebhookPath is where GitHub delivers on QUEEN_LISTEN (the App's webhook
// URL ends with it; the chart's Ingress routes only it).
const WebhookPath = "/webhook"

// Listeners lets tests pass listeners bound to free ports; nil fields
// listen on the configured addresses.
type Listeners struct {
	Webhook, API net.Listener
}

// Run serves until ctx ends, then shuts both servers down gracefully.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, ls Listeners) error {
	spec, err := cfg.Redis()
	if err != nil {
		return err
	}
	// Listen before anything waits on Redis or GitHub: a port in use stops
	// the binary naming its variable, and the probes reach a live process.
	if ls.Webhook == nil {
		if ls.Webhook, err = config.Listen("QUEEN_LISTEN", cfg.Listen); err != nil {
			return err
		}
	}
	if ls.API == nil {
		if ls.API, err = config.Listen("QUEEN_API_LISTEN", cfg.APIListen); err != nil {
			ls.Webhook.Close()
			return err
		}
	}
	hookTLS, err1 := tlsConfig(cfg.TLS, log)
	apiTLS, err2 := tlsConfig(cfg.APITLS, log)
	if err := config.Join(err1, err2); err != nil {
		ls.Webhook.Close()
		ls.API.Close()
		return err
	}
	rdb := redisconn.New(spec)
	defer rdb.Close()

	reg := metrics.NewRegistry()
	gh, err := githubapp.New(githubapp.Config{
		AppID: cfg.AppID, PrivateKey: cfg.PrivateKey, APIURL: cfg.APIURL, GraphQLURL: cfg.GraphQLURL,
		Metrics: must(githubapp.NewPromMetrics(reg)),
	})
	if err != nil {
		return err
	}
	// Stopped, and waited for, before Redis is closed.
	ctx, cancel := context.WithCancel(ctx)
	// A delivery's installed check is answered in memory: its enqueue is
	// its one Redis round trip.
	registry := installs.NewCache(ctx, rdb)
	var syncing sync.WaitGroup
	syncing.Add(1)
	go func() { defer syncing.Done(); installs.SyncUntilDone(ctx, gh, registry.Registry, log) }()
	defer func() { cancel(); syncing.Wait(); <-registry.Done() }()

	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	reg.MustRegister(metrics.NewQueueCollector(insp, tasks.Queue))
	reg.MustRegister(redisavail.NewUpCollector(func(ctx context.Context) error { return rdb.Ping(ctx).Err() }))
	settings := redisavail.NewSettingsWatch(rdb, log)
	settings.Register(reg)
	hook, err := ghevents.NewHandler(ghevents.Config{
		Secrets:         [][]byte{[]byte(cfg.WebhookSecret), []byte(cfg.WebhookSecretPrev)},
		Enqueuer:        ackedEnqueuer{tasks.NewEnqueuer(client, insp)},
		Installs:        registry,
		Deliveries:      ghevents.NewDeliveryLog(rdb),
		ReevaluateDelay: cfg.ReevaluateDelay,
		Logger:          log,
		Metrics:         ghevents.NewMetrics(reg),
	})
	if err != nil {
		return err
	}
	led := ledger.New(rdb, ledger.Options{AuditMaxLen: cfg.AuditMaxLen,
		FreeClosedPR: cfg.FreeClosedPR, ReleaseDeadClaims: cfg.ReleaseDeadClaims})
	// Every read and write of the ledger answers 503 until it is opened,
	// and whenever it is missing, replaced or newer while running.
	led.Guard()
	reg.MustRegister(metrics.NewStateGauge("queen_ledger_state",
		"1 for the ledger's state (open, or why it cannot be used), 0 for the others.", ledger.States, led.State))
	queues := func(readOnly bool) http.Handler {
		return asynqmon.New(asynqmon.Options{RootPath: strings.TrimSuffix(api.QueuesPath, "/"),
			RedisConnOpt: sharedRedis{rdb}, ReadOnly: readOnly})
	}
	claims, err := api.New(api.Config{
		Ledger: led,
		Token:  cfg.APIToken, ViewerToken: cfg.UIToken, Queues: queues(false), QueuesReadOnly: queues(true),
		ReviewFirst: cfg.ReviewFirst, Logger: log, Registerer: reg,
		Enqueuer: tasks.NewEnqueuer(client, insp), ExportWorkers: export.Workers{RDB: rdb},
		ExportRepo: cfg.ExportRepo, Started: led.WaitStarted,
		MaxWatchers: int(cfg.APIMaxWatchers), Done: ctx.Done(), // streams end as the shutdown begins
	})
	if err != nil {
		return err
	}

	creds := githubapp.NewCredentials(gh)
	reg.MustRegister(githubapp.NewStateGauge(creds))
	health := metrics.Health(reg, log, map[string]metrics.Check{
		"redis":  func(ctx context.Context) error { return redisconn.Refusal(rdb.Ping(ctx).Err(), spec) },
		"ledger": led.Err,
		// A maxmemory-policy that evicts drops rows and tasks silently.
		"redis_settings": settings.Check,
		// "refused" while GitHub refuses the App's id and key: every
		// delivery would wait for an installation sync that cannot succeed;
		// "unreachable" (degraded, still ready) while GitHub cannot be reached.
		"github_app": creds.Check,
	})

	// Either server failing stops both.
	errc := make(chan error, 2)
	run := func(addr string, ln net.Listener, tc *tls.Config, h http.Handler) {
		srv := serve.NewServer(addr, h, log)
		srv.TLSConfig = tc
		go func() {
			err := serve.RunListener(ctx, srv, ln, log)
			cancel()
			errc <- err
		}()
	}
	run(cfg.Listen, ls.Webhook, hookTLS, hookHandler(hook))
	run(cfg.APIListen, ls.API, apiTLS, apiHandler(health, claims))
	// The ledger opens (and migrates) once Redis answers; until then the
	// claims API answers 503 and /readyz says why. A Redis that can never
	// answer as configured, or a ledger newer than this binary, stops
	// both: exit 2.
	impossible := make(chan error, 1)
	syncing.Add(1)
	go func() {
		defer syncing.Done()
		err := redisconn.WaitReady(ctx, rdb, spec, log)
		if err != nil && ctx.Err() == nil {
			impossible <- config.RedisError(err)
			cancel()
			return
		}
		if err != nil {
			return
		}
		settings.Read(ctx)
		syncing.Add(1)
		go func() { defer syncing.Done(); settings.Watch(ctx, redisavail.SettingsEvery) }()
		if err := led.OpenUntilDone(ctx, log); err != nil {
			if ctx.Err() == nil {
				impossible <- err
				cancel()
			}
			return
		}
		log.Info("ready: Redis answers and the ledger is open", "ledger", led.ID())
		led.Watch(ctx, log)
	}()
	err = errors.Join(<-errc, <-errc)
	select {
	case bad := <-impossible:
		err = bad
	default:
	}
	client.Close()
	return err
}

// tlsConfig is the TLS of a listener with pair, nil for plain HTTP. Load
// has checked the pair; one broken since is refused as Load would.
func tlsConfig(pair config.TLSPair, log *slog.Logger) (*tls.Config, error) {
	if !pair.Enabled() {
		return nil, nil
	}
	c, err := serve.TLSConfig(pair.CertFile, pair.KeyFile, log)
	if err != nil {
		return nil, pair.Error(err)
	}
	return c, nil
}

// sharedRedis hands asynqmon the process's Redis client instead of a
// second pool of its own.
type sharedRedis struct{ c redis.UniversalClient }

func (s sharedRedis) MakeRedisClient() any { return s.c }

// ackedEnqueuer enqueues a delivery's task under redisconn.DeliveryWrite:
// with Sentinel the 202 waits until a replica holds the task.
type ackedEnqueuer struct{ *tasks.Enqueuer }

func (e ackedEnqueuer) Enqueue(ctx context.Context, t *asynq.Task) (tasks.Result, error) {
	return e.Enqueuer.Enqueue(redisconn.DeliveryWrite(ctx), t)
}

// Neither listener ever redirects: ServeMux answers an unclean path with a
// redirect before any handler runs, so those paths are refused in front of
// it.

// hookHandler serves QUEEN_LISTEN: POST /webhook, whose handler holds its
// deliveries in flight to ghevents.Limits.
func hookHandler(hook http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, hook)
	return serve.RefuseUnclean(mux)
}

// apiHandler serves QUEEN_API_LISTEN: /v1 and /ui requests reach the claims API with
// their path as sent, so it authenticates them before anything else; health
// and metrics are beside it.
func apiHandler(health *http.ServeMux, claims http.Handler) http.Handler {
	rest := serve.RefuseUnclean(health)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/v1" || strings.HasPrefix(p, "/v1/") || p == "/ui" || strings.HasPrefix(p, api.UIPath) {
			claims.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
