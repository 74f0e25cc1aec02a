package ledger

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// AuditID is an audit stream id: the millisecond Redis appended the entry
// at and its sequence within that millisecond. The zero AuditID is before
// every entry.
type AuditID struct{ Ms, Seq uint64 }

// ParseAuditID reads "<ms>-<seq>", both decimal, as the stream gives them.
func ParseAuditID(s string) (AuditID, error) {
	ms, seq, ok := strings.Cut(s, "-")
	a, err1 := parseDigits(ms)
	b, err2 := parseDigits(seq)
	if !ok || err1 != nil || err2 != nil {
		return AuditID{}, fmt.Errorf("%q is not an audit id such as 1796122594339-0", s)
	}
	return AuditID{a, b}, nil
}

func parseDigits(s string) (uint64, error) {
	if s == "" || len(s) > 20 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not digits")
	}
	return strconv.ParseUint(s, 10, 64)
}

func (a AuditID) String() string {
	return strconv.FormatUint(a.Ms, 10) + "-" + strconv.FormatUint(a.Seq, 10)
}

// Before reports whether a comes before b in the stream.
func (a AuditID) Before(b AuditID) bool {
	return a.Ms < b.Ms || (a.Ms == b.Ms && a.Seq < b.Seq)
}

// AuditRead is one read of the audit stream after an id. A message that
// is no audit entry (a hand edit) is left out and named, and Last moves
// past it: a reader that stopped at it would stop there for ever.
type AuditRead struct {
	Entries    []Entry
	Unreadable []error // one per message left out, naming its id
	Messages   int     // read, entries or not
	Last       AuditID // the last message read; the id asked after when none
	// Gap: messages after the id asked after may be missing. The stream no
	// longer holds that id (trimmed past it, or restored from an older
	// copy that never held it), or, for the zero id, it has dropped
	// messages. A held id is exact: trimming drops only the oldest.
	Gap bool
}

// AuditAfter reads up to count messages appended after id, oldest first,
// each entry with its ID, and whether some after it may be missing.
func (l *Ledger) AuditAfter(ctx context.Context, after AuditID, count int64) (AuditRead, error) {
	if err := l.usable(); err != nil {
		return AuditRead{Last: after}, err
	}
	var msgs *redis.XMessageSliceCmd
	var place placeCmds
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		msgs = p.XRangeN(ctx, l.auditKey(), "("+after.String(), "+", count)
		place = l.queuePlace(ctx, p, after)
		return nil
	})
	gap, perr := place.gap(after)
	if err = cmp.Or(msgs.Err(), perr); err != nil && !errors.Is(err, redis.Nil) {
		return AuditRead{Last: after}, fmt.Errorf("ledger: audit after %s: %w", after, err)
	}
	r, err := readOf(after, msgs.Val())
	r.Gap = gap
	return r, err
}

// WaitAudit waits up to block (> 0) for messages appended after id and
// reads up to count of them, oldest first; none when block passed first.
// Gap is checked after the read, so it may be set for a trim that came
// after it, never missed for one before. It holds one connection of the
// client while it waits.
func (l *Ledger) WaitAudit(ctx context.Context, after AuditID, count int64, block time.Duration) (AuditRead, error) {
	if err := l.usable(); err != nil {
		return AuditRead{Last: after}, err
	}
	if block <= 0 {
		block = time.Millisecond // 0 would block for ever
	}
	streams, err := l.rdb.XRead(ctx, &redis.XReadArgs{
		Streams: []string{l.auditKey(), after.String()}, Count: count, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return AuditRead{Last: after}, nil
	}
	if err != nil {
		return AuditRead{Last: after}, fmt.Errorf("ledger: wait for audit after %s: %w", after, err)
	}
	var msgs []redis.XMessage
	for _, s := range streams {
		msgs = append(msgs, s.Messages...)
	}
	var place placeCmds
	_, _ = l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		place = l.queuePlace(ctx, p, after)
		return nil
	})
	gap, err := place.gap(after)
	if err != nil {
		return AuditRead{Last: after}, fmt.Errorf("ledger: wait for audit after %s: %w", after, err)
	}
	r, err := readOf(after, msgs)
	r.Gap = gap
	return r, err
}

// placeCmds are the reads that say whether the stream still holds a place.
type placeCmds struct {
	held *redis.XMessageSliceCmd // the message at the id (nil for the zero id)
	info *redis.XInfoStreamCmd   // the stream's counts (the zero id)
}

func (l *Ledger) queuePlace(ctx context.Context, p redis.Pipeliner, after AuditID) placeCmds {
	if after == (AuditID{}) {
		return placeCmds{info: p.XInfoStream(ctx, l.auditKey())}
	}
	return placeCmds{held: p.XRangeN(ctx, l.auditKey(), after.String(), after.String(), 1)}
}

// gap reads the answers of queuePlace: whether messages after the id may
// be missing.
func (c placeCmds) gap(after AuditID) (bool, error) {
	if c.held != nil {
		msgs, err := c.held.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, err
		}
		return len(msgs) == 0, nil
	}
	info, err := c.info.Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return false, nil // never written: nothing dropped
		}
		return false, err
	}
	return info.EntriesAdded > info.Length, nil
}

func readOf(after AuditID, msgs []redis.XMessage) (AuditRead, error) {
	r := AuditRead{Last: after, Messages: len(msgs)}
	for _, m := range msgs {
		id, err := ParseAuditID(m.ID)
		if err != nil {
			return AuditRead{Last: after}, fmt.Errorf("ledger: audit: %w", err)
		}
		r.Last = id
		e, err := decodeEntry(m)
		if err != nil {
			r.Unreadable = append(r.Unreadable, err)
			continue
		}
		r.Entries = append(r.Entries, e)
	}
	return r, nil
}

// AuditEnds returns the oldest and the newest id the audit stream holds;
// ok is false when it holds none.
func (l *Ledger) AuditEnds(ctx context.Context) (oldest, newest AuditID, ok bool, err error) {
	if err := l.usable(); err != nil {
		return AuditID{}, AuditID{}, false, err
	}
	var first, last *redis.XMessageSliceCmd
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		first = p.XRangeN(ctx, l.auditKey(), "-", "+", 1)
		last = p.XRevRangeN(ctx, l.auditKey(), "+", "-", 1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return AuditID{}, AuditID{}, false, fmt.Errorf("ledger: audit ends: %w", err)
	}
	if len(first.Val()) == 0 || len(last.Val()) == 0 {
		return AuditID{}, AuditID{}, false, nil
	}
	if oldest, err = ParseAuditID(first.Val()[0].ID); err == nil {
		newest, err = ParseAuditID(last.Val()[0].ID)
	}
	if err != nil {
		return AuditID{}, AuditID{}, false, fmt.Errorf("ledger: audit ends: %w", err)
	}
	return oldest, newest, true, nil
}

// decodeEntry is an audit stream message as its entry, with its stream ID;
// one that does not decode is an error naming its ID.
func decodeEntry(m redis.XMessage) (Entry, error) {
	s, _ := m.Values["entry"].(string)
	var e Entry
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return Entry{}, fmt.Errorf("ledger: audit: entry %s: %v", m.ID, err)
	}
	e.ID = m.ID
	return e, nil
}
