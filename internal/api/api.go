// Package api serves the claims API under /v1: the Queen writes its dispatch
// rows and reads claim views, held paths and admission answers; people
// override claims. Every request needs the bearer token; every answer is
// JSON, errors included.
package api

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/serve"
	"github.com/queen-app/queen-app/internal/tasks"
)

// MaxBodyBytes caps a request body.
const MaxBodyBytes = 1 << 20

// MaxInFlight bounds the authenticated requests served at once; past it a
// request is a 503 at once. Each buffers at most MaxBodyBytes, so bodies
// hold at most 64 MiB; the Queen's calls are short and few at a time.
const MaxInFlight = 64

// SourceHeader optionally names the writer recorded in the audit.
const SourceHeader = apiwire.SourceHeader

// Config configures the API handler.
type Config struct {
	Ledger *ledger.Ledger // required
	Token  string         // required: the bearer token of every /v1 request
	// ViewerToken (QUEEN_UI_TOKEN) optionally reads: the claims page and
	// every GET /v1/*; any other method with it is a 403.
	ViewerToken string
	// Queues and QueuesReadOnly serve the queue UI under QueuesPath to a
	// signed-in operator and viewer; nil answers 404.
	Queues, QueuesReadOnly http.Handler
	ReviewFirst            bool // QUEEN_REVIEW_FIRST: admission applies the review-first card
	Now                    func() time.Time
	Logger                 *slog.Logger          // nil: discard
	Registerer             prometheus.Registerer // nil: no metrics
	// Enqueuer stores the export:push tasks a person asks for; nil answers
	// those requests 503 "export push not configured".
	Enqueuer Enqueuer
	// ExportWorkers says whether a worker runs the export (required with
	// Enqueuer); *export.Workers is one.
	ExportWorkers ExportWorkers
	// ExportRepo is QUEEN_EXPORT_REPO, the one repository whose rows an
	// export push may name; "" refuses every push request.
	ExportRepo string
	// Started waits until the process's start-up (Redis, the ledger's
	// migration) is complete, false when ctx ends first: an authenticated
	// request waits for it up to redisavail.Budget, then gets a 503. nil
	// is started.
	Started func(ctx context.Context) bool
	// MaxWatchers bounds the watch streams open at once
	// (QUEEN_API_MAX_WATCHERS), apart from MaxInFlight; 0 is
	// DefaultMaxWatchers.
	MaxWatchers int
	// Heartbeat is the silence after which a stream sends ": ping"; 0 is
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// WatchBuffer is DefaultWatchBuffer when 0 (tests make it small).
	WatchBuffer int
	// Done, once closed, ends every watch stream: a server's graceful
	// shutdown waits for its handlers, and a stream never ends by itself.
	Done <-chan struct{}
}

// Enqueuer stores a task, treating an existing task id as success;
// *tasks.Enqueuer is one.
type Enqueuer interface {
	Enqueue(ctx context.Context, t *asynq.Task) (tasks.Result, error)
}

type server struct {
	ledger      *ledger.Ledger
	tokens      tokens
	sessions    *sessions
	queues      [2]http.Handler // by role: viewer, operator
	reviewFirst bool
	now         func() time.Time
	enqueuer    Enqueuer
	exporters   ExportWorkers
	exportRepo  string
	log         *slog.Logger
	requests    *prometheus.CounterVec
	inFlight    serve.Limiter
	watchers    serve.Limiter
	hub         *hub
	heartbeat   time.Duration
	done        <-chan struct{}
	metrics     *eventsMetrics
	auth        *authGuard
	started     func(ctx context.Context) bool
	mux         *http.ServeMux
}

// New returns the handler of the /v1 routes and the claims page (UIPath). Mount it so that it sees every
// /v1 request's path as sent: on a ServeMux, which cleans paths with a
// redirect first, a ".." path would skip the token check.
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Token == "":
		return nil, errors.New("api: Config.Token is empty")
	case cfg.ViewerToken == cfg.Token:
		return nil, errors.New("api: Config.ViewerToken is the API token")
	case cfg.Ledger == nil:
		return nil, errors.New("api: Config.Ledger is nil")
	case cfg.Enqueuer != nil && cfg.ExportWorkers == nil:
		return nil, errors.New("api: Config.ExportWorkers is nil while Enqueuer is set")
	}
	s := &server{
		ledger: cfg.Ledger,
		tokens: tokens{api: sha256.Sum256([]byte(cfg.Token)), viewer: sha256.Sum256([]byte(cfg.ViewerToken)),
			hasViewer: cfg.ViewerToken != ""},
		sessions:    newSessions(cfg.Token, cfg.ViewerToken),
		queues:      [2]http.Handler{cfg.QueuesReadOnly, cfg.Queues},
		reviewFirst: cfg.ReviewFirst,
		now:         cfg.Now,
		enqueuer:    cfg.Enqueuer,
		exporters:   cfg.ExportWorkers,
		exportRepo:  cfg.ExportRepo,
		log:         cfg.Logger,
		inFlight:    serve.NewLimiter(MaxInFlight),
		auth:        newAuthGuard(),
		started:     cfg.Started,
		watchers:    serve.NewLimiter(cmp.Or(cfg.MaxWatchers, DefaultMaxWatchers)),
		heartbeat:   cmp.Or(cfg.Heartbeat, DefaultHeartbeat),
		done:        cfg.Done,
	}
	s.hub = &hub{s: s, buffer: cmp.Or(cfg.WatchBuffer, DefaultWatchBuffer), subs: map[*watcher]struct{}{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer != nil {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_api_requests_total",
			Help: "Claims API requests by route and HTTP status code.",
		}, []string{"route", "code"})
		if err := cfg.Registerer.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("api: register metrics: %w", err)
			}
			c = are.ExistingCollector.(*prometheus.CounterVec)
		}
		s.requests = c
	}
	var err error
	if s.metrics, err = newEventsMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	s.mux = s.routes()
	return s, nil
}

