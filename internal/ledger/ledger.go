// Package ledger is the claims ledger: one dispatch row per repository and
// issue in Redis, written only by atomic compare-and-set on the row's version,
// with every decision appended to a capped audit stream and to the row's own
// recent history.
//
// Keys (P is Options.Prefix, "queen" by default; R is the repository's
// canonical key, ghrepo.Key: lower case; {R} is a Redis Cluster hash tag, so
// every key of one repository lives in one slot):
//
//	P:{R}:row:N      hash: v (version), row (JSON of Record), w (last write id)
//	P:{R}:history:N  list: the row's recent audit entries, newest first
//	P:{R}:rows       zset: every row of the repository (score = issue)
//	P:{R}:accepted   zset: finished rows with review_state accept
//	P:{R}:sendbacks  zset: finished rows with review_state sendBack
//	P:{R}:holding    zset: rows that may hold files (score 0 while working,
//	                 else finished_at in Unix seconds: the hold runs out)
//	P:{R}:review     zset: rows in the review queue (review-first card)
//	P:{R}:seq        string: the highest version a deleted row of R had
//	P:repos          zset: every repository that ever had a row (score 0, by key)
//	P:audit          stream: every decision, capped near Options.AuditMaxLen
//	P:schema         string: the key layout's version, for Migrate
//
// A row created starts above P:{R}:seq, so a decision made on a deleted row
// can never match a new one, however long ago it was deleted. A deleted
// row's hash (its last version and write id) and its history expire after
// DeletedRetention.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/rules"
)

var (
	// ErrNotFound means the row does not exist (or was deleted).
	ErrNotFound = errors.New("ledger: row not found")
	// ErrConflict means the row changed under a write and retrying did not help.
	ErrConflict = errors.New("ledger: row changed concurrently")
)

// Options tune a Ledger. Zero values take the defaults.
type Options struct {
	Prefix      string // key prefix, "queen"
	AuditMaxLen int64  // approximate cap of the audit stream, 1_000_000
	HistoryLen  int64  // audit entries kept per row, 50
	MaxRetries  int    // read-decide-write attempts before ErrConflict, 32
	Now         func() time.Time

	// FreeClosedPR applies accept_claim's frees; off records would_free.
	FreeClosedPR bool
	// ReleaseDeadClaims applies send_back_claim's frees; off records would_free.
	ReleaseDeadClaims bool
}

// Ledger is the claims ledger. It is safe for concurrent use.
type Ledger struct {
	rdb   redis.UniversalClient
	opts  Options
	split bool // Redis Cluster: the global audit stream is written after the row's script

	gate    atomic.Pointer[gate]   // nil: not guarded (always open)
	ident   atomic.Pointer[string] // the identity this process serves, once opened
	opening sync.Mutex             // one Open at a time
	settled chan struct{}          // closed once the gate leaves StateStarting
	settle  sync.Once

	conflicts atomic.Int64 // compare-and-set misses, for tests and metrics
}

