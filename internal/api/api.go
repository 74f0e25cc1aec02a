// Package api serves the claims API under /v1: the Queen writes its dispatch
// rows and reads claim views, held paths and admission answers; people
// override claims. Every request needs the bearer token; every answer is
// JSON, errors included.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/tasks"
)

// MaxBodyBytes caps a request body.
const MaxBodyBytes = 1 << 20

// SourceHeader optionally names the writer recorded in the audit (import
// tools, queenctl); "api" when absent.
const SourceHeader = "X-Queen-Source"

// Config configures the API handler.
type Config struct {
	Ledger      *ledger.Ledger // required
	Token       string         // required: the bearer token of every /v1 request
	ReviewFirst bool           // QUEEN_REVIEW_FIRST: admission applies the review-first card
	Now         func() time.Time
	Logger      *slog.Logger          // nil: discard
	Registerer  prometheus.Registerer // nil: no metrics
	// Enqueuer stores the export:push tasks a person asks for; nil answers
	// those requests 503 "export push not configured".
	Enqueuer Enqueuer
}

// Enqueuer stores a task, treating an existing task id as success;
// *tasks.Enqueuer is one.
type Enqueuer interface {
	Enqueue(ctx context.Context, t *asynq.Task) (tasks.Result, error)
}

type server struct {
	ledger      *ledger.Ledger
	tokenSum    [sha256.Size]byte
	reviewFirst bool
	now         func() time.Time
	enqueuer    Enqueuer
	log         *slog.Logger
	requests    *prometheus.CounterVec
	routes      []route
}

// New returns the handler of the /v1 routes. Mount it at "/v1/".
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Token == "":
		return nil, errors.New("api: Config.Token is empty")
	case cfg.Ledger == nil:
		return nil, errors.New("api: Config.Ledger is nil")
	}
	s := &server{
		ledger:      cfg.Ledger,
		tokenSum:    sha256.Sum256([]byte(cfg.Token)),
		reviewFirst: cfg.ReviewFirst,
		now:         cfg.Now,
		enqueuer:    cfg.Enqueuer,
		log:         cfg.Logger,
	}
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
	s.routes = []route{
		{pattern: "/v1/repos/{owner}/{repo}/dispatches/{issue}", methods: map[string]handler{
			http.MethodPut: {"put_dispatch", s.putDispatch}, http.MethodDelete: {"delete_dispatch", s.deleteDispatch}}},
		{pattern: "/v1/repos/{owner}/{repo}/claims/{issue}", methods: map[string]handler{
			http.MethodGet: {"get_claim", s.getClaim}}},
		{pattern: "/v1/repos/{owner}/{repo}/claims/{issue}/free", methods: map[string]handler{
			http.MethodPost: {"free", s.free}}},
		{pattern: "/v1/repos/{owner}/{repo}/claims/{issue}/keep", methods: map[string]handler{
			http.MethodPost: {"keep", s.keep}}},
		{pattern: "/v1/claims", methods: map[string]handler{
			http.MethodGet: {"list_claims", s.listClaims}}},
		{pattern: "/v1/repos/{owner}/{repo}/held-paths", methods: map[string]handler{
			http.MethodGet: {"held_paths", s.heldPaths}}},
		{pattern: "/v1/repos/{owner}/{repo}/admission", methods: map[string]handler{
			http.MethodPost: {"admission", s.admission}}},
		{pattern: "/v1/repos/{owner}/{repo}/exports/{issue}/push", methods: map[string]handler{
			http.MethodPost: {"export_push", s.exportPush}}},
	}
	for i := range s.routes {
		s.routes[i].segs = strings.Split(strings.TrimPrefix(s.routes[i].pattern, "/"), "/")
	}
	return s, nil
}

// request is one matched request with its path parameters checked.
type request struct {
	*http.Request
	repo   string
	issue  int64
	source string
}

type handler struct {
	name string
	fn   func(ctx context.Context, w *responseWriter, r *request) error
}

type route struct {
	pattern string
	segs    []string
	methods map[string]handler
}

// match binds the route's {params} to the path's segments.
func (rt *route) match(segs []string) (map[string]string, bool) {
	if len(segs) != len(rt.segs) {
		return nil, false
	}
	var params map[string]string
	for i, p := range rt.segs {
		if strings.HasPrefix(p, "{") {
			if params == nil {
				params = map[string]string{}
			}
			params[p[1:len(p)-1]] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, true
}

func (s *server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := &responseWriter{ResponseWriter: rw}
	start := time.Now()
	name := s.serve(w, r)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if s.requests != nil {
		s.requests.WithLabelValues(name, strconv.Itoa(w.code)).Inc()
	}
	level := slog.LevelDebug
	if w.code >= 500 {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", name),
		slog.Int("status", w.code), slog.Duration("took", time.Since(start))}
	if w.err != nil {
		attrs = append(attrs, slog.String("err", w.err.Error()))
	}
	s.log.LogAttrs(r.Context(), level, "api request", attrs...)
}

// serve answers the request and returns the route's name for metrics and logs.
func (s *server) serve(w *responseWriter, r *http.Request) string {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="queen-app"`)
		w.fail(http.StatusUnauthorized, "missing or wrong bearer token in the Authorization header", "")
		return "unauthorized"
	}
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	for i := range s.routes {
		rt := &s.routes[i]
		params, ok := rt.match(segs)
		if !ok {
			continue
		}
		h, ok := rt.methods[r.Method]
		if !ok {
			allow := make([]string, 0, len(rt.methods))
			for m := range rt.methods {
				allow = append(allow, m)
			}
			sort.Strings(allow)
			w.Header().Set("Allow", strings.Join(allow, ", "))
			w.fail(http.StatusMethodNotAllowed, r.Method+" is not allowed on "+rt.pattern, "")
			return "method_not_allowed"
		}
		req, perr := s.bind(r, params)
		if perr != nil {
			w.failErr(perr)
			return h.name
		}
		ctx, cancel := context.WithTimeout(r.Context(), redisavail.Budget)
		defer cancel()
		if err := h.fn(ctx, w, req); err != nil {
			w.failErr(err)
		}
		return h.name
	}
	w.fail(http.StatusNotFound, "no such route: "+r.URL.Path, "")
	return "not_found"
}

// authorized compares sha256 sums of the given and the expected token in
// constant time, so neither the content nor the length leaks.
func (s *server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

var sourcePattern = regexp.MustCompile(`^[A-Za-z0-9._:@/-]{1,64}$`)

// ValidSource reports whether s may name a writer in SourceHeader.
func ValidSource(s string) bool { return sourcePattern.MatchString(s) }

func (s *server) bind(r *http.Request, params map[string]string) (*request, error) {
	req := &request{Request: r, source: "api"}
	if owner, ok := params["owner"]; ok {
		repo, err := parseRepo(owner + "/" + params["repo"])
		if err != nil {
			return nil, err
		}
		req.repo = repo
	}
	if s, ok := params["issue"]; ok {
		n, err := parseIssue(s)
		if err != nil {
			return nil, err
		}
		req.issue = n
	}
	if src := r.Header.Get(SourceHeader); src != "" {
		if !sourcePattern.MatchString(src) {
			return nil, badField(SourceHeader, "must be 1 to 64 letters, digits or ._:@/-")
		}
		req.source = src
	}
	return req, nil
}
