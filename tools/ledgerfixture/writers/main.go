//go:build ignore

// The ledger fixture writer: tools/ledgerfixture copies this file and one
// shim (the old release's worker calls) into a checkout of an old release
// as cmd/zzledgerfixture, and runs it there against a private Redis. It
// writes one scenario through that release's own code (the claims API's
// handler for the Queen's and people's writes, the ledger's transitions
// for the worker's) and records what that release's API answered about
// every row, so the new release can be held to it after the upgrade.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ledger"
)

// T0 is the clock of every write and view.
var T0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const token = "fixture-token-0123456789"

// Answer is one request the old API answered.
type Answer struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// Expected is the file the upgrade tests read beside the dump.
type Expected struct {
	Commit  string   `json:"commit"`
	Now     string   `json:"now"`
	Writes  []Answer `json:"writes"`
	Answers []Answer `json:"answers"`
}

var (
	srv *httptest.Server
	exp Expected
)

func call(method, path, body, source string) Answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, r)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if source != "" {
		req.Header.Set("X-Queen-Source", source)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := Answer{Method: method, Path: path, Status: resp.StatusCode, Body: json.RawMessage(strings.TrimSpace(string(b)))}
	if !json.Valid(a.Body) {
		a.Body = json.RawMessage(fmt.Sprintf("%q", string(b)))
	}
	return a
}

// write is a write the scenario needs to succeed.
func write(method, path, body, source string) {
	a := call(method, path, body, source)
	if a.Status >= 300 {
		log.Fatalf("%s %s: %d %s", method, path, a.Status, a.Body)
	}
	exp.Writes = append(exp.Writes, a)
}

func put(repo string, issue int, body string) {
	write("PUT", fmt.Sprintf("/v1/repos/%s/dispatches/%d", repo, issue), body, "queen")
}

func row(dispatched string, fields string) string {
	s := fmt.Sprintf(`{"started":true,"dispatched_at":%q`, dispatched)
	if fields != "" {
		s += "," + fields
	}
	return s + "}"
}

func version(l *ledger.Ledger, repo string, issue int64) int64 {
	rec, err := l.Get(context.Background(), repo, issue)
	if err != nil {
		log.Fatal(err)
	}
	return rec.Version
}

