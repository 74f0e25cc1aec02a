package ledger

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

var t0 = time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)

type fixture struct {
	srv   *redistest.Server
	l     *Ledger
	clock *testkit.Clock
	ctx   context.Context
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	srv := redistest.Start(t)
	f := newFixtureOn(srv.Client(), opts)
	f.srv = srv
	return f
}

// newFixtureOn is a fixture over rdb, a client of any form.
func newFixtureOn(rdb redis.UniversalClient, opts Options) *fixture {
	c := testkit.NewClock(t0)
	opts.Now = c.Now
	return &fixture{l: New(rdb, opts), clock: c, ctx: context.Background()}
}

func patch(t testing.TB, s string) map[string]json.RawMessage {
	t.Helper()
	obj, err := dispatch.DecodeObject([]byte(s))
	if err != nil {
		t.Fatalf("patch %s: %v", s, err)
	}
	return obj
}

func (f *fixture) upsert(t testing.TB, repo string, issue int64, body string) Result {
	t.Helper()
	res, err := f.l.Upsert(f.ctx, repo, issue, patch(t, body), audit.API("test"))
	if err != nil {
		t.Fatalf("upsert %s#%d %s: %v", repo, issue, body, err)
	}
	return res
}

func (f *fixture) get(t testing.TB, repo string, issue int64) *Record {
	t.Helper()
	rec, err := f.l.Get(f.ctx, repo, issue)
	if err != nil {
		t.Fatalf("get %s#%d: %v", repo, issue, err)
	}
	return rec
}

func (f *fixture) history(t testing.TB, repo string, issue int64) []Entry {
	t.Helper()
	h, err := f.l.History(f.ctx, repo, issue, 100000)
	if err != nil {
		t.Fatalf("history %s#%d: %v", repo, issue, err)
	}
	return h
}

func prs(open, merged, closed uint32) dispatch.PRState {
	return dispatch.PRState{Read: true, Open: open, Merged: merged, ClosedUnmerged: closed}
}

const accepted = `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "owned_paths": ["src/a.go"]}`

const sentBack = `{"started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:50:00Z", "review_state": "sendBack", "send_backs": 1, "owned_paths": ["src/a.go"]}`

// all reads a whole index two rows a page, so every test of an index also
// goes through its paging.
func all(l *Ledger, ctx context.Context, repo string, ix Index) ([]*Record, error) {
	var out []*Record
	err := l.Each(ctx, repo, ix, 2, func(rows []*Record) error {
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// cas runs the write script directly, as a retried or refused call would.
func (f *fixture) cas(rdb redis.Scripter, keys keys, audit string, expect, next int64, row string, issue int64, id string) ([]any, error) {
	ks := []string{keys.row, keys.history, keys.rows, keys.accepted, keys.sendbacks, keys.holding, keys.review, keys.seq, keys.marker}
	if audit != "" {
		ks = append(ks, audit)
	}
	return casScript.Run(f.ctx, rdb, ks, expect, next, row, issue, "0", "0", `{"version":1}`, 50, 1000, id, "", "0", 60, "", "").Slice()
}
