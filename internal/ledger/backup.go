package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// BackupFormat names the backup file's format in its first line; a restore
// refuses any other name or a newer BackupVersion.
const (
	BackupFormat  = "queen-ledger-backup"
	BackupVersion = 1
)

// BackupHeader is a backup file's first line.
type BackupHeader struct {
	Format  string    `json:"format"`
	Version int       `json:"format_version"`
	Prefix  string    `json:"prefix"` // of the ledger backed up; keys below are relative to it
	Schema  int       `json:"schema"`
	Ledger  *Identity `json:"ledger"`
	TakenAt time.Time `json:"taken_at"`
	TakenBy string    `json:"taken_by,omitempty"` // the queen-app release
}

// BackupKey is one line of a backup: one key, or one audit stream entry.
// Key is relative to the ledger's prefix ("{hive/t27}:row:7").
type BackupKey struct {
	Key    string            `json:"key"`
	Type   string            `json:"type"`             // string, hash, list, zset, stream
	TTLms  int64             `json:"ttl_ms,omitempty"` // 0: no expiry
	String *string           `json:"string,omitempty"`
	Hash   map[string]string `json:"hash,omitempty"`
	List   []string          `json:"list,omitempty"`
	ZSet   []ZMember         `json:"zset,omitempty"`
	// A stream is one line per entry, oldest first.
	ID     string            `json:"id,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`
}

// ZMember is a sorted set's member with its score.
type ZMember struct {
	Member string  `json:"m"`
	Score  float64 `json:"s"`
}

// BackupEnd is a backup file's last line: a file without it was cut short
// and is refused.
type BackupEnd struct {
	End     bool  `json:"end"`
	Keys    int64 `json:"keys"`
	Entries int64 `json:"stream_entries"`
}

// BackupReport says what a backup or a restore held.
type BackupReport struct {
	Header  BackupHeader
	Keys    int64 // keys other than the audit stream
	Entries int64 // audit stream entries
	Rows    int64 // dispatch rows (row hashes that hold a row)
}

// ledgerGlobals are the ledger's keys outside the repositories' slots.
func (l *Ledger) ledgerGlobals() []string {
	return []string{l.reposKey(), l.schemaKey(), l.identityKey()}
}

// ledgerKeys lists every key of the ledger but the audit stream, by
// repository: the repository keys of every spelling ever written
// (P:{R}:...) and the globals under "".
func (l *Ledger) ledgerKeys(ctx context.Context) (map[string][]string, error) {
	found, err := l.scan(ctx, l.opts.Prefix+":{*")
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, k := range found {
		tag := k[len(l.opts.Prefix)+2:]
		i := strings.IndexByte(tag, '}')
		if i < 0 {
			continue
		}
		out[tag[:i]] = append(out[tag[:i]], k)
	}
	for _, k := range l.ledgerGlobals() {
		out[""] = append(out[""], k)
	}
	return out, nil
}

// Backup writes the whole ledger to w as JSON lines: a header (schema and
// identity), every key of every repository (rows with a person's frees and
// keeps, histories, export state on the rows, indexes, markers), the
// globals, each audit stream entry, and an end line. Each repository is
// read in one transaction, so a row, its history and its indexes agree;
// the stream is read last, up to its newest entry then, so it holds every
// decision on the rows written. It runs online, whatever the gate says.
func (l *Ledger) Backup(ctx context.Context, w io.Writer, by string) (BackupReport, error) {
	var rep BackupReport
	id, schema, err := l.readHead(ctx)
	if err != nil {
		return rep, fmt.Errorf("ledger: backup: %w", err)
	}
	rep.Header = BackupHeader{Format: BackupFormat, Version: BackupVersion, Prefix: l.opts.Prefix,
		Schema: schema, Ledger: id, TakenAt: time.Now().UTC(), TakenBy: by}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep.Header); err != nil {
		return rep, err
	}
	groups, err := l.ledgerKeys(ctx)
	if err != nil {
		return rep, fmt.Errorf("ledger: backup: %w", err)
	}
	tags := make([]string, 0, len(groups))
	for t := range groups {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	for _, tag := range tags {
		recs, err := l.readGroup(ctx, tag, groups[tag])
		if err != nil {
			return rep, fmt.Errorf("ledger: backup {%s}: %w", tag, err)
		}
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return rep, err
			}
			rep.Keys++
			if r.Type == "hash" && r.Hash["row"] != "" {
				rep.Rows++
			}
		}
	}
	if err := l.backupStream(ctx, enc, &rep); err != nil {
		return rep, fmt.Errorf("ledger: backup: audit stream: %w", err)
	}
	after, _, err := l.readHead(ctx)
	if err != nil {
		return rep, fmt.Errorf("ledger: backup: %w", err)
	}
	if (id == nil) != (after == nil) || (id != nil && id.ID != after.ID) {
		return rep, errors.New("ledger: backup: the ledger's identity changed while it was read: take it again")
	}
	if err := enc.Encode(BackupEnd{End: true, Keys: rep.Keys, Entries: rep.Entries}); err != nil {
		return rep, err
	}
	return rep, bw.Flush()
}

