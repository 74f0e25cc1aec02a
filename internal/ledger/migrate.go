package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/retry"
)

// SchemaVersion is the key layout this code writes: 2 keys repositories by
// their canonical (lower-case) name and keeps the holding and review indexes.
const SchemaVersion = 2

// MigrationReport says what Migrate did.
type MigrationReport struct {
	From, To int      // schema versions
	Moved    int      // rows moved to their repository's canonical key
	Merged   []string // "owner/name#N": two spellings held a row each; the later dispatch was kept
	Indexed  int      // rows whose indexes were rebuilt
}

// Migrate brings a ledger written by an older queen-app to SchemaVersion:
// rows stored under a repository spelling that is not its canonical key move
// to it (when two spellings hold a row of one issue, the later dispatch is
// kept and the other's history follows it), and every row's indexes are
// rebuilt. It is idempotent and safe while other writers run (every row
// write is the usual compare-and-set), so every start runs it; a ledger
// already at SchemaVersion costs one GET.
func (l *Ledger) Migrate(ctx context.Context) (MigrationReport, error) {
	rep := MigrationReport{To: SchemaVersion}
	v, err := l.rdb.Get(ctx, l.schemaKey()).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return rep, fmt.Errorf("ledger: migrate: %w", err)
	}
	rep.From = v
	if v >= SchemaVersion {
		return rep, nil
	}
	repos, err := l.Repos(ctx)
	if err != nil {
		return rep, fmt.Errorf("ledger: migrate: %w", err)
	}
	for _, r := range repos {
		if r == ghrepo.Key(r) || !ghrepo.Valid(r) {
			continue
		}
		if err := l.moveRepo(ctx, r, &rep); err != nil {
			return rep, fmt.Errorf("ledger: migrate %s: %w", r, err)
		}
	}
	if repos, err = l.Repos(ctx); err != nil {
		return rep, fmt.Errorf("ledger: migrate: %w", err)
	}
	for _, r := range repos {
		if err := l.reindex(ctx, r, &rep); err != nil {
			return rep, fmt.Errorf("ledger: migrate %s: %w", r, err)
		}
	}
	if err := l.rdb.Set(ctx, l.schemaKey(), SchemaVersion, 0).Err(); err != nil {
		return rep, fmt.Errorf("ledger: migrate: %w", err)
	}
	return rep, nil
}

// MigrateUntilDone runs Migrate before anything reads the ledger, waiting
// for Redis as long as it must; both binaries call it at start.
func (l *Ledger) MigrateUntilDone(ctx context.Context, log *slog.Logger) error {
	return retry.Until(ctx, log, "ledger migration", func(ctx context.Context) error {
		rep, err := l.Migrate(ctx)
		if err == nil && rep.From < rep.To {
			log.Info("ledger migrated", "from", rep.From, "to", rep.To, "moved", rep.Moved, "merged", rep.Merged, "indexed", rep.Indexed)
		}
		return err
	})
}

// oldKey is a key of the layout before canonical keys: the spelling verbatim.
func (l *Ledger) oldKey(spelling, what string) string {
	return l.opts.Prefix + ":{" + spelling + "}:" + what
}

// moveRepo moves every row stored under spelling to the canonical key.
func (l *Ledger) moveRepo(ctx context.Context, spelling string, rep *MigrationReport) error {
	members, err := l.rdb.ZRange(ctx, l.oldKey(spelling, "rows"), 0, -1).Result()
	if err != nil {
		return err
	}
	issues, err := parseIssues(members)
	if err != nil {
		return err
	}
	for _, n := range issues {
		if err := l.moveRow(ctx, spelling, n, rep); err != nil {
			return fmt.Errorf("#%d: %w", n, err)
		}
	}
	// Deleted rows under the old spelling: their version must stay below
	// any row created under the canonical key.
	var top int64
	stale, err := l.scan(ctx, l.oldKey(spelling, "row:*"))
	if err != nil {
		return err
	}
	for _, key := range stale {
		v, err := l.rdb.HGet(ctx, key, "v").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		top = max(top, v)
	}
	if top > 0 {
		if err := raiseSeq.Run(ctx, l.rdb, []string{l.repoKey(spelling, "seq")}, top).Err(); err != nil {
			return err
		}
	}
	// Histories of deleted rows follow them, kept as long as a deleted row's.
	hists, err := l.scan(ctx, l.oldKey(spelling, "history:*"))
	if err != nil {
		return err
	}
	for _, key := range hists {
		n, err := strconv.ParseInt(key[strings.LastIndexByte(key, ':')+1:], 10, 64)
		if err != nil {
			continue
		}
		items, err := l.rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			return err
		}
		to := l.keysOf(spelling, n).history
		if len(items) > 0 {
			vals := make([]any, len(items))
			for i, it := range items {
				vals[i] = it
			}
			if err := l.rdb.RPush(ctx, to, vals...).Err(); err != nil {
				return err
			}
			live, err := l.rdb.HExists(ctx, l.keysOf(spelling, n).row, "row").Result()
			if err != nil {
				return err
			}
			if !live {
				if err := l.rdb.Expire(ctx, to, DeletedRetention).Err(); err != nil {
					return err
				}
			}
		}
		stale = append(stale, key)
	}
	var old []string
	for _, what := range []string{"rows", "accepted", "sendbacks"} {
		old = append(old, l.oldKey(spelling, what))
	}
	for _, k := range append(old, stale...) {
		if err := l.rdb.Del(ctx, k).Err(); err != nil {
			return err
		}
	}
	if err := l.rdb.ZAdd(ctx, l.reposKey(), redis.Z{Member: ghrepo.Key(spelling)}).Err(); err != nil {
		return err
	}
	return l.rdb.ZRem(ctx, l.reposKey(), spelling).Err()
}

