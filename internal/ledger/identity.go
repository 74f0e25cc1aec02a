package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/retry"
)

// Identity names one ledger. Init creates it once; a backup carries it and
// a restore puts it back, so a process that knew the ledger before a loss
// knows it again after the restore.
type Identity struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by,omitempty"` // the queen-app release that created it
}

// CheckEvery is how often a process re-reads the ledger's identity and
// schema (Watch): a ledger lost or replaced while running is an outage
// within this, plus one request's Redis budget.
const CheckEvery = 5 * time.Second

// Words of a closed gate, as /readyz and the metric name them.
const (
	StateOpen        = "open"
	StateStarting    = "starting"
	StateMissing     = "missing"
	StateReplaced    = "replaced"
	StateSchemaNewer = "schema_newer"
)

// States lists every word of State, open first.
var States = []string{StateOpen, StateStarting, StateMissing, StateReplaced, StateSchemaNewer}

// ErrUnavailable is what every read and write of a guarded ledger returns,
// wrapped in an *UnavailableError, while its gate is closed: the ledger
// is missing, was replaced, is newer than this code, or is not opened yet.
// Nothing was read or written; the caller waits and asks again.
var ErrUnavailable = errors.New("ledger: unavailable")

// UnavailableError says why the ledger cannot be used, and what to run.
type UnavailableError struct {
	State string // one of the State words but StateOpen
	msg   string
}

func (e *UnavailableError) Error() string { return e.msg }

// Word is /readyz's reason.
func (e *UnavailableError) Word() string { return e.State }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// What an operator runs; every message of a closed gate names them.
const (
	restoreHint = "restore the last backup with `queenctl ledger restore FILE`"
	initHint    = "create a new, empty ledger with `queenctl ledger init`"
	statusHint  = "`queenctl ledger status` shows what Redis holds"
)

var errStarting = &UnavailableError{State: StateStarting, msg: "starting: waiting for Redis and the ledger"}

func errMissing() *UnavailableError {
	return &UnavailableError{State: StateMissing, msg: "the claims ledger is missing from Redis (Redis restarted empty, " +
		"was flushed or evicted it, or is a new server): nothing is read, freed or pushed until it is back; " +
		restoreHint + ", or " + initHint + " on a new install; " + statusHint}
}

func errReplaced(known, found string) *UnavailableError {
	return &UnavailableError{State: StateReplaced, msg: fmt.Sprintf("the claims ledger in Redis was replaced while "+
		"queen-app ran (it served ledger %s, Redis now holds %s): nothing is read, freed or pushed; "+
		"%s, or restart queen-app to serve the ledger Redis holds; %s", known, found, restoreHint, statusHint)}
}

// SchemaError is a ledger written by a newer queen-app than this one. At
// start it stops the process before anything is written; while running it
// closes the gate.
type SchemaError struct{ Found, Known int }

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the claims ledger's schema is %d, newer than this queen-app knows (%d): "+
		"run the release that wrote it, or restore a backup taken before the upgrade with "+
		"`queenctl ledger restore --force FILE`", e.Found, e.Known)
}

func (l *Ledger) identityKey() string { return l.opts.Prefix + ":ledger" }

// markerKey holds, in each repository's slot, the identity of the ledger
// that wrote its rows: a write into a repository of another ledger is
// refused in the same atomic step, and a Redis that holds rows but no
// identity is a damaged ledger, never one to adopt.
func (l *Ledger) markerKey(repo string) string { return l.repoKey(repo, "ledger") }

// replacedBy closes the gate on a write that found the marker of another
// ledger, found, in a repository's slot, and returns why.
func (l *Ledger) replacedBy(found string) error {
	e := errReplaced(l.known(), found)
	l.setGate(e)
	return e
}

// gate is a guarded ledger's state: nil err is open.
type gate struct {
	err *UnavailableError
}

// usable is nil unless the ledger is guarded and its gate is closed.
func (l *Ledger) usable() error {
	if g := l.gate.Load(); g != nil && g.err != nil {
		return g.err
	}
	return nil
}

// Err is nil while the ledger can be used, else the *UnavailableError that
// says why not: /readyz's check of the ledger.
func (l *Ledger) Err(context.Context) error { return l.usable() }

// State is the gate's word: StateOpen, or why it is closed.
func (l *Ledger) State() string {
	if err := l.usable(); err != nil {
		return err.(*UnavailableError).State
	}
	return StateOpen
}

