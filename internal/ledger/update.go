package ledger

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/retry"
	"github.com/queen-app/queen-app/internal/rules"
)

// Audit actions: what was asked of the ledger (audit holds the words).
const (
	ActionUpsert   = audit.ActionUpsert
	ActionPRs      = audit.ActionPRs
	ActionEvaluate = audit.ActionEvaluate
	ActionFree     = audit.ActionFree
	ActionKeep     = audit.ActionKeep
	ActionDelete   = audit.ActionDelete
	ActionExport   = audit.ActionExport
	ActionMigrate  = audit.ActionMigrate
)

// Decisions and outcomes reported in Result.Outcome and Entry.Decision.
const (
	DecisionFree        = "free"
	DecisionWouldFree   = "would_free"
	DecisionUnfree      = "unfree"
	DecisionWouldUnfree = "would_unfree" // a would_free by accept_claim withdrawn
	DecisionKeep        = "keep"

	OutcomeCreated     = "created"
	OutcomeUpdated     = "updated"
	OutcomeDeleted     = "deleted"
	OutcomeUnchanged   = "unchanged"    // nothing to write
	OutcomeAlreadyFree = "already free" // freeing a freed row
	OutcomeAlreadyKept = "already kept"
	OutcomeUnread      = "unread"     // a failed PR read decides nothing
	OutcomeStaleRead   = "stale read" // a read older than the recorded one decides nothing
)

// Change is what a transition did to a row, for the audit. A Change with
// None set writes nothing and reports Note.
type Change struct {
	Action   string
	Decision string // free, would_free, unfree, keep, an export state, or ""
	Rule     string
	Evidence string
	Source   audit.Source
	Inputs   any // marshalled into the entry
	Delete   bool

	None bool
	Note string
}

// Entry is one audit entry, in the stream and in the row's history.
type Entry = audit.Entry

// Result is what a transition did.
type Result struct {
	Row     *Record // the row after the call; nil after a delete
	Entry   *Entry  // the audit entry written; nil when nothing was written
	Outcome string  // a decision, or created/updated/deleted/unchanged/already free/...
}

// Wrote reports whether the call changed the row.
func (r Result) Wrote() bool { return r.Entry != nil }

// casScript is the one write path: compare the version, write or delete the
// row, keep the indexes and the repository's version counter, append history
// and the audit: to the stream itself outside a Cluster, to the repository's
// pending list (its slot) in a Cluster, from which flushPending moves it to
// the stream. A retried call whose first attempt landed is recognised by its
// write id.
//
// KEYS: row, history, rows, accepted, sendbacks, holding, review, seq,
// marker, audit or pending
// ARGV: 1 expect, 2 next, 3 row JSON ("" deletes), 4 issue, 5 accepted 0/1,
// 6 sendback 0/1, 7 entry, 8 history length, 9 audit maxlen, 10 write id,
// 11 holding score ("" not holding), 12 review 0/1, 13 retention seconds,
// 14 the PR read's time in Unix ms ("" for other writes), 15 the ledger's
// identity ("" for an unguarded ledger), 16 "1" when KEYS[10] is the
// pending list. Answers {code, version, id}: code 1 written, 0 version
// moved, 2 stale read, 3 another ledger's repository (id is its identity).
var casScript = redis.NewScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if ARGV[15] ~= '' then
  local m = redis.call('GET', KEYS[9])
  if m and m ~= ARGV[15] then return {3, cur, m} end
end
local expect = tonumber(ARGV[1])
local nxt = tonumber(ARGV[2])
if cur ~= expect then
  if cur == nxt and redis.call('HGET', KEYS[1], 'w') == ARGV[10] then
    return {1, cur, ''}
  end
  return {0, cur, ''}
end
if ARGV[14] ~= '' then
  -- An older read landing after a newer one decides nothing, even when the
  -- newer one found the recorded state and wrote no version (field r).
  local r = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
  if tonumber(ARGV[14]) < r then return {2, cur, ''} end
  redis.call('HSET', KEYS[1], 'r', ARGV[14])
