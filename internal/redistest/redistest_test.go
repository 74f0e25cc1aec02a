package redistest

import (
	"context"
	"testing"
)

func TestRestartKeepsAppendOnlyWrites(t *testing.T) {
	s := StartWith(t, Options{AppendOnly: true})
	ctx := context.Background()
	c := s.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	got, err := s.Client().Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart: got %q, %v; want v", got, err)
	}
}