func (l *Ledger) setGate(err *UnavailableError) {
	if l.gate.Load() == nil {
		return // not guarded: a test's or a tool's ledger
	}
	l.gate.Store(&gate{err: err})
	if err == nil || err.State != StateStarting {
		l.settle.Do(func() { close(l.settled) })
	}
}

// WaitStarted waits until the ledger has left StateStarting (it is open,
// or closed for a reason its *UnavailableError names); false if ctx ends
// first. An unguarded ledger has started.
func (l *Ledger) WaitStarted(ctx context.Context) bool {
	if g := l.gate.Load(); g == nil || g.err != errStarting {
		return true
	}
	select {
	case <-l.settled:
		return true
	case <-ctx.Done():
		return false
	}
}

// known is the identity this process serves, "" before it opened one.
func (l *Ledger) known() string {
	if p := l.ident.Load(); p != nil {
		return *p
	}
	return ""
}

// ID is the identity of the ledger this process serves, "" before Open
// found one.
func (l *Ledger) ID() string { return l.known() }

// Status is what Redis holds of a ledger.
type Status struct {
	Identity *Identity // nil: none
	Schema   int       // 0: no schema key (a ledger of 0.1.0, or none)
	// Repos has rows; Rows counts them; Markers counts repositories whose
	// rows name a ledger (written since identities).
	Repos, Rows, Markers int64
	// AuditEntries is the audit stream's length.
	AuditEntries int64
}

// Legacy reports whether s is a ledger written before identities, which
// Open adopts: an older schema, some ledger data, and no repository
// written by a ledger with an identity.
func (s Status) Legacy() bool {
	return s.Identity == nil && s.Schema < SchemaVersion && s.Markers == 0 &&
		(s.Schema > 0 || s.Repos > 0 || s.AuditEntries > 0)
}

// Empty reports whether s holds no ledger at all.
func (s Status) Empty() bool {
	return s.Identity == nil && s.Schema == 0 && s.Repos == 0 && s.AuditEntries == 0
}

// ReadStatus reads what Redis holds of the ledger. It works whatever the
// gate says.
func (l *Ledger) ReadStatus(ctx context.Context) (Status, error) {
	var st Status
	id, schema, err := l.readHead(ctx)
	if err != nil {
		return st, fmt.Errorf("ledger: status: %w", err)
	}
	st.Identity, st.Schema = id, schema
	repos, err := l.rdb.ZRange(ctx, l.reposKey(), 0, -1).Result()
	if err != nil {
		return st, fmt.Errorf("ledger: status: %w", err)
	}
	st.Repos = int64(len(repos))
	rows := make([]*redis.IntCmd, len(repos))
	marks := make([]*redis.IntCmd, len(repos))
	var xlen *redis.IntCmd
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range repos {
			rows[i] = p.ZCard(ctx, l.repoKey(r, "rows"))
			marks[i] = p.Exists(ctx, l.markerKey(r))
		}
		xlen = p.XLen(ctx, l.auditKey())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return st, fmt.Errorf("ledger: status: %w", err)
	}
	for i := range repos {
		st.Rows += rows[i].Val()
		st.Markers += marks[i].Val()
	}
	st.AuditEntries = xlen.Val()
	return st, nil
}

// readHead reads the identity and the schema in one round trip.
func (l *Ledger) readHead(ctx context.Context) (*Identity, int, error) {
	var h *redis.MapStringStringCmd
	var s *redis.StringCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HGetAll(ctx, l.identityKey())
		s = p.Get(ctx, l.schemaKey())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, err
	}
	schema := 0
	if v, err := s.Result(); err == nil {
		if schema, err = strconv.Atoi(v); err != nil {
			return nil, 0, fmt.Errorf("stored schema %q is not a number", v)
		}
	}
	id, err := identityOf(h.Val())
	return id, schema, err
}

func identityOf(h map[string]string) (*Identity, error) {
	if len(h) == 0 {
		return nil, nil
	}
	if h["id"] == "" {
		return nil, fmt.Errorf("stored ledger identity has no id: %v", h)
	}
	id := &Identity{ID: h["id"], CreatedBy: h["created_by"]}
	if at := h["created_at"]; at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return nil, fmt.Errorf("stored ledger identity: created_at %q: %v", at, err)
		}
		id.CreatedAt = t
	}
	return id, nil
}

func identityFields(id Identity) []any {
	return []any{"id", id.ID, "created_at", id.CreatedAt.UTC().Format(time.RFC3339Nano), "created_by", id.CreatedBy}
}

