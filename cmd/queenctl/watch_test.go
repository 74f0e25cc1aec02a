package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/api/openapicheck"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// watchServer serves the claims API with its watch stream over a private
// Redis and points QUEEN_API_URL and QUEEN_API_TOKEN at it.
func watchServer(t *testing.T) (*ledger.Ledger, *redistest.Server) {
	t.Helper()
	now := func() time.Time { return claimsT0 }
	rs := redistest.Start(t)
	l := ledger.New(rs.Client(), ledger.Options{Now: now})
	done := make(chan struct{})
	h, err := api.New(api.Config{Ledger: l, Token: claimsToken, Now: now, Done: done})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(openapicheck.Handler(h, func(err error) { t.Errorf("openapi: %v", err) }))
	t.Cleanup(func() { close(done); ts.Close() })
	t.Setenv("QUEEN_API_URL", ts.URL)
	t.Setenv("QUEEN_API_TOKEN", claimsToken)
	return l, rs
}

// watchRun runs queenctl claims watch args until stop is called, which
// ends it as SIGINT does and returns its exit code.
func watchRun(t *testing.T, args ...string) (stdout, stderr *testkit.Buffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	old := watchContext
	watchContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	t.Cleanup(func() { watchContext = old })
	stdout, stderr = &testkit.Buffer{}, &testkit.Buffer{}
	code := make(chan int, 1)
	go func() { code <- run(append([]string{"claims", "watch"}, args...), stdout, stderr) }()
	t.Cleanup(cancel)
	return stdout, stderr, func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("claims watch did not end within 10 s of the interrupt")
			return -1
		}
	}
}

func waitLines(t *testing.T, b *testkit.Buffer, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s := b.String(); strings.Count(s, "\n") >= n {
			return lines(s)
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d lines within 10 s, have:\n%s", n, b.String())
		}
	}
}

// One line per change of the watched repository: time, row and version,
// action and decision, rule, outcome, source and the id to resume after;
// SIGINT ends it with 0.
func TestClaimsWatchPrintsALinePerChange(t *testing.T) {
	l, _ := watchServer(t)
	stdout, stderr, stop := watchRun(t, "--repo", "hive/t27")
	time.Sleep(200 * time.Millisecond) // connected: the stream starts with the changes from now
	putRow(t, l, "hive/t27", 9111, `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "dispatched_at": "2026-10-10T17:00:00Z"}`)
	putRow(t, l, "acme/web", 4, `{"started": true}`)
	if _, err := l.Free(context.Background(), "hive/t27", 9111, audit.Manual("queenctl", "seen by hand"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Delete(context.Background(), "hive/t27", 9111, audit.API("test")); err != nil {
		t.Fatal(err)
	}
	got := waitLines(t, stdout, 3)
	res, err := l.AuditSince(context.Background(), ledger.AuditFilter{Repo: "hive/t27"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`2026-10-10T20:00:00Z  hive/t27#9111 v1  upsert  rule -  claim accepted, stage done, live true  api:test  id ` + res.Entries[0].ID,
		`2026-10-10T20:00:00Z  hive/t27#9111 v2  free free  rule manual  claim accepted, stage done, live false, freed manual  manual:queenctl  id ` + res.Entries[1].ID,
		`2026-10-10T20:00:00Z  hive/t27#9111 v3  delete  rule -  deleted  api:test  id ` + res.Entries[2].ID,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(lines(stdout.String())); n != 3 {
		t.Fatalf("%d lines, want 3 (acme/web is not watched):\n%s", n, stdout)
	}
	if code := stop(); code != 0 || stderr.String() != "" {
		t.Fatalf("on interrupt: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
}

// --after resumes after an id, every later change once; an id the stream
// no longer holds prints the reset; --json prints each event as a line.
func TestClaimsWatchResumesAndPrintsResets(t *testing.T) {
	l, rs := watchServer(t)
	for i := int64(1); i <= 4; i++ {
		putRow(t, l, "hive/t27", i, `{"started": true}`)
	}
	res, err := l.AuditSince(context.Background(), ledger.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, stop := watchRun(t, "--after", res.Entries[1].ID)
	got := waitLines(t, stdout, 2)
	for i, l := range got {
		if !strings.HasSuffix(l, "id "+res.Entries[2+i].ID) {
			t.Fatalf("line %d %q, want the entry %s", i+1, l, res.Entries[2+i].ID)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	if err := rs.Client().XTrimMaxLen(context.Background(), "queen:audit", 1).Err(); err != nil {
		t.Fatal(err)
	}
	stdout, _, stop = watchRun(t, "--after", res.Entries[1].ID, "--json")
	got = waitLines(t, stdout, 1)
	var ev struct {
		Event string            `json:"event"`
		ID    string            `json:"id"`
		Data  map[string]string `json:"data"`
	}
	// The reset's id is the newest entry: the live changes follow it.
	if err := json.Unmarshal([]byte(got[0]), &ev); err != nil || ev.Event != "reset" || ev.Data["after"] != res.Entries[1].ID ||
		ev.Data["oldest"] != res.Entries[3].ID || ev.ID != res.Entries[3].ID {
		t.Fatalf("--json after a trimmed id: %s (%v), want the reset", got[0], err)
	}
	stop()
	stdout, _, stop = watchRun(t, "--after", res.Entries[1].ID)
	if got := waitLines(t, stdout, 1); !regexp.MustCompile(`^reset: the audit stream no longer holds entries after \S+ \(oldest \S+\); re-read the claims \(queenctl claims list\); changes follow after id \S+$`).MatchString(got[0]) {
		t.Fatalf("reset line %q", got[0])
	}
	stop()
}

// A bad flag is a usage error; a resume id the API refuses ends it with 1
// and the API's words.
func TestClaimsWatchRefusals(t *testing.T) {
	watchServer(t)
	if code, _, errOut := ctl("claims", "watch", "--repo", "nope"); code != 2 || !strings.Contains(errOut, "--repo") {
		t.Fatalf("bad --repo: exit %d, %q", code, errOut)
	}
	_, stderr, stop := watchRun(t, "--after", "yesterday")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "Last-Event-ID") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code := stop(); code != 1 || !strings.Contains(stderr.String(), "400") {
		t.Fatalf("bad --after: exit %d, stderr %q", code, stderr)
	}
}