end
local seq = tonumber(redis.call('GET', KEYS[8]) or '0')
if redis.call('HEXISTS', KEYS[1], 'row') == 0 and ARGV[3] ~= '' and nxt <= seq then
  return {0, cur, ''}
end
if ARGV[15] ~= '' then redis.call('SET', KEYS[9], ARGV[15], 'NX') end
local issue = ARGV[4]
if ARGV[3] == '' then
  if nxt > seq then redis.call('SET', KEYS[8], nxt) end
  redis.call('HDEL', KEYS[1], 'row')
  redis.call('HSET', KEYS[1], 'v', nxt, 'w', ARGV[10])
  for i = 3, 7 do redis.call('ZREM', KEYS[i], issue) end
  redis.call('EXPIRE', KEYS[1], ARGV[13])
else
  redis.call('HSET', KEYS[1], 'v', nxt, 'row', ARGV[3], 'w', ARGV[10])
  redis.call('PERSIST', KEYS[1])
  redis.call('ZADD', KEYS[3], issue, issue)
  if ARGV[5] == '1' then redis.call('ZADD', KEYS[4], issue, issue) else redis.call('ZREM', KEYS[4], issue) end
  if ARGV[6] == '1' then redis.call('ZADD', KEYS[5], issue, issue) else redis.call('ZREM', KEYS[5], issue) end
  if ARGV[11] ~= '' then redis.call('ZADD', KEYS[6], ARGV[11], issue) else redis.call('ZREM', KEYS[6], issue) end
  if ARGV[12] == '1' then redis.call('ZADD', KEYS[7], issue, issue) else redis.call('ZREM', KEYS[7], issue) end
end
redis.call('LPUSH', KEYS[2], ARGV[7])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[8]) - 1)
if ARGV[3] == '' then redis.call('EXPIRE', KEYS[2], ARGV[13]) else redis.call('PERSIST', KEYS[2]) end
local id = ''
if ARGV[16] == '1' then
  redis.call('RPUSH', KEYS[10], ARGV[10] .. '\n' .. ARGV[7])
elseif KEYS[10] then
  id = redis.call('XADD', KEYS[10], 'MAXLEN', '~', ARGV[9], '*', 'entry', ARGV[7])