// New returns a Ledger over rdb.
func New(rdb redis.UniversalClient, opts Options) *Ledger {
	if opts.Prefix == "" {
		opts.Prefix = "queen"
	}
	if opts.AuditMaxLen <= 0 {
		opts.AuditMaxLen = 1_000_000
	}
	if opts.HistoryLen <= 0 {
		opts.HistoryLen = 50
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 32
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	_, cluster := rdb.(*redis.ClusterClient)
	return &Ledger{rdb: rdb, opts: opts, split: cluster, settled: make(chan struct{})}
}

// Conflicts counts writes that found the row changed and were decided again.
func (l *Ledger) Conflicts() int64 { return l.conflicts.Load() }

// Record is a stored row: the dispatch row and the ledger's own pin.
type Record struct {
	dispatch.Row
	// Pin is a person's keep: the rules free nothing until a new dispatch.
	Pin *dispatch.Pin `json:"pin,omitempty"`
}

// View is the claim view of the stored row at now.
func (r *Record) View(now time.Time) dispatch.View { return dispatch.ViewOf(&r.Row, now) }

// DeletedRetention is how long a deleted row's hash and history are kept
// for inspection; the versions of a row created after continue above every
// version the repository had, so nothing depends on them being kept.
const DeletedRetention = 30 * 24 * time.Hour

// DefaultPage is how many rows a paged read holds at once: one GraphQL
// batch of the sweep.
const DefaultPage = 100

type keys struct {
	row, history, rows, accepted, sendbacks, holding, review, seq, marker string
	pending                                                               string // a Cluster's audit entries not yet in the stream
}

// repoKey names a key of repo's slot; the repository's canonical key makes
// every spelling of one repository meet.
func (l *Ledger) repoKey(repo, what string) string {
	return l.opts.Prefix + ":{" + ghrepo.Key(repo) + "}:" + what
}

func (l *Ledger) keysOf(repo string, issue int64) keys {
	n := strconv.FormatInt(issue, 10)
	return keys{
		row:       l.repoKey(repo, "row:"+n),
		history:   l.repoKey(repo, "history:"+n),
		rows:      l.repoKey(repo, "rows"),
		accepted:  l.repoKey(repo, "accepted"),
		sendbacks: l.repoKey(repo, "sendbacks"),
		holding:   l.repoKey(repo, "holding"),
		review:    l.repoKey(repo, "review"),
		seq:       l.repoKey(repo, "seq"),
		marker:    l.markerKey(repo),
		pending:   l.pendingKey(repo),
	}
}

// pendingKey lists repo's audit entries written with their row in a
// Cluster and not yet appended to the stream (write id, a newline, the entry).
func (l *Ledger) pendingKey(repo string) string { return l.repoKey(repo, "audit_pending") }

func (l *Ledger) reposKey() string  { return l.opts.Prefix + ":repos" }
func (l *Ledger) auditKey() string  { return l.opts.Prefix + ":audit" }
func (l *Ledger) schemaKey() string { return l.opts.Prefix + ":schema" }

func checkKey(repo string, issue int64) error {
	if !ghrepo.Valid(repo) {
		return fmt.Errorf("ledger: repo %q is not owner/name", repo)
	}
	if issue < 1 {
		return fmt.Errorf("ledger: issue %d is not a positive number", issue)
	}
	return nil
}

func opErr(op, repo string, issue int64, err error) error {
	return fmt.Errorf("ledger: %s %s#%d: %w", op, repo, issue, err)
}

// stored is a row as read: its record (nil when absent or deleted), the
// version in its hash, and the repository's highest version.
type stored struct {
	rec     *Record
	version int64
	seq     int64
}

// load reads one row with the repository's version counter.
func (l *Ledger) load(ctx context.Context, repo string, issue int64) (stored, error) {
	k := l.keysOf(repo, issue)
	var hm *redis.SliceCmd
	var seq *redis.StringCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		hm = p.HMGet(ctx, k.row, "v", "row")
		seq = p.Get(ctx, k.seq)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return stored{}, err
	}
	var st stored
	if s, ok := seq.Val(), seq.Err() == nil; ok {
		if st.seq, err = strconv.ParseInt(s, 10, 64); err != nil {
			return stored{}, fmt.Errorf("stored version counter %q: %v", s, err)
		}
	}
	rec, v, err := decodeRow(hm.Val())
	if err != nil {
		return stored{}, err
	}
	st.rec, st.version = rec, v
	return st, nil
}

// decodeRow reads an HMGET v row answer; a missing row is a nil record.
func decodeRow(vals []any) (*Record, int64, error) {
	var version int64
	if s, ok := vals[0].(string); ok {
		var err error
		if version, err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, 0, fmt.Errorf("stored version %q: %v", s, err)
		}
	}
	s, ok := vals[1].(string)
	if !ok {
		return nil, version, nil
	}
	rec := new(Record)
	if err := json.Unmarshal([]byte(s), rec); err != nil {
		return nil, 0, fmt.Errorf("stored row: %v", err)
	}
	rec.Version = version
	return rec, version, nil
}

// Get returns the stored row.
func (l *Ledger) Get(ctx context.Context, repo string, issue int64) (*Record, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := checkKey(repo, issue); err != nil {
		return nil, err
	}
	st, err := l.load(ctx, repo, issue)
	if err != nil {
		return nil, opErr("get", repo, issue, err)
	}
	if st.rec == nil {
		return nil, opErr("get", repo, issue, ErrNotFound)
	}
	return st.rec, nil
}

// GetMany reads the rows of issues of repo in one round trip, in the order
// given, leaving out rows that do not exist.
func (l *Ledger) GetMany(ctx context.Context, repo string, issues []int64) ([]*Record, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if !ghrepo.Valid(repo) {
		return nil, fmt.Errorf("ledger: repo %q is not owner/name", repo)
	}
	rows, err := l.getMany(ctx, repo, issues)
	if err != nil {
		return nil, fmt.Errorf("ledger: get rows of %s: %w", repo, err)
	}
	return rows, nil
}

