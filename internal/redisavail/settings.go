package redisavail

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/metrics"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/retry"
)

// SettingsEvery is how often a SettingsWatch reads Redis's settings again.
const SettingsEvery = time.Minute

// States of the settings gauges: what the last read found; unknown before
// one answered, or while Redis refuses CONFIG GET (a managed Redis).
const (
	SettingUnknown = "unknown"
	EvictionNone   = "noeviction"
	EvictionEvicts = "evicts"
	PersistenceOn  = "on"
	PersistenceOff = "off"
)

// EvictionStates and PersistenceStates label queen_redis_eviction_state
// and queen_redis_persistence_state.
var (
	EvictionStates    = []string{EvictionNone, EvictionEvicts, SettingUnknown}
	PersistenceStates = []string{PersistenceOn, PersistenceOff, SettingUnknown}
)

// SettingsWatch reads Redis's settings at start and every interval. Its
// Check fails while the maxmemory-policy evicts (rows and tasks vanish
// without a word); persistence off is logged once at WARN and shown by a
// gauge, not refused (a Redis that keeps nothing on restart is an
// operator's choice the ledger's identity catches). A Redis refusing CONFIG
// GET is unknown, logged once, never unsafe; a Redis that cannot be reached
// leaves the last reading standing (redis's own check says it is down).
type SettingsWatch struct {
	rdb redis.UniversalClient
	log *slog.Logger

	mu          sync.Mutex
	eviction    string
	persistence string
	policy      string
	warned      map[string]bool // the one-time lines already logged
}

// NewSettingsWatch watches rdb's settings, logging to log.
func NewSettingsWatch(rdb redis.UniversalClient, log *slog.Logger) *SettingsWatch {
	return &SettingsWatch{rdb: rdb, log: log, eviction: SettingUnknown, persistence: SettingUnknown, warned: map[string]bool{}}
}

// Register adds the two state gauges to reg.
func (w *SettingsWatch) Register(reg prometheus.Registerer) {
	reg.MustRegister(
		metrics.NewStateGauge("queen_redis_eviction_state",
			"1 for what Redis's maxmemory-policy does (noeviction, evicts, or unknown when CONFIG GET is refused), 0 for the others.",
			EvictionStates, w.Eviction),
		metrics.NewStateGauge("queen_redis_persistence_state",
			"1 for Redis's persistence (on: appendonly or a save rule; off: a restart loses everything; unknown), 0 for the others.",
			PersistenceStates, w.Persistence),
	)
}

// Watch reads the settings every interval until ctx ends (Read first for
// a reading at start).
func (w *SettingsWatch) Watch(ctx context.Context, interval time.Duration) {
	retry.Every(ctx, interval, func() { w.Read(ctx) })
}

// Read reads the settings once.
func (w *SettingsWatch) Read(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, Budget)
	defer cancel()
	s := redisconn.ReadSettings(ctx, w.rdb)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case s.Err != nil:
		return // an outage: the last reading stands
	case s.Refused != nil:
		w.eviction, w.persistence, w.policy = SettingUnknown, SettingUnknown, ""
		w.once("unknown", slog.LevelInfo, "redis settings unknown: CONFIG GET refused; check with the provider that maxmemory-policy is noeviction and persistence is on", "err", s.Refused)
		return
	}
	w.policy = s.Policy
	if s.Evicts() {
		if w.eviction != EvictionEvicts {
			w.log.Error("redis evicts: not ready until its maxmemory-policy is noeviction", "maxmemory_policy", s.Policy)
		}
		w.eviction = EvictionEvicts
	} else {
		if w.eviction == EvictionEvicts {
			w.log.Info("redis maxmemory-policy is noeviction again")
		}
		w.eviction = EvictionNone
	}
	if s.Persistent() {
		w.persistence = PersistenceOn
		return
	}
	w.persistence = PersistenceOff
	w.once("persistence", slog.LevelWarn, "redis persistence is off (appendonly no, no save rule): a restart loses the ledger and the queue",
		"appendonly", s.AppendOnly, "save", s.Save)
}

func (w *SettingsWatch) once(key string, level slog.Level, msg string, args ...any) {
	if w.warned[key] {
		return
	}
	w.warned[key] = true
	w.log.Log(context.Background(), level, msg, args...)
}

// Check is a readiness check: a *redisconn.EvictionError while the last
// reading found an evicting maxmemory-policy.
func (w *SettingsWatch) Check(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.eviction == EvictionEvicts {
		return &redisconn.EvictionError{Policy: w.policy}
	}
	return nil
}

// Eviction is the eviction gauge's state.
func (w *SettingsWatch) Eviction() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.eviction
}

// Persistence is the persistence gauge's state.
func (w *SettingsWatch) Persistence() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.persistence
}