end
return {1, nxt, id}
`)

type updateOpts struct {
	create  bool  // a missing row is created
	expect  int64 // the version the caller decided on; -1: the latest
	display bool  // the caller's spelling of repo is the one to keep (the Queen's write)
	// readAt is a PR read's time: the write is refused as stale when a newer
	// read was seen, and an unchanged state still marks the read as seen.
	readAt *time.Time
	floor  int64 // the written version is at least floor (a migrated row's)
	// exists, when set, is told before each call of the transition whether
	// the row existed (a migration merges into an existing row).
	exists *bool
	// open lets the write through a closed gate: only Open's migration.
	open bool
	// seen is the row as the caller read it, the first attempt's basis in
	// place of a read of its own; a row that moved since fails the
	// compare-and-set and is read again (not counted as a conflict).
	seen *Record
}

// touchScript marks a read that found the recorded state as seen, without
// a new version: ARGV 1 the version read, 2 the read's time in Unix ms.
var touchScript = redis.NewScript(`
if tonumber(redis.call('HGET', KEYS[1], 'v') or '0') ~= tonumber(ARGV[1]) then return 0 end
local r = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
if tonumber(ARGV[2]) > r then redis.call('HSET', KEYS[1], 'r', ARGV[2]) end
return 1
`)

type transition func(rec *Record, now time.Time) (Change, error)

// Update reads the row, lets fn change it and writes it back with one
// compare-and-set on its version, re-reading and calling fn again when the
// row changed in between. fn may run several times and must decide only
// from rec. A missing row is ErrNotFound; ErrConflict after Options.MaxRetries.
func (l *Ledger) Update(ctx context.Context, repo string, issue int64, fn func(rec *Record) (Change, error)) (Result, error) {
	return l.update(ctx, "update", repo, issue, updateOpts{expect: -1}, func(rec *Record, _ time.Time) (Change, error) {
		return fn(rec)
	})
}

func (l *Ledger) update(ctx context.Context, op, repo string, issue int64, o updateOpts, fn transition) (Result, error) {
	if err := checkKey(repo, issue); err != nil {
		return Result{}, err
	}
	if err := l.usable(); err != nil && !o.open {
		return Result{}, opErr(op, repo, issue, err)
	}
	k := l.keysOf(repo, issue)
	for attempt := 0; attempt < l.opts.MaxRetries; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return Result{}, opErr(op, repo, issue, err)
			}
		}
		fromSeen := attempt == 0 && o.seen != nil
		var st stored
		var err error
		if fromSeen {
			st, err = snapshot(o.seen)
		} else {
			st, err = l.load(ctx, repo, issue)
		}
		if err != nil {
			return Result{}, opErr(op, repo, issue, err)
		}
		exists := st.rec != nil
		if o.exists != nil {
			*o.exists = exists
		}
		if !exists && !o.create {
			return Result{}, opErr(op, repo, issue, ErrNotFound)
		}
		rec := st.rec
		if !exists {
			rec = &Record{Row: *dispatch.New(repo, issue)}
			rec.Version = st.version
		}
		if o.expect >= 0 && rec.Version != o.expect {
			return Result{}, opErr(op, repo, issue, fmt.Errorf("%w: decided on version %d, row is at %d", ErrConflict, o.expect, rec.Version))
		}
		before, err := json.Marshal(rec)
		if err != nil {
			return Result{}, opErr(op, repo, issue, err)
		}
		prev := rec.Version
		now := l.opts.Now().UTC()
		ch, err := fn(rec, now)
		if err != nil {
			return Result{}, opErr(op, repo, issue, err)
		}
		asStored := func() (*Record, error) { // whatever fn did to rec
			stored := new(Record)
			return stored, json.Unmarshal(before, stored)
		}
		if ch.None {
			stored, err := asStored()
			if err != nil {
				return Result{}, opErr(op, repo, issue, err)
			}
			return Result{Row: present(stored, exists), Outcome: ch.Note}, nil
		}
		rec.Issue, rec.Version = issue, prev
		if !exists || o.display {
			rec.Repo = repo
		}
		if !ch.Delete {
			after, err := json.Marshal(rec)
			if err != nil {
				return Result{}, opErr(op, repo, issue, err)
			}
			if exists && ch.Decision == "" && bytes.Equal(before, after) {
				if o.readAt != nil {
					ok, err := touchScript.Run(ctx, l.rdb, []string{k.row}, prev, o.readAt.UnixMilli()).Int()
					if err != nil {
						return Result{}, opErr(op, repo, issue, err)
					}
					if ok != 1 {
						if !fromSeen {
							l.conflicts.Add(1)
						}
						continue
					}
				}
				return Result{Row: rec, Outcome: OutcomeUnchanged}, nil
			}
		}
		rec.Version = prev + 1
		if !exists {
			// Above every version the repository gave, deleted rows included.
			rec.Version = max(prev, st.seq) + 1
		}
		rec.Version = max(rec.Version, o.floor)
		var rowJSON []byte
		if !ch.Delete {
			if rowJSON, err = json.Marshal(rec); err != nil {
				return Result{}, opErr(op, repo, issue, err)
			}
		}
		entry, err := l.entry(rec, now, ch, rowJSON)
		if err != nil {
			return Result{}, opErr(op, repo, issue, err)
		}
		entryJSON, err := json.Marshal(entry)
		if err != nil {
			return Result{}, opErr(op, repo, issue, err)
		}
		if !ch.Delete && !exists {
			// Before the row: a failed script leaves at most a repository with no rows listed.
			if err := l.rdb.ZAdd(ctx, l.reposKey(), redis.Z{Member: ghrepo.Key(repo)}).Err(); err != nil {
				return Result{}, opErr(op, repo, issue, err)
			}
		}
		keys := []string{k.row, k.history, k.rows, k.accepted, k.sendbacks, k.holding, k.review, k.seq, k.marker, l.auditKey()}
		if l.split {
			keys[9] = k.pending
		}
		ix := indexesOf(rec)
		readAt := ""
		if o.readAt != nil {
			readAt = strconv.FormatInt(o.readAt.UnixMilli(), 10)
		}
		wid := writeID()
		res, err := casScript.Run(ctx, l.rdb, keys,
			prev, rec.Version, string(rowJSON), issue, flag(ix.accepted), flag(ix.sendBack),
			entryJSON, l.opts.HistoryLen, l.opts.AuditMaxLen, wid,
			ix.holding, flag(ix.review), int64(DeletedRetention/time.Second), readAt, l.known(), flag(l.split)).Slice()
		if err != nil {
			return Result{}, opErr(op, repo, issue, err)
		}
		switch code, _ := res[0].(int64); code {
		case 1:
		case 3:
			found, _ := res[2].(string)
			return Result{}, opErr(op, repo, issue, l.replacedBy(found))
		case 2:
			stored, err := asStored()
			if err != nil {
				return Result{}, opErr(op, repo, issue, err)
			}
			return Result{Row: present(stored, exists), Outcome: OutcomeStaleRead}, nil
		default:
			if !fromSeen {
				l.conflicts.Add(1)
			}
			if o.expect >= 0 {
				return Result{}, opErr(op, repo, issue, fmt.Errorf("%w: decided on version %d, row moved on", ErrConflict, prev))
			}
			continue
		}
		if l.split {
			if err := l.flushPending(ctx, repo); err != nil {
				// The row, its history and the pending list hold the entry;
				// the next write of the repository, the sweep or Open appends it.
				return Result{}, opErr(op, repo, issue, fmt.Errorf("written at version %d, audit stream (the entry waits in %s): %w", rec.Version, k.pending, err))
			}
		}
		out := Result{Row: present(rec, !ch.Delete), Entry: entry, Outcome: outcomeOf(ch, exists)}
		return out, nil
	}
	return Result{}, opErr(op, repo, issue, fmt.Errorf("%w after %d attempts", ErrConflict, l.opts.MaxRetries))
}

// indexes says which of its repository's indexes a stored row belongs to.
type indexes struct {
	accepted, sendBack, review bool
	holding                    string // the holding score, "" when it holds nothing
}

func indexesOf(rec *Record) indexes {
	finished := rec.FinishedAt != nil
	word := rec.ReviewWord()
	ix := indexes{
		accepted: finished && word == "accept",
		sendBack: finished && word == "sendBack",
		review:   rules.InReviewQueue(rec.Started, finished, word, rec.Reaped, rec.IssueOpen),
	}
	if rec.Freed == nil { // a freed row holds no files
		switch rules.StageOf(finished, word) {
		case rules.StageWorking:
			ix.holding = "0"
		case rules.StageSendBack, rules.StageAwaiting:
			ix.holding = strconv.FormatInt(rec.FinishedAt.Unix(), 10)
		}
	}
	return ix
}

func present(rec *Record, exists bool) *Record {
	if !exists {
		return nil
	}
	return rec
}

func outcomeOf(ch Change, existed bool) string {
	switch {
	case ch.Delete:
		return OutcomeDeleted
	case ch.Decision != "":
		return ch.Decision
	case !existed:
		return OutcomeCreated
	}
	return OutcomeUpdated
}

// appendScript appends an entry to the stream once per write id (for 10
// minutes): a retry whose first try landed but whose reply was lost is not
// appended again. The id is marked only after the XADD succeeded, so a
// refused XADD (a script stops at the error) is appended by the next try.
// KEYS[2] names the write id in the stream's slot ({P:audit} hashes like
// P:audit).
var appendScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'entry', ARGV[2])
  redis.call('SET', KEYS[2], '1', 'EX', 600)
end
return 1`)

