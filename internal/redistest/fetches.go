package redistest

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Fetches counts what a client reads per round trip, to prove that a
// reader pages: rows are HMGETs and HGETALLs (one per row, pipelined);
// index entries are the entries of ZRANGE-like answers and of scripts'
// array answers (a member and its score are two).
type Fetches struct {
	mu      sync.Mutex
	calls   int
	rows    int // rows fetched in all
	maxRows int // the most rows fetched in one round trip
	maxIdx  int // the most index entries fetched in one round trip
}

// CountFetches adds a hook to rdb that counts its round trips from now on.
func CountFetches(rdb interface{ AddHook(redis.Hook) }) *Fetches {
	f := &Fetches{}
	rdb.AddHook(f)
	return f
}

func (f *Fetches) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *Fetches) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		f.observe([]redis.Cmder{cmd})
		return err
	}
}

func (f *Fetches) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		f.observe(cmds)
		return err
	}
}

func (f *Fetches) observe(cmds []redis.Cmder) {
	rows, idx := 0, 0
	for _, c := range cmds {
		switch name := strings.ToLower(c.Name()); {
		case name == "hmget" || name == "hgetall":
			rows++
		case strings.HasPrefix(name, "zrange") || name == "zrevrange" || name == "smembers" || name == "hkeys":
			idx += answerLen(c)
		case name == "evalsha" || name == "eval":
			idx += answerLen(c)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.rows += rows
	f.maxRows = max(f.maxRows, rows)
	f.maxIdx = max(f.maxIdx, idx)
}

// answerLen is the number of entries of an array answer, 0 for others.
func answerLen(c redis.Cmder) int {
	switch v := c.(type) {
	case *redis.StringSliceCmd:
		return len(v.Val())
	case *redis.ZSliceCmd:
		return len(v.Val())
	case *redis.Cmd:
		if a, ok := v.Val().([]any); ok {
			return len(a)
		}
	}
	return 0
}

// Reset forgets what was counted.
func (f *Fetches) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.rows, f.maxRows, f.maxIdx = 0, 0, 0, 0
}

// Rows is the number of rows fetched in all.
func (f *Fetches) Rows() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows
}

// MaxRows is the most rows fetched in one round trip.
func (f *Fetches) MaxRows() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxRows
}

// MaxIndex is the most index entries fetched in one round trip.
func (f *Fetches) MaxIndex() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxIdx
}

// Calls is the number of round trips.
func (f *Fetches) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}