func (l *Ledger) getMany(ctx context.Context, repo string, issues []int64) ([]*Record, error) {
	if len(issues) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.SliceCmd, len(issues))
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range issues {
			cmds[i] = p.HMGet(ctx, l.keysOf(repo, n).row, "v", "row")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]*Record, 0, len(issues))
	for i, c := range cmds {
		rec, _, err := decodeRow(c.Val())
		if err != nil {
			return nil, fmt.Errorf("row %s#%d: %w", repo, issues[i], err)
		}
		if rec != nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// Index names one of a repository's indexes of rows.
type Index string

// Indexes a caller may page through.
const (
	// IndexAccepted: finished rows whose review_state is accept, the rows
	// whose pull requests the sweep re-reads and the export publishes.
	IndexAccepted Index = "accepted"
	// IndexSendBacks: finished rows whose review_state is sendBack, the
	// rows send_back_claim decides on.
	IndexSendBacks Index = "sendbacks"
)

// Page returns up to n rows of repo's index whose issue is above after, by
// issue; next is the issue to continue after, 0 once the index ran out.
func (l *Ledger) Page(ctx context.Context, repo string, ix Index, after int64, n int) (rows []*Record, next int64, err error) {
	if err := l.usable(); err != nil {
		return nil, 0, err
	}
	if ix != IndexAccepted && ix != IndexSendBacks {
		return nil, 0, fmt.Errorf("ledger: no index %q", ix)
	}
	if !ghrepo.Valid(repo) {
		return nil, 0, fmt.Errorf("ledger: %s: repo %q is not owner/name", ix, repo)
	}
	if n <= 0 {
		n = DefaultPage
	}
	members, err := l.rdb.ZRangeByScore(ctx, l.repoKey(repo, string(ix)), &redis.ZRangeBy{
		Min: "(" + strconv.FormatInt(after, 10), Max: "+inf", Count: int64(n),
	}).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: %s %s: %w", ix, repo, err)
	}
	issues, err := parseIssues(members)
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: %s %s: %w", ix, repo, err)
	}
	if rows, err = l.getMany(ctx, repo, issues); err != nil {
		return nil, 0, fmt.Errorf("ledger: %s %s: %w", ix, repo, err)
	}
	if len(issues) == n {
		next = issues[len(issues)-1]
	}
	return rows, next, nil
}

// Each calls fn with the rows of repo's index a page of up to n at a time,
// so memory holds one page whatever the size of the ledger.
func (l *Ledger) Each(ctx context.Context, repo string, ix Index, n int, fn func([]*Record) error) error {
	for after := int64(0); ; {
		rows, next, err := l.Page(ctx, repo, ix, after, n)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if err := fn(rows); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		after = next
	}
}

// Holding calls fn with pages of repo's rows that may hold files at now:
// the working ones and those finished within the longest hold. A row's own
// view says whether it still holds. The index is read a page at a time, so
// memory holds one page of rows and of issue numbers whatever the size of
// the ledger.
func (l *Ledger) Holding(ctx context.Context, repo string, now time.Time, fn func([]*Record) error) error {
	if err := l.usable(); err != nil {
		return err
	}
	if !ghrepo.Valid(repo) {
		return fmt.Errorf("ledger: holding: repo %q is not owner/name", repo)
	}
	since := now.Add(-time.Duration(max(rules.SendBackHoldMinutes, rules.AwaitingHoldMinutes)+1) * time.Minute).Unix()
	key := l.repoKey(repo, "holding")
	for _, rng := range [][2]string{{"0", "0"}, {strconv.FormatInt(since, 10), "+inf"}} {
		afterScore, afterMember := "", ""
		for {
			page, err := holdingPage.Run(ctx, l.rdb, []string{key}, rng[0], rng[1], afterScore, afterMember, DefaultPage).StringSlice()
			if err != nil {
				return fmt.Errorf("ledger: holding %s: %w", repo, err)
			}
			if len(page) == 0 {
				break
			}
			members := make([]string, 0, len(page)/2)
			for i := 0; i+1 < len(page); i += 2 {
				members = append(members, page[i])
			}
			issues, err := parseIssues(members)
			if err != nil {
				return fmt.Errorf("ledger: holding %s: %w", repo, err)
			}
			rows, err := l.getMany(ctx, repo, issues)
			if err != nil {
				return fmt.Errorf("ledger: holding %s: %w", repo, err)
			}
			if err := fn(rows); err != nil {
				return err
			}
			if len(members) < DefaultPage {
				break
			}
			afterMember, afterScore = page[len(page)-2], page[len(page)-1]
		}
	}
	return nil
}