// scan lists the keys matching pattern on every node.
func (l *Ledger) scan(ctx context.Context, pattern string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	one := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 100).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			out = append(out, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	if cc, ok := l.rdb.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return one(ctx, c) })
		return out, err
	}
	return out, one(ctx, l.rdb)
}

// raiseSeq lifts a repository's version counter to at least ARGV[1].
var raiseSeq = redis.NewScript(`
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 0`)

// moveRow writes the old spelling's row under the canonical key (unless a
// later dispatch is there already), carries its history over, then deletes
// the old keys.
func (l *Ledger) moveRow(ctx context.Context, spelling string, issue int64, rep *MigrationReport) error {
	oldRow, oldHist := l.oldKey(spelling, "row:"+strconv.FormatInt(issue, 10)), l.oldKey(spelling, "history:"+strconv.FormatInt(issue, 10))
	vals, err := l.rdb.HMGet(ctx, oldRow, "v", "row").Result()
	if err != nil {
		return err
	}
	old, oldV, err := decodeRow(vals)
	if err != nil || old == nil {
		return err
	}
	hist, err := l.rdb.LRange(ctx, oldHist, 0, -1).Result()
	if err != nil {
		return err
	}
	took := false
	o := updateOpts{create: true, expect: -1, display: true, floor: oldV + 1}
	_, err = l.update(ctx, "migrate", spelling, issue, o, func(rec *Record, now time.Time) (Change, error) {
		took = false
		if rec.DispatchedAt != nil && (old.DispatchedAt == nil || rec.DispatchedAt.After(*old.DispatchedAt)) {
			return Change{None: true}, nil // the canonical row is a later dispatch
		}
		*rec = *old
		took = true
		return Change{Action: ActionMigrate, Source: audit.Source{Kind: audit.KindMigration,
			Reason: fmt.Sprintf("moved from the key of %q to its canonical key %q", spelling, ghrepo.Key(spelling))}}, nil
	})
	if err != nil {
		return err
	}
	k := l.keysOf(spelling, issue)
	if took {
		rep.Moved++
		if len(hist) > 0 {
			items := make([]any, len(hist))
			for i, h := range hist {
				items[i] = h
			}
			if err := l.rdb.RPush(ctx, k.history, items...).Err(); err != nil {
				return err
			}
			if err := l.rdb.LTrim(ctx, k.history, 0, l.opts.HistoryLen-1).Err(); err != nil {
				return err
			}
		}
	} else {
		rep.Merged = append(rep.Merged, ghrepo.Key(spelling)+"#"+strconv.FormatInt(issue, 10))
	}
	if err := raiseSeq.Run(ctx, l.rdb, []string{k.seq}, oldV).Err(); err != nil {
		return err
	}
	return l.rdb.Del(ctx, oldRow, oldHist).Err()
}

// reindex rewrites the index memberships of every row of repo.
func (l *Ledger) reindex(ctx context.Context, repo string, rep *MigrationReport) error {
	for after := int64(0); ; {
		members, err := l.rdb.ZRangeByScore(ctx, l.repoKey(repo, "rows"), &redis.ZRangeBy{
			Min: "(" + strconv.FormatInt(after, 10), Max: "+inf", Count: DefaultPage}).Result()
		if err != nil {
			return err
		}
		issues, err := parseIssues(members)
		if err != nil {
			return err
		}
		for _, n := range issues {
			if err := l.reindexRow(ctx, repo, n); err != nil {
				return fmt.Errorf("#%d: %w", n, err)
			}
			rep.Indexed++
		}
		if len(issues) < DefaultPage {
			return nil
		}
		after = issues[len(issues)-1]
	}
}

// indexScript sets a row's index memberships if it is still at version
// ARGV[1]. KEYS: row, rows, accepted, sendbacks, holding, review.
var indexScript = redis.NewScript(`
if tonumber(redis.call('HGET', KEYS[1], 'v') or '0') ~= tonumber(ARGV[1]) then return 0 end
local issue = ARGV[2]
if redis.call('HEXISTS', KEYS[1], 'row') == 0 then
  for i = 2, 6 do redis.call('ZREM', KEYS[i], issue) end
  return 1
end
if ARGV[3] == '1' then redis.call('ZADD', KEYS[3], issue, issue) else redis.call('ZREM', KEYS[3], issue) end
if ARGV[4] == '1' then redis.call('ZADD', KEYS[4], issue, issue) else redis.call('ZREM', KEYS[4], issue) end
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[5], ARGV[5], issue) else redis.call('ZREM', KEYS[5], issue) end
if ARGV[6] == '1' then redis.call('ZADD', KEYS[6], issue, issue) else redis.call('ZREM', KEYS[6], issue) end
return 1`)

func (l *Ledger) reindexRow(ctx context.Context, repo string, issue int64) error {
	k := l.keysOf(repo, issue)
	for attempt := 0; attempt < l.opts.MaxRetries; attempt++ {
		st, err := l.load(ctx, repo, issue)
		if err != nil {
			return err
		}
		var ix indexes
		if st.rec != nil {
			ix = indexesOf(st.rec)
		}
		ok, err := indexScript.Run(ctx, l.rdb, []string{k.row, k.rows, k.accepted, k.sendbacks, k.holding, k.review},
			st.version, issue, flag(ix.accepted), flag(ix.sendBack), ix.holding, flag(ix.review)).Int()
		if err != nil || ok == 1 {
			return err
		}
	}
	return ErrConflict
}