// createIdentity writes ARGV as the identity unless one is there, and
// returns the identity Redis holds after.
var createIdentity = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HGETALL', KEYS[1])
`)

func (l *Ledger) createIdentity(ctx context.Context, by string) (*Identity, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	want := Identity{ID: hex.EncodeToString(b[:]), CreatedAt: l.opts.Now().UTC(), CreatedBy: by}
	vals, err := createIdentity.Run(ctx, l.rdb, []string{l.identityKey()}, identityFields(want)...).StringSlice()
	if err != nil {
		return nil, err
	}
	h := map[string]string{}
	for i := 0; i+1 < len(vals); i += 2 {
		h[vals[i]] = vals[i+1]
	}
	return identityOf(h)
}

// ErrNotEmpty refuses Init on a Redis that holds rows of a ledger whose
// identity is gone: creating a new one over them would serve what is left
// of a lost ledger as if it were whole.
var ErrNotEmpty = errors.New("ledger: Redis holds rows of a ledger whose identity is gone")

// Init creates the ledger: its identity and the current schema, once. On a
// Redis that holds one already it returns it with created false; a ledger
// written before identities is adopted (and migrated by the next Open). by
// names the release that creates it.
func (l *Ledger) Init(ctx context.Context, by string) (id Identity, created bool, err error) {
	st, err := l.ReadStatus(ctx)
	if err != nil {
		return Identity{}, false, err
	}
	switch {
	case st.Identity != nil:
		if st.Schema > SchemaVersion {
			return *st.Identity, false, &SchemaError{Found: st.Schema, Known: SchemaVersion}
		}
		return *st.Identity, false, nil
	case !st.Empty() && !st.Legacy():
		return Identity{}, false, fmt.Errorf("%w (%d rows in %d repositories): %s, with --force to replace them",
			ErrNotEmpty, st.Rows, st.Repos, restoreHint)
	}
	if st.Empty() {
		// The schema first: an identity never stands beside a missing schema.
		if err := l.rdb.SetNX(ctx, l.schemaKey(), SchemaVersion, 0).Err(); err != nil {
			return Identity{}, false, fmt.Errorf("ledger: init: %w", err)
		}
	}
	got, err := l.createIdentity(ctx, by)
	if err != nil {
		return Identity{}, false, fmt.Errorf("ledger: init: %w", err)
	}
	return *got, true, nil
}

// Guard makes the ledger refuse every read and write (ErrUnavailable)
// until Open finds its ledger, and from then on whenever Watch finds it
// gone, replaced or newer. Call it once, before anything uses the ledger.
// An unguarded ledger (a test's, a tool's) is always open.
func (l *Ledger) Guard() {
	l.gate.CompareAndSwap(nil, &gate{err: errStarting})
}

// Open makes the ledger usable to this process: it refuses a schema newer
// than SchemaVersion (a *SchemaError, nothing written), adopts a ledger
// written before identities, migrates an older one and moves every
// repository key that is not canonical, whatever the schema says. A Redis
// that holds no ledger, or another ledger than the one this process
// served, leaves the gate closed and returns its *UnavailableError.
func (l *Ledger) Open(ctx context.Context) (MigrationReport, error) {
	l.opening.Lock()
	defer l.opening.Unlock()
	rep := MigrationReport{To: SchemaVersion}
	st, err := l.ReadStatus(ctx)
	if err != nil {
		return rep, err
	}
	rep.From = st.Schema
	if st.Schema > SchemaVersion {
		se := &SchemaError{Found: st.Schema, Known: SchemaVersion}
		l.setGate(&UnavailableError{State: StateSchemaNewer, msg: se.Error()})
		return rep, se
	}
	known := l.known()
	switch {
	case st.Identity == nil && known == "" && st.Legacy():
		if st.Identity, err = l.createIdentity(ctx, "adopted"); err != nil {
			return rep, fmt.Errorf("ledger: adopt: %w", err)
		}
		rep.Adopted = true
	case st.Identity == nil:
		e := errMissing()
		l.setGate(e)
		return rep, e
	case known != "" && st.Identity.ID != known:
		e := errReplaced(known, st.Identity.ID)
		l.setGate(e)
		return rep, e
	}
	id := st.Identity.ID
	l.ident.Store(&id)
	if err := l.migrate(ctx, st.Schema, &rep); err != nil {
		return rep, err
	}
	l.setGate(nil)
	// Best effort: entries it cannot append stay pending for the sweep.
	_ = l.FlushAudit(ctx)
	return rep, nil
}

// OpenUntilDone opens the ledger at a process's start, waiting for Redis
// and for a missing ledger (every CheckEvery) as long as it must; each
// state is logged once. It returns a *SchemaError at once: the process
// must stop.
func (l *Ledger) OpenUntilDone(ctx context.Context, log *slog.Logger) error {
	var last string
	return retry.Until(ctx, log, "ledger open", func(ctx context.Context) error {
		rep, err := l.Open(ctx)
		var se *SchemaError
		var ue *UnavailableError
		switch {
		case errors.As(err, &se):
			return retry.Permanent(err)
		case errors.As(err, &ue):
			if ue.State != last {
				log.Error("ledger unavailable", "state", ue.State, "err", ue.Error())
				last = ue.State
			}
			return retry.Wait(CheckEvery, "ledger "+ue.State, err)
		case err != nil:
			return err
		}
		logOpened(log, rep)
		return nil
	})
}

func logOpened(log *slog.Logger, rep MigrationReport) {
	if rep.Adopted || rep.From < rep.To || rep.Moved > 0 || len(rep.Merged) > 0 {
		log.Info("ledger migrated", "from", rep.From, "to", rep.To, "adopted", rep.Adopted,
			"moved", rep.Moved, "merged", rep.Merged, "indexed", rep.Indexed, "marked", rep.Marked)
	}
}

// Watch re-reads the ledger's identity and schema every CheckEvery until
// ctx ends: a ledger gone, replaced or newer closes the gate (one ERROR
// line each time it closes), and one that is back (a restore) is opened
// again, migrated first if it must be. A read that fails changes nothing:
// Redis being away is an outage of its own.
func (l *Ledger) Watch(ctx context.Context, log *slog.Logger) {
	retry.Every(ctx, CheckEvery, func() { l.check(ctx, log) })
}

// check is one round of Watch.
func (l *Ledger) check(ctx context.Context, log *slog.Logger) {
	before := l.usable()
	if before == nil {
		id, schema, err := l.readHead(ctx)
		if err != nil {
			return
		}
		var closed *UnavailableError
		switch {
		case schema > SchemaVersion:
			closed = &UnavailableError{State: StateSchemaNewer, msg: (&SchemaError{Found: schema, Known: SchemaVersion}).Error()}
		case id == nil:
			closed = errMissing()
		case id.ID != l.known():
			closed = errReplaced(l.known(), id.ID)
		}
		if closed != nil {
			l.setGate(closed)
			log.Error("ledger unavailable", "state", closed.State, "err", closed.Error())
		}
		return
	}
	rep, err := l.Open(ctx)
	var ue *UnavailableError
	var se *SchemaError
	switch {
	case err == nil:
		logOpened(log, rep)
		log.Info("ledger available again", "ledger", l.known())
	case errors.As(err, &se):
		if before.(*UnavailableError).State != StateSchemaNewer {
			log.Error("ledger unavailable", "state", StateSchemaNewer, "err", se.Error())
		}
	case errors.As(err, &ue):
		if ue.State != before.(*UnavailableError).State {
			log.Error("ledger unavailable", "state", ue.State, "err", ue.Error())
		}
	}
}

// migrate brings a ledger at schema from to SchemaVersion; every Open runs
// it, and a current ledger costs one read of its repositories.
func (l *Ledger) migrate(ctx context.Context, from int, rep *MigrationReport) error {
	repos, err := l.rdb.ZRange(ctx, l.reposKey(), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	// Leftovers of an older binary run against this ledger (a rollback):
	// moved whatever the schema says.
	for _, r := range repos {
		if r == ghrepo.Key(r) || !ghrepo.Valid(r) {
			continue
		}
		if err := l.moveRepo(ctx, r, rep); err != nil {
			return fmt.Errorf("ledger: migrate %s: %w", r, err)
		}
	}
	if from >= SchemaVersion {
		return nil
	}
	if repos, err = l.rdb.ZRange(ctx, l.reposKey(), 0, -1).Result(); err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	for _, r := range repos {
		if from < 2 {
			if err := l.reindex(ctx, r, rep); err != nil {
				return fmt.Errorf("ledger: migrate %s: %w", r, err)
			}
		}
		if id := l.known(); id != "" {
			if err := l.rdb.SetNX(ctx, l.markerKey(r), id, 0).Err(); err != nil {
				return fmt.Errorf("ledger: migrate %s: %w", r, err)
			}
			rep.Marked++
		}
	}
	if err := l.rdb.Set(ctx, l.schemaKey(), SchemaVersion, 0).Err(); err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	return nil
}