// holdingPage returns up to ARGV[5] members (with scores) of the sorted set
// whose score is within ARGV[1]..ARGV[2], after the member ARGV[4] of score
// ARGV[3] in Redis's order (score, then member), or from the start of the
// range when ARGV[3] is "". The cursor is a place, not an offset: a row
// leaving the index between two pages (a row freed, finished or deleted)
// shifts no other row past the reader, so none is skipped.
var holdingPage = redis.NewScript(`
local key, lo, hi, n = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[5])
local start = redis.call('ZCOUNT', key, '-inf', '(' .. lo)
if ARGV[3] ~= '' then
  local s = redis.call('ZSCORE', key, ARGV[4])
  if s and tonumber(s) == tonumber(ARGV[3]) then
    start = redis.call('ZRANK', key, ARGV[4]) + 1
  else
    start = redis.call('ZCOUNT', key, '-inf', '(' .. ARGV[3])
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, ARGV[3], ARGV[3])) do
      if m <= ARGV[4] then start = start + 1 end
    end
  end
end
local out = {}
local got = redis.call('ZRANGE', key, start, start + n - 1, 'WITHSCORES')
for i = 1, #got, 2 do
  if hi ~= '+inf' and tonumber(got[i + 1]) > tonumber(hi) then break end
  out[#out + 1] = got[i]
  out[#out + 1] = got[i + 1]
end
return out
`)

// ReviewQueueLen counts repo's rows in the review queue (the review-first
// card's queue_len), without reading them.
func (l *Ledger) ReviewQueueLen(ctx context.Context, repo string) (int64, error) {
	if err := l.usable(); err != nil {
		return 0, err
	}
	if !ghrepo.Valid(repo) {
		return 0, fmt.Errorf("ledger: review queue: repo %q is not owner/name", repo)
	}
	n, err := l.rdb.ZCard(ctx, l.repoKey(repo, "review")).Result()
	if err != nil {
		return 0, fmt.Errorf("ledger: review queue %s: %w", repo, err)
	}
	return n, nil
}

// Repos returns the canonical key of every repository that has had a row.
func (l *Ledger) Repos(ctx context.Context) ([]string, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	repos, err := l.rdb.ZRange(ctx, l.reposKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("ledger: repos: %w", err)
	}
	return repos, nil
}

// parseIssues reads index members; a member that is not an issue number
// is damage the caller must see, not a row to skip silently.
func parseIssues(members []string) ([]int64, error) {
	out := make([]int64, 0, len(members))
	for _, m := range members {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("index member %q is not an issue number", m)
		}
		out = append(out, n)
	}
	return out, nil
}

// List returns up to limit rows after cursor, ordered by repository key
// and issue: all repositories when repo is "". The next cursor is "" once
// the rows ran out (a full last page may be followed by an empty one). A
// cursor is opaque ("owner/name#N" of the last row returned).
func (l *Ledger) List(ctx context.Context, repo, cursor string, limit int) (rows []*Record, next string, err error) {
	if err := l.usable(); err != nil {
		return nil, "", err
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	if repo != "" && !ghrepo.Valid(repo) {
		return nil, "", fmt.Errorf("ledger: list: repo %q is not owner/name", repo)
	}
	curRepo, curIssue := ghrepo.Key(repo), int64(0)
	if cursor != "" {
		r, n, ok := strings.Cut(cursor, "#")
		issue, perr := strconv.ParseInt(n, 10, 64)
		if !ok || perr != nil || !ghrepo.Valid(r) || (repo != "" && !ghrepo.Same(r, repo)) {
			return nil, "", fmt.Errorf("ledger: list: cursor %q is not one this list gave", cursor)
		}
		curRepo, curIssue = ghrepo.Key(r), issue
	}
	var repos []string
	if repo != "" {
		repos = []string{ghrepo.Key(repo)}
	} else {
		min := "-"
		if curRepo != "" {
			min = "[" + curRepo
		}
		repos, err = l.rdb.ZRangeByLex(ctx, l.reposKey(), &redis.ZRangeBy{Min: min, Max: "+"}).Result()
		if err != nil {
			return nil, "", fmt.Errorf("ledger: list: %w", err)
		}
	}
	for _, r := range repos {
		after := int64(0)
		if r == curRepo {
			after = curIssue
		}
		for len(rows) < limit {
			want := limit - len(rows)
			members, err := l.rdb.ZRangeByScore(ctx, l.repoKey(r, "rows"), &redis.ZRangeBy{
				Min: "(" + strconv.FormatInt(after, 10), Max: "+inf", Count: int64(want),
			}).Result()
			if err != nil {
				return nil, "", fmt.Errorf("ledger: list %s: %w", r, err)
			}
			issues, err := parseIssues(members)
			if err != nil {
				return nil, "", fmt.Errorf("ledger: list %s: %w", r, err)
			}
			got, err := l.getMany(ctx, r, issues)
			if err != nil {
				return nil, "", fmt.Errorf("ledger: list %s: %w", r, err)
			}
			rows = append(rows, got...)
			if len(members) < want {
				break
			}
			after = issues[len(issues)-1]
		}
		if len(rows) >= limit {
			last := rows[len(rows)-1]
			return rows, ghrepo.Key(last.Repo) + "#" + strconv.FormatInt(last.Issue, 10), nil
		}
	}
	return rows, "", nil
}