// flushPending moves repo's pending audit entries (a Cluster's writes) to
// the stream, oldest first, each removed once appended; it stops at the
// first that fails, so the stream keeps the repository's order. Outside a
// Cluster the list never exists.
func (l *Ledger) flushPending(ctx context.Context, repo string) error {
	key := l.pendingKey(repo)
	items, err := l.rdb.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return err
	}
	for _, it := range items {
		wid, entryJSON, ok := strings.Cut(it, "\n")
		if ok {
			if err := l.appendAudit(ctx, []byte(entryJSON), wid); err != nil {
				return err
			}
		}
		if err := l.rdb.LRem(ctx, key, 1, it).Err(); err != nil {
			return err
		}
	}
	return nil
}

// FlushAudit appends every repository's pending audit entries to the
// stream: a Cluster's entries whose append failed after their row was
// written. The sweep and Open call it; outside a Cluster it does nothing.
func (l *Ledger) FlushAudit(ctx context.Context) error {
	if !l.split {
		return nil
	}
	repos, err := l.rdb.ZRange(ctx, l.reposKey(), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("ledger: flush audit: %w", err)
	}
	var errs []error
	for _, r := range repos {
		if err := l.flushPending(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("ledger: flush audit of %s: %w", r, err))
		}
	}
	return errors.Join(errs...)
}