// endpoint is one route: a ServeMux method and pattern, and its name in
// metrics and logs.
type endpoint struct {
	method, pattern, name string
	fn                    func(ctx context.Context, w *responseWriter, r *request) error
	// stream marks a route that answers for as long as the client stays:
	// it has no Redis budget, and counts toward the watchers' bound
	// instead of MaxInFlight.
	stream bool
}

func (s *server) endpoints() []endpoint {
	const (
		row   = "/v1/repos/{owner}/{repo}/dispatches/{issue}"
		claim = "/v1/repos/{owner}/{repo}/claims/{issue}"
	)
	return []endpoint{
		{method: http.MethodPut, pattern: row, name: "put_dispatch", fn: s.putDispatch},
		{method: http.MethodDelete, pattern: row, name: "delete_dispatch", fn: s.deleteDispatch},
		{method: http.MethodGet, pattern: claim, name: "get_claim", fn: s.getClaim},
		{method: http.MethodPost, pattern: claim + "/free", name: "free", fn: s.free},
		{method: http.MethodPost, pattern: claim + "/keep", name: "keep", fn: s.keep},
		{method: http.MethodGet, pattern: "/v1/claims", name: "list_claims", fn: s.listClaims},
		{method: http.MethodGet, pattern: "/v1/repos/{owner}/{repo}/held-paths", name: "held_paths", fn: s.heldPaths},
		{method: http.MethodPost, pattern: "/v1/repos/{owner}/{repo}/admission", name: "admission", fn: s.admission},
		{method: http.MethodPost, pattern: "/v1/repos/{owner}/{repo}/exports/{issue}/push", name: "export_push", fn: s.exportPush},
		{method: http.MethodGet, pattern: "/v1/audit", name: "audit", fn: s.audit},
		{method: http.MethodGet, pattern: OpenAPIPath, name: "openapi", fn: s.openAPI},
		{method: http.MethodGet, pattern: EventsPath, name: "events", fn: s.events, stream: true},
	}
}

// routes registers every endpoint, a JSON 405 naming the allowed methods
// for any other method on its path, and a JSON 404 for the rest.
func (s *server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	for _, e := range s.endpoints() {
		mux.Handle(e.method+" "+e.pattern, s.handler(e))
		allowed[e.pattern] = append(allowed[e.pattern], e.method)
		if e.method == http.MethodGet {
			allowed[e.pattern] = append(allowed[e.pattern], http.MethodHead) // ServeMux serves HEAD with GET
		}
	}
	for pattern, methods := range allowed {
		sort.Strings(methods)
		allow := strings.Join(methods, ", ")
		mux.HandleFunc(pattern, func(rw http.ResponseWriter, r *http.Request) {
			w := rw.(*responseWriter)
			w.route = "method_not_allowed"
			w.Header().Set("Allow", allow)
			w.fail(http.StatusMethodNotAllowed, r.Method+" is not allowed on "+pattern, "")
		})
	}
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		w := rw.(*responseWriter)
		w.route = "not_found"
		w.fail(http.StatusNotFound, "no such route: "+r.URL.Path, "")
	})
	return mux
}

// handler bounds the requests in flight (a stream by the watchers' bound,
// so watchers never turn ordinary requests away), binds the path's
// parameters and runs e, within the Redis budget unless it streams. An
// error after the answer started is logged, not sent.
func (s *server) handler(e endpoint) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := rw.(*responseWriter) // the mux is only ever served through ServeHTTP
		w.route = e.name
		if e.stream {
			if !s.watchers.Acquire() {
				w.route = "watchers_full"
				w.Header().Set("Retry-After", "5")
				w.fail(http.StatusServiceUnavailable, "too many watch streams connected; retry later", "")
				return
			}
			defer s.watchers.Release()
		} else {
			if !s.inFlight.Acquire() {
				w.route = "busy"
				serve.Refuse(w)
				return
			}
			defer s.inFlight.Release()
		}
		req, err := s.bind(r)
		if err != nil {
			w.failErr(err)
			return
		}
		ctx, cancel := r.Context(), context.CancelFunc(func() {})
		if !e.stream {
			ctx, cancel = context.WithTimeout(ctx, redisavail.Budget)
		}
		defer cancel()
		if err := e.fn(ctx, w, req); err != nil {
			if w.code != 0 {
				w.err = err
				return
			}
			w.failErr(err)
		}
	})
}

