// Package ledger is the claims ledger: one dispatch row per repository and
// issue in Redis, written only by atomic compare-and-set on the row's version,
// with every decision appended to a capped audit stream and to the row's own
// recent history.
//
// Keys (P is Options.Prefix, "queen" by default; {owner/name} is a Redis
// Cluster hash tag, so every key of one repository lives in one slot):
//
//	P:{owner/name}:row:N      hash: v (version), row (JSON of Record), w (last write id)
//	P:{owner/name}:history:N  list: the row's recent audit entries, newest first
//	P:{owner/name}:rows       zset: every row of the repository (score = issue)
//	P:{owner/name}:accepted   zset: finished rows with review_state accept
//	P:{owner/name}:sendbacks  zset: finished rows with review_state sendBack
//	P:repos                   zset: every repository that ever had a row (score 0, by name)
//	P:audit                   stream: every decision, capped near Options.AuditMaxLen
//
// A deleted row leaves its hash with only its version (a tombstone), so a row
// created again continues the version sequence and a decision made on the
// old row can never match the new one.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
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
	return &Ledger{rdb: rdb, opts: opts, split: cluster}
}

// Conflicts counts writes that found the row changed and were decided again.
func (l *Ledger) Conflicts() int64 { return l.conflicts.Load() }

// Record is a stored row: the dispatch row and the ledger's own pin.
type Record struct {
	dispatch.Row
	// Pin is a person's keep: the rules free nothing until a new dispatch.
	Pin *Pin `json:"pin,omitempty"`
}

// Pin records a keep override.
type Pin struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	Source string    `json:"source,omitempty"`
}

// View is the claim view of the stored row at now.
func (r *Record) View(now time.Time) dispatch.View { return dispatch.ViewOf(&r.Row, now) }

type keys struct {
	row, history, rows, accepted, sendbacks string
}

func (l *Ledger) repoKey(repo, what string) string {
	return l.opts.Prefix + ":{" + repo + "}:" + what
}

func (l *Ledger) keysOf(repo string, issue int64) keys {
	n := strconv.FormatInt(issue, 10)
	return keys{
		row:       l.repoKey(repo, "row:"+n),
		history:   l.repoKey(repo, "history:"+n),
		rows:      l.repoKey(repo, "rows"),
		accepted:  l.repoKey(repo, "accepted"),
		sendbacks: l.repoKey(repo, "sendbacks"),
	}
}

func (l *Ledger) reposKey() string { return l.opts.Prefix + ":repos" }
func (l *Ledger) auditKey() string { return l.opts.Prefix + ":audit" }

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

// load reads a row. A missing row or a tombstone returns exists false and
// the version a new row must follow.
func (l *Ledger) load(ctx context.Context, repo string, issue int64) (rec *Record, exists bool, err error) {
	vals, err := l.rdb.HMGet(ctx, l.keysOf(repo, issue).row, "v", "row").Result()
	if err != nil {
		return nil, false, err
	}
	var version int64
	if s, ok := vals[0].(string); ok {
		if version, err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, false, fmt.Errorf("stored version %q: %v", s, err)
		}
	}
	s, ok := vals[1].(string)
	if !ok {
		rec = &Record{Row: *dispatch.New(repo, issue)}
		rec.Version = version
		return rec, false, nil
	}
	rec = new(Record)
	if err := json.Unmarshal([]byte(s), rec); err != nil {
		return nil, false, fmt.Errorf("stored row: %v", err)
	}
	rec.Version = version
	return rec, true, nil
}

// Get returns the stored row.
func (l *Ledger) Get(ctx context.Context, repo string, issue int64) (*Record, error) {
	if err := checkKey(repo, issue); err != nil {
		return nil, err
	}
	rec, ok, err := l.load(ctx, repo, issue)
	if err != nil {
		return nil, opErr("get", repo, issue, err)
	}
	if !ok {
		return nil, opErr("get", repo, issue, ErrNotFound)
	}
	return rec, nil
}

// getMany reads the rows of issues in one pipeline, skipping rows deleted
// since the index was read.
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
		vals := c.Val()
		s, ok := vals[1].(string)
		if !ok {
			continue
		}
		rec := new(Record)
		if err := json.Unmarshal([]byte(s), rec); err != nil {
			return nil, fmt.Errorf("stored row %s#%d: %v", repo, issues[i], err)
		}
		if v, ok := vals[0].(string); ok {
			rec.Version, _ = strconv.ParseInt(v, 10, 64)
		}
		out = append(out, rec)
	}
	return out, nil
}

func (l *Ledger) indexRows(ctx context.Context, op, repo, key string) ([]*Record, error) {
	if !ghrepo.Valid(repo) {
		return nil, fmt.Errorf("ledger: %s: repo %q is not owner/name", op, repo)
	}
	members, err := l.rdb.ZRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("ledger: %s %s: %w", op, repo, err)
	}
	rows, err := l.getMany(ctx, repo, parseIssues(members))
	if err != nil {
		return nil, fmt.Errorf("ledger: %s %s: %w", op, repo, err)
	}
	return rows, nil
}

// Accepted returns the finished rows of repo whose review_state is accept,
// by issue: the rows whose pull requests the sweep re-reads.
func (l *Ledger) Accepted(ctx context.Context, repo string) ([]*Record, error) {
	return l.indexRows(ctx, "accepted", repo, l.repoKey(repo, "accepted"))
}

// FinishedSendBacks returns the finished rows of repo whose review_state is
// sendBack, by issue: the rows send_back_claim decides on.
func (l *Ledger) FinishedSendBacks(ctx context.Context, repo string) ([]*Record, error) {
	return l.indexRows(ctx, "finished send-backs", repo, l.repoKey(repo, "sendbacks"))
}

// Repos returns every repository that has had a row, by name.
func (l *Ledger) Repos(ctx context.Context) ([]string, error) {
	repos, err := l.rdb.ZRange(ctx, l.reposKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("ledger: repos: %w", err)
	}
	return repos, nil
}

func parseIssues(members []string) []int64 {
	out := make([]int64, 0, len(members))
	for _, m := range members {
		if n, err := strconv.ParseInt(m, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// List returns up to limit rows after cursor, ordered by repository name
// and issue: all repositories when repo is "". The next cursor is "" once
// the rows ran out (a full last page may be followed by an empty one). A
// cursor is opaque ("owner/name#N" of the last row returned).
func (l *Ledger) List(ctx context.Context, repo, cursor string, limit int) (rows []*Record, next string, err error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	if repo != "" && !ghrepo.Valid(repo) {
		return nil, "", fmt.Errorf("ledger: list: repo %q is not owner/name", repo)
	}
	curRepo, curIssue := repo, int64(0)
	if cursor != "" {
		r, n, ok := strings.Cut(cursor, "#")
		issue, perr := strconv.ParseInt(n, 10, 64)
		if !ok || perr != nil || !ghrepo.Valid(r) || (repo != "" && r != repo) {
			return nil, "", fmt.Errorf("ledger: list: cursor %q is not one this list gave", cursor)
		}
		curRepo, curIssue = r, issue
	}
	var repos []string
	if repo != "" {
		repos = []string{repo}
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
			issues := parseIssues(members)
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
			return rows, last.Repo + "#" + strconv.FormatInt(last.Issue, 10), nil
		}
	}
	return rows, "", nil
}
