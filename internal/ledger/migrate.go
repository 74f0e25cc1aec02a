package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
)

// SchemaVersion is the stored shape this code writes and reads:
//
//	1  (0.1.0) keys by the repository's spelling, no schema key
//	2  keys by the canonical (lower-case) name; holding and review indexes
//	3  the ledger's identity (P:ledger) and each repository's marker of it
//	   (P:{R}:ledger); audit entries of every earlier shape stay readable
//
// A process refuses a ledger whose schema is newer (SchemaError).
const SchemaVersion = 3

// MigrationReport says what Open (or Migrate) did.
type MigrationReport struct {
	From, To int  // schema versions
	Adopted  bool // a ledger written before identities was given one
	Moved    int  // rows moved to their repository's canonical key
	// Merged names each issue two spellings held a row of, and what was kept.
	Merged  []string
	Indexed int // rows whose indexes were rebuilt
	Marked  int // repositories given the ledger's marker
}

// Migrate brings the ledger's keys to SchemaVersion: rows stored under a
// spelling that is not their repository's canonical key move to it (see
// moveRow for two spellings of one issue), indexes are rebuilt for a
// ledger older than 2, and repositories get the marker of the identity
// this process opened. It is idempotent and safe while other writers run
// (every row write is the usual compare-and-set). Open runs it; it needs
// no open gate.
func (l *Ledger) Migrate(ctx context.Context) (MigrationReport, error) {
	rep := MigrationReport{To: SchemaVersion}
	_, schema, err := l.readHead(ctx)
	if err != nil {
		return rep, fmt.Errorf("ledger: migrate: %w", err)
	}
	rep.From = schema
	if schema > SchemaVersion {
		return rep, &SchemaError{Found: schema, Known: SchemaVersion}
	}
	return rep, l.migrate(ctx, schema, &rep)
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

// moveRow moves the row of issue stored under spelling to the canonical
// key. When the canonical key holds a row of the issue too, the later
// dispatch wins; for one dispatch the canonical row wins, and the decision
// on the row (a free, a would_free, a keep) is the newer of the two, a
// person's over a rule's, so a migration never undoes what someone
// decided. Both histories are kept; the report names the merge.
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
	name := ghrepo.Key(spelling) + "#" + strconv.FormatInt(issue, 10)
	var merged string
	var exists bool
	o := updateOpts{create: true, expect: -1, display: true, floor: oldV + 1, exists: &exists, open: true}
	_, err = l.update(ctx, "migrate", spelling, issue, o, func(rec *Record, now time.Time) (Change, error) {
		merged = ""
		moved := Change{Action: ActionMigrate, Source: audit.Source{Kind: audit.KindMigration,
			Reason: fmt.Sprintf("moved from the key of %q to its canonical key %q", spelling, ghrepo.Key(spelling))}}
		if !exists {
			*rec = *old
			return moved, nil
		}
		switch {
		case later(rec.DispatchedAt, old.DispatchedAt):
			merged = fmt.Sprintf("%s: %q and %q held it; kept the canonical row, a later dispatch", name, rec.Repo, spelling)
			return Change{None: true}, nil
		case later(old.DispatchedAt, rec.DispatchedAt):
			merged = fmt.Sprintf("%s: %q and %q held it; kept the row of %q, a later dispatch", name, rec.Repo, spelling, spelling)
			*rec = *old
			moved.Source.Reason += " over an earlier dispatch"
			return moved, nil
		}
		merged = fmt.Sprintf("%s: %q and %q held one dispatch; kept the canonical row", name, rec.Repo, spelling)
		if newerDecision(old, rec) {
			rec.Freed, rec.WouldFree, rec.Pin = old.Freed, old.WouldFree, old.Pin
			merged += fmt.Sprintf(" with the decision of %q (%s)", spelling, decisionWords(old))
		} else if d := decisionWords(rec); d != "none" {
			merged += " and its decision (" + d + ")"
		}
		if rec.Export == nil {
			rec.Export = old.Export
		}
		if old.PRs != nil && (rec.PRs == nil || later(old.PRs.ReadAt, rec.PRs.ReadAt)) {
			rec.PRs = old.PRs
		}
		moved.Source.Reason = fmt.Sprintf("merged the row of %q into its canonical key %q", spelling, ghrepo.Key(spelling))
		return moved, nil
	})
	if err != nil {
		return err
	}
	k := l.keysOf(spelling, issue)
	if merged == "" {
		rep.Moved++
	} else {
		rep.Merged = append(rep.Merged, merged)
	}
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
	if err := raiseSeq.Run(ctx, l.rdb, []string{k.seq}, oldV).Err(); err != nil {
		return err
	}
	return l.rdb.Del(ctx, oldRow, oldHist).Err()
}

// later reports whether a is after b, a time being after none.
func later(a, b *time.Time) bool {
	return a != nil && (b == nil || a.After(*b))
}

// decisionOf is the newest decision on r: whether a person made it (a
// keep, a manual free) and when; ok is false when r carries none.
func decisionOf(r *Record) (person bool, at time.Time, ok bool) {
	if r.Pin != nil {
		return true, r.Pin.At, true
	}
	if r.Freed != nil {
		return r.Freed.Rule == dispatch.RuleManual, r.Freed.At, true
	}
	if r.WouldFree != nil {
		return false, r.WouldFree.At, true
	}
	return false, time.Time{}, false
}

// newerDecision reports whether a's decision stands over b's: a person's
// over a rule's, else the newer; b keeps a tie.
func newerDecision(a, b *Record) bool {
	ap, at, aok := decisionOf(a)
	bp, bt, bok := decisionOf(b)
	switch {
	case !aok:
		return false
	case !bok:
		return true
	case ap != bp:
		return ap
	}
	return at.After(bt)
}

// decisionWords names r's decision for the migration's report.
func decisionWords(r *Record) string {
	switch {
	case r.Pin != nil:
		return "kept at " + r.Pin.At.UTC().Format(time.RFC3339)
	case r.Freed != nil:
		return "freed by " + r.Freed.Rule + " at " + r.Freed.At.UTC().Format(time.RFC3339)
	case r.WouldFree != nil:
		return "would_free by " + r.WouldFree.Rule
	}
	return "none"
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