// request is one matched request with its path parameters checked.
type request struct {
	*http.Request
	repo   string
	issue  int64
	source string // X-Queen-Source, "" when absent
}

func (s *server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if isUI(r.URL.Path) {
		s.ui(rw, r)
		return
	}
	w := &responseWriter{ResponseWriter: rw}
	start := time.Now()
	s.serve(w, r)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if s.requests != nil {
		s.requests.WithLabelValues(w.route, strconv.Itoa(w.code)).Inc()
	}
	level := slog.LevelDebug
	if w.code >= 500 {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", w.route),
		slog.Int("status", w.code), slog.Duration("took", time.Since(start))}
	if w.err != nil {
		attrs = append(attrs, slog.String("err", w.err.Error()))
	}
	s.log.LogAttrs(r.Context(), level, "api request", attrs...)
}

// serve authenticates every request first (a wrong token from an address
// that keeps sending them is answered 429, the right one never), refuses
// a path ServeMux would redirect, and routes.
func (s *server) serve(w *responseWriter, r *http.Request) {
	switch s.roleOf(r) {
	case roleNone:
		s.refuse(w, r)
		return
	case roleViewer:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.route = "read_only"
			w.fail(http.StatusForbidden, "this token or sign-in only reads: "+r.Method+" needs the API token", "")
			return
		}
	}
	if !s.waitStarted(r.Context()) {
		w.route = "starting"
		w.Header().Set("Retry-After", "5")
		w.fail(http.StatusServiceUnavailable, "starting: waiting for Redis and the ledger's migration", "")
		return
	}
	if !serve.Canonical(r) {
		w.route = "unclean_path"
		w.fail(http.StatusBadRequest, serve.UncleanPathError, "path")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// refuse answers a wrong or missing token: 429 with Retry-After while
// its address waits, else 401.
func (s *server) refuse(w *responseWriter, r *http.Request) {
	if secs := s.refused(r, ""); secs > 0 {
		w.route = "throttled"
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		w.fail(http.StatusTooManyRequests, fmt.Sprintf("too many wrong bearer tokens from this address; retry in %d s", secs), "")
		return
	}
	w.route = "unauthorized"
	w.Header().Set("WWW-Authenticate", `Bearer realm="queen-app"`)
	w.fail(http.StatusUnauthorized, "missing or wrong bearer token in the Authorization header", "")
}

// refused counts a wrong token of r with the guard and answers the
// seconds its address must wait, 0 for none. The burst's first refusal
// and each wait are logged (with at, when not ""), never the token.
func (s *server) refused(r *http.Request, at string) int {
	addr := clientAddr(r)
	ref := s.auth.refuse(addr, s.now())
	if ref.throttled > 0 {
		return int((ref.throttled + time.Second - 1) / time.Second)
	}
	if ref.log {
		attrs := []slog.Attr{slog.String("client", addr), slog.Int("refused", ref.refused)}
		if at != "" {
			attrs = append(attrs, slog.String("at", at))
		}
		if ref.wait > 0 {
			attrs = append(attrs, slog.Duration("wait", ref.wait))
		}
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "api authentication refused", attrs...)
	}
	return 0
}

// roleOf is what r may do: by its bearer token, else by its session
// cookie (a session reads only, whichever token signed it in, so no page
// can be made to write for its visitor).
func (s *server) roleOf(r *http.Request) role {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return roleNone
		}
		return s.tokens.roleOf(strings.TrimSpace(token))
	}
	if ro, _, _ := s.sessions.read(r, s.now()); ro != roleNone {
		return roleViewer
	}
	return roleNone
}

func (s *server) bind(r *http.Request) (*request, error) {
	req := &request{Request: r}
	if owner := r.PathValue("owner"); owner != "" {
		repo, err := parseRepo(owner + "/" + r.PathValue("repo"))
		if err != nil {
			return nil, err
		}
		req.repo = repo
	}
	if s := r.PathValue("issue"); s != "" {
		n, err := parseIssue(s)
		if err != nil {
			return nil, err
		}
		req.issue = n
	}
	if src := r.Header.Get(SourceHeader); src != "" {
		if !apiwire.ValidSource(src) {
			return nil, badField(SourceHeader, "must be 1 to 64 letters, digits or ._:@/-")
		}
		req.source = src
	}
	return req, nil
}

// waitStarted waits for the start-up up to redisavail.Budget.
func (s *server) waitStarted(ctx context.Context) bool {
	if s.started == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, redisavail.Budget)
	defer cancel()
	return s.started(ctx)
}