// appendAudit writes the stream's copy of an entry outside the row's
// script (a Cluster keeps the stream on another node).
func (l *Ledger) appendAudit(ctx context.Context, entryJSON []byte, writeID string) error {
	keys := []string{l.auditKey(), "{" + l.auditKey() + "}:w:" + writeID}
	var err error
	for i := 0; i < 3; i++ {
		err = appendScript.Run(ctx, l.rdb, keys, l.opts.AuditMaxLen, entryJSON).Err()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (l *Ledger) entry(rec *Record, now time.Time, ch Change, rowJSON []byte) (*Entry, error) {
	e := &Entry{
		At: now, Repo: rec.Repo, Issue: rec.Issue, Version: rec.Version,
		Action: ch.Action, Decision: ch.Decision, Rule: ch.Rule, Evidence: ch.Evidence,
		Source: ch.Source,
	}
	if ch.Inputs != nil {
		b, err := json.Marshal(ch.Inputs)
		if err != nil {
			return nil, fmt.Errorf("audit inputs: %v", err)
		}
		e.Inputs = b
	}
	if ch.Delete {
		e.Outcome = audit.Outcome{Deleted: true}
		return e, nil
	}
	e.Outcome = outcomeRow(rec, now, rowJSON)
	return e, nil
}

func outcomeRow(rec *Record, now time.Time, rowJSON []byte) audit.Outcome {
	v := dispatch.ViewOf(&rec.Row, now)
	o := audit.Outcome{Live: v.Live, Kept: rec.Pin != nil, Claim: v.Claim, Stage: v.Stage, Digest: digest(rowJSON)}
	if rec.Freed != nil {
		o.Freed = rec.Freed.Rule
	}
	if rec.WouldFree != nil {
		o.WouldFree = rec.WouldFree.Rule
	}
	if rec.Export != nil {
		o.Export = rec.Export.State
	}
	return o
}

func digest(rowJSON []byte) string {
	sum := sha256.Sum256(rowJSON)
	return hex.EncodeToString(sum[:8])
}

// Digest is the digest an audit entry's outcome carries for this row.
func (r *Record) Digest() string {
	b, _ := json.Marshal(r)
	return digest(b)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func writeID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// snapshot is seen as load would return it, a copy fn may change: its JSON
// decoded as a stored row is.
func snapshot(seen *Record) (stored, error) {
	data, err := json.Marshal(seen)
	if err != nil {
		return stored{}, err
	}
	rec, v, err := decodeRow([]any{strconv.FormatInt(seen.Version, 10), string(data)})
	return stored{rec: rec, version: v}, err
}

// backoff waits a little, growing with the attempt, jittered so that
// writers racing on one row spread out.
func backoff(ctx context.Context, attempt int) error {
	return retry.Sleep(ctx, time.Duration(mrand.Int64N(int64(min(attempt, 20))*int64(time.Millisecond)+1)))
}

// History returns the row's most recent audit entries, newest first (at
// most Options.HistoryLen are kept). A deleted row keeps its history.
func (l *Ledger) History(ctx context.Context, repo string, issue int64, n int64) ([]Entry, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := checkKey(repo, issue); err != nil {
		return nil, err
	}
	if n <= 0 {
		n = l.opts.HistoryLen
	}
	items, err := l.rdb.LRange(ctx, l.keysOf(repo, issue).history, 0, n-1).Result()
	if err != nil {
		return nil, opErr("history", repo, issue, err)
	}
	out := make([]Entry, 0, len(items))
	for _, s := range items {
		var e Entry
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, opErr("history", repo, issue, fmt.Errorf("stored entry: %v", err))
		}
		out = append(out, e)
	}
	return out, nil
}

// Audit returns the newest n entries of the audit stream, newest first.
func (l *Ledger) Audit(ctx context.Context, n int64) ([]Entry, error) {
	if err := l.usable(); err != nil {
		return nil, err
	}
	if n <= 0 {
		n = 100
	}
	msgs, err := l.rdb.XRevRangeN(ctx, l.auditKey(), "+", "-", n).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("ledger: audit: %w", err)
	}
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		e, err := decodeEntry(m)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// noteScript appends an entry about a row without writing the row: only
// while the row is stored at the version the entry names and the
// repository is this ledger's.
//
// KEYS: row, history, marker, audit or pending (as casScript's)
// ARGV: 1 version, 2 entry, 3 history length, 4 audit maxlen, 5 the
// ledger's identity ("" unguarded), 6 the write id when KEYS[4] is the
// pending list, else "". Answers {code, id}: 1 appended, 0 the
// row moved or is gone, 3 another ledger's repository (id is its identity).
var noteScript = redis.NewScript(`
if ARGV[5] ~= '' then
  local m = redis.call('GET', KEYS[3])
  if m and m ~= ARGV[5] then return {3, m} end
end
if redis.call('HEXISTS', KEYS[1], 'row') == 0 or tonumber(redis.call('HGET', KEYS[1], 'v') or '0') ~= tonumber(ARGV[1]) then
  return {0, ''}
end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
local id = ''
if ARGV[6] ~= '' then
  redis.call('RPUSH', KEYS[4], ARGV[6] .. '\n' .. ARGV[2])
else
  id = redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], '*', 'entry', ARGV[2])
end
return {1, id}
`)

// Note appends ch's entry to seen's history and the audit stream, writing
// nothing on the row: its version, state and digest stay those of seen.
// It is for records of what was only decided (a dry run). ErrConflict when
// the row moved on since seen; ErrNotFound when it is gone.
func (l *Ledger) Note(ctx context.Context, seen *Record, ch Change) (*Entry, error) {
	repo, issue := seen.Repo, seen.Issue
	if err := checkKey(repo, issue); err != nil {
		return nil, err
	}
	if err := l.usable(); err != nil {
		return nil, opErr("note", repo, issue, err)
	}
	rowJSON, err := json.Marshal(seen)
	if err != nil {
		return nil, opErr("note", repo, issue, err)
	}
	entry, err := l.entry(seen, l.opts.Now().UTC(), ch, rowJSON)
	if err != nil {
		return nil, opErr("note", repo, issue, err)
	}
	entryJSON, err := json.Marshal(entry)
	if err != nil {
		return nil, opErr("note", repo, issue, err)
	}
	k := l.keysOf(repo, issue)
	keys := []string{k.row, k.history, k.marker, l.auditKey()}
	wid := ""
	if l.split {
		keys[3], wid = k.pending, writeID()
	}
	res, err := noteScript.Run(ctx, l.rdb, keys, seen.Version, entryJSON, l.opts.HistoryLen, l.opts.AuditMaxLen, l.known(), wid).Slice()
	if err != nil {
		return nil, opErr("note", repo, issue, err)
	}
	switch code, _ := res[0].(int64); code {
	case 1:
	case 3:
		found, _ := res[1].(string)
		return nil, opErr("note", repo, issue, l.replacedBy(found))
	default:
		return nil, opErr("note", repo, issue, fmt.Errorf("%w: decided on version %d, row moved on", ErrConflict, seen.Version))
	}
	if l.split {
		if err := l.flushPending(ctx, repo); err != nil {
			return nil, opErr("note", repo, issue, fmt.Errorf("in the row's history, audit stream (the entry waits in %s): %w", k.pending, err))
		}
	}
	return entry, nil
}