// readGroup reads the keys of one repository's slot (or the globals, tag
// "") in one MULTI, again while a row the rows index names was created
// after the key scan.
func (l *Ledger) readGroup(ctx context.Context, tag string, keys []string) ([]BackupKey, error) {
	for attempt := 0; ; attempt++ {
		recs, missing, err := l.readKeys(ctx, tag, keys)
		if err != nil || len(missing) == 0 {
			return recs, err
		}
		if attempt == 5 {
			return nil, fmt.Errorf("rows keep appearing while read (%v): back up again", missing)
		}
		keys = append(keys, missing...)
	}
}

func (l *Ledger) readKeys(ctx context.Context, tag string, keys []string) (recs []BackupKey, missing []string, err error) {
	types := make([]*redis.StatusCmd, len(keys))
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			types[i] = p.Type(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	type read struct {
		key, typ string
		cmd      redis.Cmder
		ttl      *redis.DurationCmd
	}
	var reads []read
	pipe := l.rdb.TxPipeline
	if tag == "" {
		pipe = l.rdb.Pipeline // the globals span slots; each is one key
	}
	p := pipe()
	for i, k := range keys {
		r := read{key: k, typ: types[i].Val()}
		switch r.typ {
		case "none":
			continue
		case "string":
			r.cmd = p.Get(ctx, k)
		case "hash":
			r.cmd = p.HGetAll(ctx, k)
		case "list":
			r.cmd = p.LRange(ctx, k, 0, -1)
		case "zset":
			r.cmd = p.ZRangeWithScores(ctx, k, 0, -1)
		case "stream":
			continue // the audit stream, read entry by entry after
		default:
			return nil, nil, fmt.Errorf("key %s is a %s, which the ledger never writes", k, r.typ)
		}
		r.ttl = p.PTTL(ctx, k)
		reads = append(reads, r)
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, k := range keys {
		have[k] = true
	}
	for _, r := range reads {
		if errors.Is(r.cmd.Err(), redis.Nil) {
			continue // gone since the scan
		}
		if r.cmd.Err() != nil {
			return nil, nil, fmt.Errorf("%s: %w", r.key, r.cmd.Err())
		}
		rec := BackupKey{Key: strings.TrimPrefix(r.key, l.opts.Prefix+":"), Type: r.typ}
		if ttl := r.ttl.Val(); ttl > 0 {
			rec.TTLms = ttl.Milliseconds()
		}
		switch c := r.cmd.(type) {
		case *redis.StringCmd:
			v := c.Val()
			rec.String = &v
		case *redis.MapStringStringCmd:
			rec.Hash = c.Val()
		case *redis.StringSliceCmd:
			rec.List = c.Val()
		case *redis.ZSliceCmd:
			for _, z := range c.Val() {
				m, _ := z.Member.(string)
				rec.ZSet = append(rec.ZSet, ZMember{Member: m, Score: z.Score})
			}
			// A row the rows index names whose hash the scan missed.
			if tag != "" && strings.HasSuffix(r.key, "}:rows") {
				for _, z := range rec.ZSet {
					row := l.opts.Prefix + ":{" + tag + "}:row:" + z.Member
					if !have[row] {
						missing = append(missing, row)
					}
				}
			}
		}
		recs = append(recs, rec)
	}
	return recs, missing, nil
}

// backupStream writes the audit stream's entries up to its newest now.
func (l *Ledger) backupStream(ctx context.Context, enc *json.Encoder, rep *BackupReport) error {
	last, err := l.rdb.XRevRangeN(ctx, l.auditKey(), "+", "-", 1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if len(last) == 0 {
		return nil
	}
	end, start := last[0].ID, "-"
	key := strings.TrimPrefix(l.auditKey(), l.opts.Prefix+":")
	for {
		msgs, err := l.rdb.XRangeN(ctx, l.auditKey(), start, end, auditPage).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for _, m := range msgs {
			fields := make(map[string]string, len(m.Values))
			for k, v := range m.Values {
				fields[k] = fmt.Sprint(v)
			}
			if err := enc.Encode(BackupKey{Key: key, Type: "stream", ID: m.ID, Fields: fields}); err != nil {
				return err
			}
			rep.Entries++
		}
		if len(msgs) < auditPage {
			return nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// ErrNotEmptyRedis refuses a restore over a ledger, unless forced.
var ErrNotEmptyRedis = errors.New("ledger: Redis holds a ledger already")

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// Force deletes the ledger Redis holds (every key Backup would write)
	// before the restore; without it a Redis holding one is refused.
	Force bool
}

// Restore puts the backup at path into Redis. The whole file is read and
// checked first (a bad or cut-short file writes nothing); then the
// repositories' keys, the globals and the audit stream (with its ids) are
// written, and the schema and the identity last, so a process waiting on
// a missing ledger sees it only once it is whole. A Redis that holds a
// ledger already is refused unless opts.Force.
func (l *Ledger) Restore(ctx context.Context, path string, opts RestoreOptions) (BackupReport, error) {
	rep, err := readBackup(path, nil)
	if err != nil {
		return rep, err
	}
	st, err := l.ReadStatus(ctx)
	if err != nil {
		return rep, err
	}
	groups, err := l.ledgerKeys(ctx)
	if err != nil {
		return rep, fmt.Errorf("ledger: restore: %w", err)
	}
	var all []string
	for _, ks := range groups {
		all = append(all, ks...)
	}
	all = append(all, l.auditKey())
	exists, err := l.countExisting(ctx, all)
	if err != nil {
		return rep, fmt.Errorf("ledger: restore: %w", err)
	}
	if exists > 0 && !opts.Force {
		what := fmt.Sprintf("%d keys", exists)
		if st.Identity != nil {
			what = "ledger " + st.Identity.ID
		}
		return rep, fmt.Errorf("%w (%s, %d rows): restore with --force to replace it", ErrNotEmptyRedis, what, st.Rows)
	}
	if exists > 0 {
		// The identity first: processes see a missing ledger, never a half one.
		if err := l.rdb.Del(ctx, l.identityKey()).Err(); err != nil {
			return rep, fmt.Errorf("ledger: restore: %w", err)
		}
		for _, k := range all {
			if err := l.rdb.Del(ctx, k).Err(); err != nil {
				return rep, fmt.Errorf("ledger: restore: clear %s: %w", k, err)
			}
		}
	}
	// The schema and then the identity last: a process waiting on a
	// missing ledger opens it only once it is whole.
	identity, schema := strings.TrimPrefix(l.identityKey(), l.opts.Prefix+":"), strings.TrimPrefix(l.schemaKey(), l.opts.Prefix+":")
	var last [2]*BackupKey
	w := &restoreWriter{l: l, ctx: ctx}
	_, err = readBackup(path, func(k BackupKey) error {
		switch k.Key {
		case schema:
			last[0] = &k
		case identity:
			last[1] = &k
		default:
			return w.add(k)
		}
		return nil
	})
	for _, k := range last {
		if err == nil {
			err = w.flush()
		}
		if err == nil && k != nil {
			err = w.add(*k)
		}
	}
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return rep, fmt.Errorf("ledger: restore: %w", err)
	}
	return rep, nil
}

func (l *Ledger) countExisting(ctx context.Context, keys []string) (int64, error) {
	cmds := make([]*redis.IntCmd, len(keys))
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Exists(ctx, k)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// restoreWriter writes backup lines in pipelines of restoreBatch commands.
type restoreWriter struct {
	l   *Ledger
	ctx context.Context
	p   redis.Pipeliner
	n   int
}

const restoreBatch = 500

func (w *restoreWriter) add(k BackupKey) error {
	if w.p == nil {
		w.p = w.l.rdb.Pipeline()
	}
	ctx, key := w.ctx, w.l.opts.Prefix+":"+k.Key
	switch k.Type {
	case "string":
		w.p.Set(ctx, key, *k.String, 0)
	case "hash":
		w.p.HSet(ctx, key, k.Hash)
	case "list":
		for i := 0; i < len(k.List); i += restoreBatch {
			vals := make([]any, 0, restoreBatch)
			for _, v := range k.List[i:min(i+restoreBatch, len(k.List))] {
				vals = append(vals, v)
			}
			w.p.RPush(ctx, key, vals...)
		}
	case "zset":
		for i := 0; i < len(k.ZSet); i += restoreBatch {
			zs := make([]redis.Z, 0, restoreBatch)
			for _, z := range k.ZSet[i:min(i+restoreBatch, len(k.ZSet))] {
				zs = append(zs, redis.Z{Member: z.Member, Score: z.Score})
			}
			w.p.ZAdd(ctx, key, zs...)
		}
	case "stream":
		vals := make([]any, 0, 2*len(k.Fields))
		for f, v := range k.Fields {
			vals = append(vals, f, v)
		}
		w.p.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: k.ID, Values: vals})
	}
	if k.TTLms > 0 {
		w.p.PExpire(ctx, key, time.Duration(k.TTLms)*time.Millisecond)
	}
	if w.n++; w.n >= restoreBatch {
		return w.flush()
	}
	return nil
}

func (w *restoreWriter) flush() error {
	if w.p == nil || w.n == 0 {
		return nil
	}
	_, err := w.p.Exec(w.ctx)
	w.n = 0
	return err
}

// ReadBackup checks the backup at path line by line and reports what it
// holds.
func ReadBackup(path string) (BackupReport, error) { return readBackup(path, nil) }

// readBackup is ReadBackup, calling fn (when set) with each key line in
// order.
func readBackup(path string, fn func(BackupKey) error) (BackupReport, error) {
	var rep BackupReport
	f, err := os.Open(path)
	if err != nil {
		return rep, fmt.Errorf("ledger: backup file: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	bad := func(line int, format string, a ...any) error {
		return fmt.Errorf("ledger: backup file %s: line %d: %s", path, line, fmt.Sprintf(format, a...))
	}
	var end *BackupEnd
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		if len(b) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return rep, fmt.Errorf("ledger: backup file %s: %w", path, err)
		}
		if end != nil {
			return rep, bad(n, "text after the end line")
		}
		if n == 1 {
			if err := json.Unmarshal(b, &rep.Header); err != nil || rep.Header.Format != BackupFormat {
				return rep, bad(n, "not a queen-app ledger backup (its first line names no format %q)", BackupFormat)
			}
			if rep.Header.Version > BackupVersion {
				return rep, bad(n, "format_version %d is newer than this queen-app reads (%d)", rep.Header.Version, BackupVersion)
			}
			continue
		}
		var probe struct {
			End *bool `json:"end"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return rep, bad(n, "%v", err)
		}
		if probe.End != nil {
			end = new(BackupEnd)
			if err := json.Unmarshal(b, end); err != nil {
				return rep, bad(n, "%v", err)
			}
			continue
		}
		var k BackupKey
		if err := json.Unmarshal(b, &k); err != nil {
			return rep, bad(n, "%v", err)
		}
		if err := checkBackupKey(k); err != nil {
			return rep, bad(n, "%v", err)
		}
		if k.Type == "stream" {
			rep.Entries++
		} else {
			rep.Keys++
			if k.Type == "hash" && k.Hash["row"] != "" {
				rep.Rows++
			}
		}
		if fn != nil {
			if err := fn(k); err != nil {
				return rep, err
			}
		}
	}
	switch {
	case rep.Header.Format == "":
		return rep, fmt.Errorf("ledger: backup file %s is empty", path)
	case end == nil:
		return rep, fmt.Errorf("ledger: backup file %s was cut short: it has no end line", path)
	case end.Keys != rep.Keys || end.Entries != rep.Entries:
		return rep, fmt.Errorf("ledger: backup file %s holds %d keys and %d stream entries, its end line says %d and %d",
			path, rep.Keys, rep.Entries, end.Keys, end.Entries)
	}
	return rep, nil
}

func checkBackupKey(k BackupKey) error {
	if k.Key == "" {
		return errors.New("a key line without a key")
	}
	ok := false
	switch k.Type {
	case "string":
		ok = k.String != nil
	case "hash":
		ok = len(k.Hash) > 0
	case "list":
		ok = len(k.List) > 0
	case "zset":
		ok = len(k.ZSet) > 0
	case "stream":
		_, err := ParseAuditID(k.ID)
		ok = err == nil && len(k.Fields) > 0
	}
	if !ok {
		return fmt.Errorf("key %s: type %q without its value", k.Key, k.Type)
	}
	return nil
}
