package redisavail_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/redisavail"
	"github.com/queen-app/queen-app/internal/redistest"
)

// errOf runs one GET through a real go-redis client at url, without
// go-redis's own retries, and returns its error wrapped the way callers
// wrap it.
func errOf(t *testing.T, url string, cmd ...any) error {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if len(cmd) == 0 {
		cmd = []any{"GET", "k"}
	}
	err = c.Do(ctx, cmd...).Err()
	if err == nil {
		t.Fatalf("%s %v: no error", url, cmd)
	}
	return fmt.Errorf("ledger: get: %w", err)
}

func TestRedisUnavailabilityIsRecognised(t *testing.T) {
	locked := redistest.Start(t)
	if err := locked.Client().ConfigSet(context.Background(), "requirepass", "right-password-1").Err(); err != nil {
		t.Fatal(err)
	}
	replica := redistest.Start(t)
	if err := replica.Client().Do(context.Background(), "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	plain := redistest.Start(t)
	cases := map[string]error{
		"NOAUTH (no password)":   errOf(t, locked.URL()),
		"WRONGPASS":              errOf(t, "redis://:wrong-password@"+locked.Addr+"/0"),
		"READONLY replica":       errOf(t, "redis://"+replica.Addr+"/0", "SET", "k", "v"),
		"rediss:// to plain":     errOf(t, "rediss://"+plain.Addr+"/0"),
		"connection refused":     errOf(t, "redis://127.0.0.1:1/0"),
		"hung Redis":             errOf(t, redistest.StartFake(t, "").URL()),
		"pool timeout (wrapped)": fmt.Errorf("x: %w", redis.ErrPoolTimeout),
		"closed client":          fmt.Errorf("x: %w", redis.ErrClosed),
	}
	for _, reply := range []string{
		"LOADING Redis is loading the dataset in memory",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"CLUSTERDOWN The cluster is down",
		"TRYAGAIN Multiple keys request during rehashing of slot",
		"READONLY You can't write against a read only replica.",
		"OOM command not allowed when used memory > 'maxmemory'.",
		"NOPERM this user has no permissions to run the 'get' command",
		"ERR max number of clients reached",
		"NOREPLICAS Not enough good replicas to write.",
	} {
		cases[reply] = errOf(t, redistest.StartFake(t, reply).URL())
	}
	for name, err := range cases {
		if !redisavail.Unavailable(err) {
			t.Errorf("%s: %v (%T) not recognised as Redis unavailable", name, err, errors.Unwrap(err))
		}
	}
}

func TestOtherErrorsAreNotUnavailability(t *testing.T) {
	s := redistest.Start(t)
	if err := s.Client().LPush(context.Background(), "list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]error{
		"nil":             nil,
		"a plain error":   errors.New("stored row: invalid character"),
		"redis.Nil":       fmt.Errorf("x: %w", redis.Nil),
		"WRONGTYPE":       errOf(t, s.URL(), "GET", "list"),
		"unknown command": errOf(t, s.URL(), "NOSUCHCOMMAND"),
		"script error":    errOf(t, s.URL(), "EVAL", "return redis.error_reply('ERR bad row')", "0"),
	}
	for name, err := range cases {
		if redisavail.Unavailable(err) {
			t.Errorf("%s: %v recognised as Redis unavailable", name, err)
		}
	}
}

// asynq formats the Redis error of its scripts into text: an enqueue
// against a Redis that is down is still unavailability, and one that hit a
// damaged key is still a bug.
func TestAsynqEnqueueErrorsAreJudgedToo(t *testing.T) {
	enqueue := func(rdb redis.UniversalClient) error {
		c := asynq.NewClientFromRedisClient(rdb)
		_, err := c.Enqueue(asynq.NewTask("t", nil, asynq.TaskID("id-1"), asynq.ProcessIn(time.Minute)))
		return err
	}
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	if err := enqueue(down); !redisavail.Unavailable(err) {
		t.Errorf("enqueue on a Redis that is down: %v not recognised", err)
	}
	s := redistest.Start(t)
	if err := s.Client().Set(context.Background(), "asynq:{default}:scheduled", "not a zset", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := enqueue(s.Client()); err == nil || redisavail.Unavailable(err) {
		t.Errorf("enqueue onto a damaged key: %v; want an error that is not unavailability", err)
	}
}
