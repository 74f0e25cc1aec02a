package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// AuditFilter selects audit entries; zero fields select everything.
type AuditFilter struct {
	Repo  string    // owner/name, compared case-insensitively as GitHub does
	Issue int64     // with or without Repo
	Since time.Time // entries appended at or after Since (the stream's clock)
	Limit int       // at most the newest Limit matches; <= 0 takes DefaultAuditLimit
}

// Audit reading bounds.
const (
	DefaultAuditLimit = 100
	// MaxAuditScan bounds the entries one read looks at to find its
	// matches; a filter rarer than that comes back short, with More set.
	MaxAuditScan = 100_000
	auditPage    = 1000
)

// AuditRange is a read of the audit stream: matching entries oldest first
// (newest last), and whether older matching entries may be left out (the
// limit or the scan bound stopped the read).
type AuditRange struct {
	Entries []Entry
	More    bool
	// Unreadable names each message scanned that is no audit entry (a
	// hand edit): left out, as the watch stream leaves it out.
	Unreadable []error
}

// AuditSince reads the newest f.Limit entries matching f, newest last. The
// stream's ids are the milliseconds Redis appended them at, so Since is a
// range start, not a scan.
func (l *Ledger) AuditSince(ctx context.Context, f AuditFilter) (AuditRange, error) {
	if err := l.usable(); err != nil {
		return AuditRange{}, err
	}
	if f.Limit <= 0 {
		f.Limit = DefaultAuditLimit
	}
	start := "-"
	if !f.Since.IsZero() {
		start = strconv.FormatInt(max(f.Since.UnixMilli(), 0), 10) + "-0"
	}
	var out AuditRange
	end, scanned := "+", 0
	for {
		msgs, err := l.rdb.XRevRangeN(ctx, l.auditKey(), end, start, auditPage).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return AuditRange{}, fmt.Errorf("ledger: audit: %w", err)
		}
		for _, m := range msgs {
			scanned++
			e, err := decodeEntry(m)
			if err != nil {
				out.Unreadable = append(out.Unreadable, err)
				continue
			}
			if (f.Repo != "" && !strings.EqualFold(e.Repo, f.Repo)) || (f.Issue != 0 && e.Issue != f.Issue) {
				continue
			}
			if len(out.Entries) == f.Limit {
				out.More = true
				break
			}
			out.Entries = append(out.Entries, e)
		}
		if out.More || len(msgs) < auditPage {
			break
		}
		if scanned >= MaxAuditScan {
			out.More = true
			break
		}
		end = "(" + msgs[len(msgs)-1].ID // exclusive: older than the last one read
	}
	for i, j := 0, len(out.Entries)-1; i < j; i, j = i+1, j-1 {
		out.Entries[i], out.Entries[j] = out.Entries[j], out.Entries[i]
	}
	return out, nil
}
