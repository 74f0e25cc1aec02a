package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
)

// Bench sizes: frees written one after another, reconnecting watchers
// beside the steady ones, each dropping its connection every dropEvery
// changes and resuming with Last-Event-ID.
const (
	benchFrees      = 200
	benchGap        = 5 * time.Millisecond
	benchReconnects = 10
	benchDropEvery  = 37
)

// BenchmarkWatch measures how soon a free reaches the watchers connected
// to GET /v1/events after the ledger write begins (p99 over every watcher
// and free), beside a plain GET of the claim view in the same run (its
// p99, the baseline), with 1 and with 100 steady watchers; and counts the
// changes lost or given twice to watchers that drop their connection and
// resume with Last-Event-ID while the frees go on.
func BenchmarkWatch(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			var free, get []time.Duration
			lost, dup, resumes := 0, 0, 0
			for range b.N {
				r := watchRound(b, n)
				free, get = append(free, r.free...), append(get, r.get...)
				lost, dup, resumes = lost+r.lost, dup+r.dup, resumes+r.resumes
			}
			if resumes == 0 {
				b.Fatal("no watcher resumed with Last-Event-ID")
			}
			b.ReportMetric(float64(resumes), "resumes")
			b.ReportMetric(p99ms(free), "free-p99-ms")
			b.ReportMetric(p99ms(get), "get-p99-ms")
			b.ReportMetric(float64(lost), "lost")
			b.ReportMetric(float64(dup), "duplicated")
		})
	}
}

func p99ms(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return -1
	}
	slices.Sort(ds)
	return float64(ds[(len(ds)*99+99)/100-1]) / float64(time.Millisecond)
}

type roundResult struct {
	free, get []time.Duration
	lost, dup int
	resumes   int // connections resumed with Last-Event-ID
}

// benchStream is one SSE connection read line by line; each change's id
// is handed to got with the time its block ended.
func benchStream(ctx context.Context, url, last string, got func(id string, at time.Time) bool) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/v1/events", nil)
	if err != nil {
		return last, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return last, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return last, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	id := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
		}
		if line == "" && id != "" {
			last = id
			if !got(id, time.Now()) {
				return last, nil
			}
			id = ""
		}
	}
	return last, sc.Err()
}

func watchRound(b *testing.B, steady int) roundResult {
	b.Helper()
	srv := redistest.Start(b)
	l := ledger.New(srv.Client(), ledger.Options{})
	reg := prometheus.NewRegistry()
	h, err := api.New(api.Config{Ledger: l, Token: token, Registerer: reg})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var patch map[string]json.RawMessage
	_ = json.Unmarshal([]byte(accepted), &patch)
	for i := int64(1); i <= benchFrees; i++ {
		if _, err := l.Upsert(ctx, "hive/t27", i, patch, audit.API("bench")); err != nil {
			b.Fatal(err)
		}
	}

	var mu sync.Mutex
	var resumes atomic.Int64
	arrivals := make([]map[string]time.Time, steady)
	received := make([][]string, benchReconnects)
	var wg sync.WaitGroup
	for w := range steady {
		arrivals[w] = map[string]time.Time{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = benchStream(ctx, ts.URL, "", func(id string, at time.Time) bool {
				mu.Lock()
				arrivals[w][id] = at
				mu.Unlock()
				return true
			})
		}()
	}
	for w := range benchReconnects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last, n := "", 0
			for ctx.Err() == nil {
				if last != "" {
					resumes.Add(1)
				}
				last, _ = benchStream(ctx, ts.URL, last, func(id string, _ time.Time) bool {
					mu.Lock()
					received[w] = append(received[w], id)
					mu.Unlock()
					n++
					return n%(benchDropEvery+w) != 0 // drop, then resume
				})
			}
		}()
	}
	// Connected: the gauge counts a stream once its start is read.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if gauge(reg, "queen_api_watchers") >= float64(steady+benchReconnects) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the watchers did not connect")
		}
	}
	b.ResetTimer()
	began := map[int64]time.Time{}
	var get []time.Duration
	for i := int64(1); i <= benchFrees; i++ {
		began[i] = time.Now()
		if _, err := l.Free(ctx, "hive/t27", i, audit.Manual("bench", "bench"), 0); err != nil {
			b.Fatal(err)
		}
		t := time.Now()
		resp, err := authedGet(ts.URL + fmt.Sprintf("/v1/repos/hive/t27/claims/%d", i))
		if err != nil || resp != 200 {
			b.Fatalf("GET claim: %d %v", resp, err)
		}
		get = append(get, time.Since(t))
		time.Sleep(benchGap)
	}
	b.StopTimer()
	// The frees' ids, in order.
	rd, err := l.AuditAfter(ctx, ledger.AuditID{}, 10_000)
	if err != nil {
		b.Fatal(err)
	}
	issueOf := map[string]int64{}
	var frees []string
	for _, e := range rd.Entries {
		if e.Decision == "free" {
			issueOf[e.ID] = e.Issue
			frees = append(frees, e.ID)
		}
	}
	lastFree := frees[len(frees)-1]
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		all := true
		for w := range steady {
			_, ok := arrivals[w][lastFree]
			all = all && ok
		}
		for w := range benchReconnects {
			all = all && slices.Contains(received[w], lastFree)
		}
		mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the last free did not reach every watcher within 20 s")
		}
	}
	cancel()
	ts.CloseClientConnections()
	wg.Wait()

	r := roundResult{get: get, resumes: int(resumes.Load())}
	for w := range steady {
		for _, id := range frees {
			at, ok := arrivals[w][id]
			if !ok {
				r.lost++
				continue
			}
			r.free = append(r.free, at.Sub(began[issueOf[id]]))
		}
	}
	for w := range benchReconnects {
		seen := map[string]int{}
		for _, id := range received[w] {
			seen[id]++
		}
		for _, id := range frees {
			switch n := seen[id]; {
			case n == 0:
				r.lost++
			case n > 1:
				r.dup += n - 1
			}
		}
	}
	return r
}

func authedGet(url string) (int, error) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// gauge is one registered gauge's value, -1 when absent.
func gauge(reg *prometheus.Registry, name string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
