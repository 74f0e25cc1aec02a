package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
)

// Every way Redis can be unavailable answers 503 with a JSON error, within
// the request budget: the test's client gives up at 12 s, well above the
// budget and below the 20 s a request once hung for.
func TestRedisUnavailableAnswers503(t *testing.T) {
	locked := redistest.Start(t)
	if err := locked.Client().ConfigSet(context.Background(), "requirepass", "right-password-1").Err(); err != nil {
		t.Fatal(err)
	}
	replica := redistest.Start(t) // a replica of a dead primary: writes answer READONLY
	stale := redistest.Start(t)   // and with stale reads off, everything answers MASTERDOWN
	for _, s := range []*redistest.Server{replica, stale} {
		if err := s.Client().Do(context.Background(), "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := stale.Client().ConfigSet(context.Background(), "replica-serve-stale-data", "no").Err(); err != nil {
		t.Fatal(err)
	}
	plain := redistest.Start(t)
	cases := map[string]string{
		"no password":        locked.URL(),
		"wrong password":     "redis://:wrong-password-2@" + locked.Addr + "/0",
		"replica, read-only": replica.URL(),
		"replica, stale off": stale.URL(),
		"LOADING":            redistest.StartFake(t, "LOADING Redis is loading the dataset in memory").URL(),
		"CLUSTERDOWN":        redistest.StartFake(t, "CLUSTERDOWN The cluster is down").URL(),
		"TRYAGAIN":           redistest.StartFake(t, "TRYAGAIN Multiple keys request during rehashing of slot").URL(),
		"rediss:// to plain": "rediss://" + plain.Addr + "/0",
		"hung":               redistest.StartFake(t, "").URL(),
		"nothing listening":  "redis://127.0.0.1:1/0",
	}
	for name, url := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := apiOver(t, url)
			client := &http.Client{Timeout: 12 * time.Second}
			for _, r := range []struct{ method, path, body string }{
				{"PUT", "/v1/repos/hive/t27/dispatches/7", working},
				{"GET", "/v1/repos/hive/t27/claims/7", ""},
			} {
				if r.method == "GET" && name == "replica, read-only" {
					continue // a stale replica still serves reads
				}
				req, _ := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v (no answer within 12 s)", r.method, r.path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var e apiwire.Error
				if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || e.Error == "" {
					t.Fatalf("%s %s: %d %s; want 503 with a JSON error", r.method, r.path, resp.StatusCode, body)
				}
			}
		})
	}
}

// apiOver serves the API over the Redis at url, with the client options
// the webhook builds from QUEEN_REDIS_URL.
func apiOver(t *testing.T, url string) string {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	h, err := api.New(api.Config{Ledger: ledger.New(rdb, ledger.Options{}), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(checked(t, h))
	t.Cleanup(ts.Close)
	return ts.URL
}
