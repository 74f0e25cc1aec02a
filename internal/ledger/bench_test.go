package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/redistest"
)

// BenchmarkLedger measures upserts/s and claim-view reads/s against a
// private Redis, beside the raw SET rate of the same client and server,
// and runs redis-benchmark against that server when it is installed.
//
//	go test -run '^$' -bench Ledger -benchtime 3s ./internal/ledger/
func BenchmarkLedger(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client()
	ctx := context.Background()
	l := New(rdb, Options{})
	const rows = 1000
	for i := int64(1); i <= rows; i++ {
		if _, err := l.Upsert(ctx, repo, i, patch(b, accepted), audit.API("bench")); err != nil {
			b.Fatal(err)
		}
	}
	sample, err := l.Get(ctx, repo, 1)
	if err != nil {
		b.Fatal(err)
	}
	value, _ := json.Marshal(sample)
	patches := []map[string]json.RawMessage{patch(b, `{"reviewer_misses": 0}`), patch(b, `{"reviewer_misses": 1}`)}
	// misses is each row's stored reviewer_misses. It outlives one run of
	// Upsert: with -count 2 the second run starts where the first left the
	// rows, and a patch computed from the loop index alone wrote a value the
	// row already had ("upsert: unchanged").
	misses := make([]int, rows+1)
	rate := map[string]float64{}
	record := func(b *testing.B, name string) {
		r := float64(b.N) / b.Elapsed().Seconds()
		rate[name] = r
		b.ReportMetric(r, "ops/s")
	}

	b.Run("BaselineSET", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := rdb.Set(ctx, "bench:set:"+strconv.Itoa(i%rows), value, 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
		record(b, "set")
	})
	b.Run("Upsert", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			issue := 1 + i%rows
			misses[issue] ^= 1
			res, err := l.Upsert(ctx, repo, int64(issue), patches[misses[issue]], audit.API("bench"))
			if err != nil || !res.Wrote() {
				b.Fatalf("upsert: %+v %v", res.Outcome, err)
			}
		}
		record(b, "upsert")
	})
	b.Run("GetView", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			rec, err := l.Get(ctx, repo, int64(1+i%rows))
			if err != nil {
				b.Fatal(err)
			}
			if v := rec.View(t0); v.Claim != "accepted" {
				b.Fatalf("view %+v", v)
			}
		}
		record(b, "view")
	})
	if rate["set"] > 0 {
		b.Logf("row JSON %d bytes; upsert %.0f/s = %.2f of SET %.0f/s; view %.0f/s = %.2f of SET",
			len(value), rate["upsert"], rate["upsert"]/rate["set"], rate["set"], rate["view"], rate["view"]/rate["set"])
	}
	if bin, err := exec.LookPath("redis-benchmark"); err == nil {
		out, err := exec.Command(bin, "-h", "127.0.0.1", "-p", fmt.Sprint(srv.Port), "-t", "set", "-n", "100000", "-q").CombinedOutput()
		if err != nil {
			b.Fatalf("redis-benchmark: %v\n%s", err, out)
		}
		// -q redraws its progress with carriage returns; keep the final line.
		lines := strings.Split(strings.TrimSpace(string(out)), "\r")
		b.Logf("redis-benchmark -t set -n 100000 -q: %s", strings.TrimSpace(lines[len(lines)-1]))
	}
}
