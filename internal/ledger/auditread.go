package ledger

import (
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

// AuditAfter reads up to count entries appended after id, oldest first,
// each with its ID.
func (l *Ledger) AuditAfter(ctx context.Context, after AuditID, count int64) ([]Entry, error) {
	msgs, err := l.rdb.XRangeN(ctx, l.auditKey(), "("+after.String(), "+", count).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("ledger: audit after %s: %w", after, err)
	}
	return decodeEntries(msgs)
}

// WaitAudit waits up to block (> 0) for entries appended after id and
// reads up to count of them, oldest first; none when block passed first.
// It holds one connection of the client while it waits.
func (l *Ledger) WaitAudit(ctx context.Context, after AuditID, count int64, block time.Duration) ([]Entry, error) {
	if block <= 0 {
		block = time.Millisecond // 0 would block for ever
	}
	streams, err := l.rdb.XRead(ctx, &redis.XReadArgs{
		Streams: []string{l.auditKey(), after.String()}, Count: count, Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: wait for audit after %s: %w", after, err)
	}
	var out []Entry
	for _, s := range streams {
		es, err := decodeEntries(s.Messages)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// AuditEnds returns the oldest and the newest id the audit stream holds;
// ok is false when it holds none.
func (l *Ledger) AuditEnds(ctx context.Context) (oldest, newest AuditID, ok bool, err error) {
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

// decodeEntries is the audit stream's messages as entries, each with its
// stream ID; an entry that does not decode is an error naming its ID.
func decodeEntries(msgs []redis.XMessage) ([]Entry, error) {
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		s, _ := m.Values["entry"].(string)
		var e Entry
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, fmt.Errorf("ledger: audit: entry %s: %v", m.ID, err)
		}
		e.ID = m.ID
		out = append(out, e)
	}
	return out, nil
}
