package redisconn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// NoEviction is the only maxmemory-policy under which Redis never drops a
// queued task or a claim to make room.
const NoEviction = "noeviction"

// Settings are the Redis settings that decide whether it keeps what the
// ledger and the queue write: its eviction policy and its persistence.
type Settings struct {
	// Refused is Redis refusing CONFIG GET (a managed Redis renames or
	// forbids it): then every setting is unknown, which is not unsafe.
	Refused error
	// Err is a read that failed otherwise (Redis unreachable, not ready):
	// it says nothing of the settings.
	Err        error
	Policy     string // maxmemory-policy
	AppendOnly string // appendonly: "yes" or "no"
	Save       string // save: "" when RDB snapshots are off
}

// ReadSettings reads s with CONFIG GET. A Redis Cluster answers from one
// node; the chart's nodes share one configuration.
func ReadSettings(ctx context.Context, rdb redis.UniversalClient) Settings {
	var s Settings
	got := map[string]string{}
	for _, name := range []string{"maxmemory-policy", "appendonly", "save"} {
		m, err := rdb.ConfigGet(ctx, name).Result()
		if err != nil && configRefused(err) {
			return Settings{Refused: err}
		}
		if err != nil {
			return Settings{Err: err}
		}
		for k, v := range m {
			got[k] = v
		}
	}
	s.Policy, s.AppendOnly, s.Save = got["maxmemory-policy"], got["appendonly"], strings.TrimSpace(got["save"])
	return s
}

// Known reports whether Redis answered CONFIG GET.
func (s Settings) Known() bool { return s.Refused == nil && s.Err == nil }

// configRefused reports Redis answering CONFIG GET with a refusal of the
// command (renamed away, or outside the user's ACL), not an outage.
func configRefused(err error) bool {
	if redis.IsPermissionError(err) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.HasPrefix(msg, "err unknown command") || strings.HasPrefix(msg, "err unknown subcommand")
}

// EvictionError is a maxmemory-policy that evicts: a readiness failure.
type EvictionError struct{ Policy string }

func (e *EvictionError) Error() string { return "redis: " + e.Word() }

// Word is /readyz's reason for it (metrics.Health reads it): the policy
// and the fix.
func (e *EvictionError) Word() string {
	return "maxmemory-policy " + e.Policy + " evicts rows; set " + NoEviction
}

// Evicts reports whether Redis may drop keys when full: a known policy
// other than noeviction.
func (s Settings) Evicts() bool { return s.Known() && s.Policy != NoEviction }

// Persistent reports whether Redis writes its data to disk (AOF or RDB
// snapshots); false when unknown.
func (s Settings) Persistent() bool {
	return s.Known() && (s.AppendOnly == "yes" || s.Save != "")
}

// String says the settings in one line, for status output and logs.
func (s Settings) String() string {
	if s.Err != nil {
		return fmt.Sprintf("settings not read: %v", s.Err)
	}
	if !s.Known() {
		return fmt.Sprintf("settings unknown (CONFIG GET refused: %v)", s.Refused)
	}
	persist := "persistence off (appendonly no, no save): a restart loses everything"
	switch {
	case s.AppendOnly == "yes":
		persist = "appendonly yes"
	case s.Save != "":
		persist = fmt.Sprintf("RDB snapshots (save %q), appendonly no", s.Save)
	}
	policy := "maxmemory-policy " + s.Policy
	if s.Evicts() {
		policy += " (evicts rows and tasks when full: set " + NoEviction + ")"
	}
	return policy + ", " + persist
}