func main() {
	addr := flag.String("redis", "", "the private Redis")
	out := flag.String("out", "", "expected answers file")
	commit := flag.String("commit", "", "the commit written from")
	flag.Parse()
	rdb := redis.NewClient(&redis.Options{Addr: *addr})
	now := func() time.Time { return T0 }
	// The worker of a deployment that applies its frees, and one in shadow mode.
	led := ledger.New(rdb, ledger.Options{Now: now, FreeClosedPR: true, ReleaseDeadClaims: true})
	shadow := ledger.New(rdb, ledger.Options{Now: now})
	atStart(led)
	h, err := api.New(api.Config{Ledger: led, Token: token, Now: now})
	if err != nil {
		log.Fatal(err)
	}
	srv = httptest.NewServer(h)
	defer srv.Close()
	exp.Commit, exp.Now = *commit, T0.Format(time.RFC3339)

	const R, M, O = "hive/t27", "Hive/T27", "queen/other"
	d1, d2 := "2026-12-01T08:00:00Z", "2026-12-01T09:00:00Z"
	done := `"finished_at":"2026-12-01T10:00:00Z"`
	head := `"judged_head":"0123456789abcdef0123456789abcdef01234567"`

	put(R, 1, row(d1, `"owned_paths":["src/a.go","src/b.go"]`))
	put(R, 2, row(d1, done+`,"review_state":"accept","owned_paths":["src/c.go"]`))
	must(worker.prs(led, R, 2, dispatch.PRState{Read: true, ClosedUnmerged: 1, Numbers: []int{41}}, "d-0002"))
	put(R, 3, row(d1, done+`,"review_state":"accept"`))
	must(worker.prs(shadow, R, 3, dispatch.PRState{Read: true, ClosedUnmerged: 1, Numbers: []int{42}}, "d-0003"))
	put(R, 4, row(d1, done+`,"review_state":"sendBack","send_backs":0,"ceiling":2,"owned_paths":["src/d.go"]`))
	put(R, 5, row(d1, done+`,"review_state":"sendBack","send_backs":2,"ceiling":2,"owned_paths":["src/e.go"]`))
	must(worker.evaluate(led, R, 5))
	put(R, 6, row(d1, done+`,"review_state":"accept",`+head))
	must(worker.prs(led, R, 6, dispatch.PRState{Read: true, Open: 1, Numbers: []int{43}}, "d-0006"))
	must(worker.export(led, R, 6, dispatch.ExportState{State: "pr_opened", PushedHead: "0123456789abcdef0123456789abcdef01234567", PRNumber: 43, Attempts: 2}, version(led, R, 6)))
	put(R, 7, row(d1, done+`,"review_state":"accept"`))
	must(worker.prs(shadow, R, 7, dispatch.PRState{Read: true, ClosedUnmerged: 1, Numbers: []int{44}}, "d-0007"))
	write("POST", "/v1/repos/"+R+"/claims/7/keep", `{"reason":"still needed by the Queen"}`, "alice")
	put(R, 8, row(d1, done+`,"review_state":"accept"`))
	write("DELETE", "/v1/repos/"+R+"/dispatches/8?reason=duplicate+of+7", "", "queen")
	put(R, 9, row(d1, `"finished_at":"2026-12-01T09:00:00Z","review_state":"escalate","criteria":[]`))
	put(R, 10, row(d1, done+`,"review_state":"wait","owned_paths":["src/f.go"]`))
	put(R, 11, row(d1, done+`,"review_state":"accepted"`))
	put(R, 12, row(d1, done+`,"review_state":"accept"`))
	write("POST", "/v1/repos/"+R+"/claims/12/free", `{"reason":"done by hand"}`, "bob")
	put(R, 13, row(d1, done+`,"review_state":"accept"`))
	write("POST", "/v1/repos/"+R+"/claims/13/keep", `{"reason":"first attempt"}`, "")
	put(R, 13, row(d2, `"owned_paths":["src/g.go"]`))

	// Two spellings of one repository: 0.1.0 keyed each apart.
	put(R, 7000, row(d1, done+`,"review_state":"accept"`))
	put(M, 7000, row(d1, done+`,"review_state":"accept"`))
	write("POST", "/v1/repos/"+R+"/claims/7000/free", `{"reason":"freed by a person"}`, "carol")
	put(R, 7001, row(d1, done+`,"review_state":"accept"`))
	put(M, 7001, row(d1, done+`,"review_state":"accept"`))
	write("POST", "/v1/repos/"+M+"/claims/7001/keep", `{"reason":"kept by a person"}`, "dave")
	put(R, 7002, row(d1, done+`,"review_state":"accept"`))
	put(M, 7002, row(d2, `"owned_paths":["src/h.go"]`))
	put(M, 6001, row(d1, `"owned_paths":["lib/held.go"]`))

	put(O, 1, row(d1, done+`,"review_state":"accept",`+head))
	must(worker.export(led, O, 1, dispatch.ExportState{State: "refused", Refusal: "base moved", Attempts: 1}, version(led, O, 1)))

	for _, repo := range []string{R, M, O} {
		for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 6001, 7000, 7001, 7002} {
			if a := call("GET", fmt.Sprintf("/v1/repos/%s/claims/%d", repo, n), "", ""); a.Status != 404 {
				exp.Answers = append(exp.Answers, a)
			}
		}
		exp.Answers = append(exp.Answers, call("GET", "/v1/repos/"+repo+"/held-paths", "", ""))
	}
	exp.Answers = append(exp.Answers, call("GET", "/v1/claims?limit=1000", "", ""))
	exp.Answers = append(exp.Answers, call("GET", "/v1/audit?limit=1000", "", ""))
	b, err := json.MarshalIndent(exp, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
