package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/api/openapicheck"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
)

const claimsToken = "queenctl-test-token-81c2"

var claimsT0 = time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)

// claimsServer serves the claims API over a private Redis and points
// QUEEN_API_URL and QUEEN_API_TOKEN at it.
func claimsServer(t *testing.T) *ledger.Ledger {
	t.Helper()
	now := func() time.Time { return claimsT0 }
	l := ledger.New(redistest.Start(t).Client(), ledger.Options{Now: now})
	h, err := api.New(api.Config{Ledger: l, Token: claimsToken, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(openapicheck.Handler(h, func(err error) { t.Errorf("openapi: %v", err) }))
	t.Cleanup(ts.Close)
	t.Setenv("QUEEN_API_URL", ts.URL)
	t.Setenv("QUEEN_API_TOKEN", claimsToken)
	return l
}

func ctl(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeDump(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

// A dump as the Queen writes it: its own columns next to the row's.
var dump = []string{
	`{"repo": "hive/t27", "issue": 9111, "started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:50:00Z", "review_state": "sendBack", "send_backs": 1, "owned_paths": ["bootstrap/src/compiler.rs"], "conversation_id": "c-1", "detail": "x", "input_tokens": 1200}`,
	``,
	`{"repo": "hive/t27", "issue": 9112, "started": true, "finished_at": "yesterday", "detail": "y"}`,
	`{"issue": 9113, "started": true, "owned_paths": ["src/b.rs"], "input_tokens": 5}`,
	`not json at all`,
	`{"repo": "hive/t27", "issue": 9111, "started": true}`,
	`{"repo": "acme/web", "issue": 0, "started": true}`,
	`{"repo": "acme/web", "issue": 4, "started": true, "dispatched_at": "2026-10-10T17:00:00Z", "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "conversation_id": "c-2", "prs": {"open": 1}}`,
	`   `,
	`{"repo": "hive/t27", "issue": 9114, "send_backs": -1}`,
}

func TestClaimsImportKeepsKnownColumnsAndReportsEachLine(t *testing.T) {
	l := claimsServer(t)
	file := writeDump(t, dump...)
	code, out, errOut := ctl("claims", "import", file, "--source", "queen-dump", "--repo", "hive/t27")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (bad lines):\n%s\n%s", code, out, errOut)
	}
	got := lines(out)
	want := []string{
		"line 1 hive/t27#9111: would_free",
		`line 3 hive/t27#9112: failed: finished_at: "yesterday" is not an RFC 3339 date`,
		"line 4 hive/t27#9113: created",
		"line 5: failed: not a JSON object: ", // the decoder's words follow
		"line 6 hive/t27#9111: failed: duplicate row (first on line 1)",
		"line 7: failed: issue: must be a positive whole number",
		"line 8 acme/web#4: created",
		"line 10 hive/t27#9114: failed: send_backs: must not be negative (got -1)",
		"ignored columns: conversation_id, detail, input_tokens, prs",
		"imported: 2 created, 1 would_free, 5 failed",
	}
	if len(got) != len(want) {
		t.Fatalf("report:\n%s", out)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("report line %d: %q, want %q", i+1, got[i], want[i])
		}
	}
	if strings.Count(out, "ignored columns") != 1 {
		t.Errorf("ignored columns listed more than once:\n%s", out)
	}
	if !strings.Contains(errOut, "5 lines failed (3, 5, 6, 7, 10)") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr: %q", errOut)
	}

	ctx := context.Background()
	rec, err := l.Get(ctx, "hive/t27", 9111)
	if err != nil || rec.SendBacks != 1 || rec.ReviewWord() != "sendBack" || rec.WouldFree == nil {
		t.Fatalf("hive/t27#9111: %+v %v", rec, err)
	}
	if rec, err := l.Get(ctx, "hive/t27", 9113); err != nil || !rec.Started || len(rec.OwnedPaths) != 1 {
		t.Fatalf("hive/t27#9113 (repo from --repo): %+v %v", rec, err)
	}
	if rec, err := l.Get(ctx, "acme/web", 4); err != nil || rec.PRs != nil || rec.ReviewWord() != "accept" {
		t.Fatalf("acme/web#4 (prs is not the Queen's to write): %+v %v", rec, err)
	}
	for _, issue := range []int64{9112, 9114} {
		if _, err := l.Get(ctx, "hive/t27", issue); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatalf("bad line hive/t27#%d was written: %v", issue, err)
		}
	}
	if h, _ := l.History(ctx, "hive/t27", 9111, 10); len(h) != 1 || h[0].Source != audit.API("queen-dump") {
		t.Fatalf("history of 9111: %+v", h)
	}

	// Again: nothing changes.
	code, out, _ = ctl("claims", "import", "--repo", "hive/t27", file, "--source", "queen-dump")
	for _, w := range []string{"line 1 hive/t27#9111: unchanged", "line 4 hive/t27#9113: unchanged", "line 8 acme/web#4: unchanged",
		"imported: 3 unchanged, 5 failed"} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("second import lacks %q:\n%s", w, out)
		}
	}
	if code != 1 {
		t.Errorf("second import exit %d", code)
	}
	if rec2, _ := l.Get(ctx, "hive/t27", 9111); rec2.Version != rec.Version {
		t.Errorf("second import moved 9111 from version %d to %d", rec.Version, rec2.Version)
	}
}

func TestClaimsImportCleanDumpExitsZeroTwice(t *testing.T) {
	l := claimsServer(t)
	file := writeDump(t, dump[0], dump[7])
	code, out, errOut := ctl("claims", "import", file)
	if code != 0 || !strings.Contains(out, "imported: 1 created, 1 would_free\n") || errOut != "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = ctl("claims", "import", file)
	if code != 0 || !strings.Contains(out, "imported: 2 unchanged\n") {
		t.Fatalf("second import: exit %d\n%s", code, out)
	}
	if h, _ := l.History(context.Background(), "acme/web", 4, 10); len(h) != 1 || h[0].Source != audit.API("queenctl-import") {
		t.Fatalf("history: %+v", h)
	}
	// A dump line with no repo and no --repo is refused, the rest lands.
	file = writeDump(t, `{"issue": 7, "started": true}`, `{"repo": "acme/web", "issue": 8}`)
	code, out, _ = ctl("claims", "import", file)
	if code != 1 || !strings.Contains(out, "line 1: failed: repo: is required (or give --repo owner/name)\n") ||
		!strings.Contains(out, "line 2 acme/web#8: created\n") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func importRows(t *testing.T) {
	t.Helper()
	file := writeDump(t,
		`{"repo": "hive/t27", "issue": 1, "started": true, "owned_paths": ["src/a.go"]}`,
		`{"repo": "hive/t27", "issue": 2, "started": true, "finished_at": "2026-10-10T19:50:00Z", "review_state": "sendBack", "send_backs": 1}`,
		`{"repo": "hive/t27", "issue": 3, "started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "failed"}`,
		`{"repo": "acme/web", "issue": 5, "started": true}`,
		`{"repo": "acme/web", "issue": 6, "started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept"}`,
	)
	if code, out, errOut := ctl("claims", "import", file); code != 0 {
		t.Fatalf("import: %d\n%s\n%s", code, out, errOut)
	}
}

func tableRows(out string) []string {
	var rows []string
	ls := lines(out)
	for _, l := range ls[1 : len(ls)-1] { // header and count aside
		if f := strings.Fields(l); len(f) > 1 {
			rows = append(rows, f[0]+" "+f[1])
		}
	}
	return rows
}

func TestClaimsListFiltersAndFollowsPages(t *testing.T) {
	claimsServer(t)
	importRows(t)
	claimsPageSize = 2
	t.Cleanup(func() { claimsPageSize = apiwire.MaxLimit })

	code, out, errOut := ctl("claims", "list")
	if code != 0 {
		t.Fatalf("list: %d %s", code, errOut)
	}
	if h := strings.Fields(lines(out)[0]); !reflect.DeepEqual(h[:5], []string{"ROW", "CLAIM", "CLAIMS_ISSUE", "LIVE", "STAGE"}) {
		t.Fatalf("header: %q", lines(out)[0])
	}
	want := []string{"acme/web#5 running", "acme/web#6 accepted", "hive/t27#1 running", "hive/t27#2 rejected", "hive/t27#3 failed"}
	if got := tableRows(out); !reflect.DeepEqual(got, want) || !strings.HasSuffix(out, "5 rows\n") {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(out, "would free by send_back_claim") {
		t.Errorf("the shadow free is not shown:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--repo", "hive/t27"}, want[2:]},
		{[]string{"--claim", "running"}, []string{"acme/web#5 running", "hive/t27#1 running"}},
		{[]string{"--claims-issue", "false"}, []string{"hive/t27#3 failed"}},
		{[]string{"--claims-issue=true", "--repo", "hive/t27", "--claim", "rejected"}, []string{"hive/t27#2 rejected"}},
	} {
		code, out, errOut := ctl(append([]string{"claims", "list"}, tc.args...)...)
		if got := tableRows(out); code != 0 || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: exit %d, rows %v, want %v %s", tc.args, code, got, tc.want, errOut)
		}
	}
	code, out, _ = ctl("claims", "list", "--json", "--repo", "acme/web")
	var js struct{ Claims []dispatch.View }
	if err := json.Unmarshal([]byte(out), &js); code != 0 || err != nil || len(js.Claims) != 2 || js.Claims[1].Claim != "accepted" {
		t.Fatalf("--json: %d %v %s", code, err, out)
	}
	if code, _, errOut := ctl("claims", "list", "--claims-issue", "yes"); code != 2 || !strings.Contains(errOut, "claims-issue") {
		t.Errorf("bad --claims-issue: %d %q", code, errOut)
	}
	if code, _, errOut := ctl("claims", "list", "--claim", "done"); code != 1 || !strings.Contains(errOut, "claim") {
		t.Errorf("bad --claim: %d %q", code, errOut)
	}

	// export: JSON lines of every view, across pages.
	code, out, _ = ctl("claims", "export")
	var keys []string
	for _, l := range lines(out) {
		var v dispatch.View
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("export line %q: %v", l, err)
		}
		keys = append(keys, v.Repo+"#"+v.Claim)
	}
	if code != 0 || len(keys) != 5 {
		t.Fatalf("export: %d %v", code, keys)
	}
	if code, out, _ := ctl("claims", "export", "--repo", "acme/web"); code != 0 || len(lines(out)) != 2 {
		t.Fatalf("export --repo: %d\n%s", code, out)
	}
}

func TestClaimsFreeKeepDelete(t *testing.T) {
	l := claimsServer(t)
	importRows(t)
	ctx := context.Background()

	if code, _, errOut := ctl("claims", "free", "hive/t27#2"); code != 2 || !strings.Contains(errOut, "--reason is required") {
		t.Fatalf("free without a reason: %d %q", code, errOut)
	}
	if code, _, errOut := ctl("claims", "free", "hive/t27-2", "--reason", "x"); code != 2 || !strings.Contains(errOut, "owner/name#N") {
		t.Fatalf("free of a bad ref: %d %q", code, errOut)
	}
	code, out, errOut := ctl("claims", "free", "hive/t27#2", "--reason", "bee gone")
	if code != 0 || out != "hive/t27#2: free (claim rejected, claims_issue false, live false, stage done, 0 paths held)\n" {
		t.Fatalf("free: %d %q %q", code, out, errOut)
	}
	code, out, _ = ctl("claims", "keep", "--reason", "owner asked", "hive/t27#2")
	if code != 0 || !strings.HasPrefix(out, "hive/t27#2: keep (claim rejected, claims_issue true, live true") {
		t.Fatalf("keep: %d %q", code, out)
	}
	// A free decided on an older version is refused, naming the version.
	rec, err := l.Get(ctx, "hive/t27", 2)
	if err != nil {
		t.Fatal(err)
	}
	old := strconv.FormatInt(rec.Version-1, 10)
	if code, _, errOut := ctl("claims", "free", "hive/t27#2", "--reason", "x", "--version", old); code != 1 || !strings.Contains(errOut, "version") {
		t.Fatalf("free on an old version: %d %q", code, errOut)
	}
	if rec, _ := l.Get(ctx, "hive/t27", 2); rec.Freed != nil {
		t.Fatal("a free on an old version was applied")
	}
	if code, _, errOut := ctl("claims", "free", "hive/t27#99", "--reason", "x"); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("free of a missing row: %d %q", code, errOut)
	}
	code, out, _ = ctl("claims", "delete", "hive/t27#2", "--reason", "duplicate")
	if code != 0 || !strings.HasPrefix(out, "hive/t27#2: deleted (version ") {
		t.Fatalf("delete: %d %q", code, out)
	}
	if _, err := l.Get(ctx, "hive/t27", 2); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("deleted row: %v", err)
	}
	if code, _, errOut := ctl("claims", "delete", "hive/t27#2"); code != 1 || !strings.Contains(errOut, "no such dispatch row") {
		t.Fatalf("second delete: %d %q", code, errOut)
	}
	h, _ := l.History(ctx, "hive/t27", 2, 10)
	var got []string
	for _, e := range h {
		got = append(got, e.Action+"/"+e.Source.String())
	}
	want := []string{"delete/api queenctl: duplicate", "keep/manual queenctl: owner asked", "free/manual queenctl: bee gone", "upsert/api queenctl-import"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}

func TestExplainShowsViewRulePathAndHistory(t *testing.T) {
	claimsServer(t)
	importRows(t)
	if code, _, _ := ctl("claims", "free", "hive/t27#2", "--reason", "bee gone"); code != 0 {
		t.Fatal("free failed")
	}
	code, out, errOut := ctl("explain", "hive/t27#2")
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errOut)
	}
	for _, want := range []string{
		"hive/t27#2 (version 2)",
		"claim            rejected", "live             false", "stage            done",
		"send_back_claim  free", "freed            by manual at 2026-10-10T20:00:00Z: bee gone",
		"rule path:",
		`review_state="sendBack" idle=10m send_backs=1`,
		"send_back_claim: send_backs 1 < ceiling 2 -> free",
		"freed by manual at 2026-10-10T20:00:00Z: bee gone",
		"history (newest first):",
		`v2  free  free  rule manual  by manual queenctl: bee gone  -> claim rejected, live false, stage done`,
		"v1  upsert  would_free  rule send_back_claim  by api queenctl-import",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = ctl("explain", "--json", "hive/t27#1")
	var d apiwire.Detail
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || d.Claim != "running" || len(d.History) != 1 || len(d.Explain) == 0 {
		t.Fatalf("explain --json: %d %v %s", code, err, out)
	}
	if code, _, errOut := ctl("explain", "hive/t27#42"); code != 1 || errOut != "queenctl: explain: hive/t27#42: no such dispatch row\n" {
		t.Fatalf("explain of a missing row: %d %q", code, errOut)
	}
	if code, _, _ := ctl("explain"); code != 2 {
		t.Fatalf("explain with no row: exit %d", code)
	}
}

func TestClaimsWithoutTokenSayWhichVariable(t *testing.T) {
	t.Setenv("QUEEN_API_URL", "http://127.0.0.1:1")
	t.Setenv("QUEEN_API_TOKEN", "")
	for _, args := range [][]string{{"claims", "list"}, {"claims", "export"}, {"explain", "hive/t27#1"},
		{"claims", "free", "hive/t27#1", "--reason", "x"}, {"claims", "import", writeDump(t, `{}`)}} {
		code, out, errOut := ctl(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "QUEEN_API_TOKEN") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	t.Setenv("QUEEN_API_TOKEN", claimsToken)
	t.Setenv("QUEEN_API_URL", "not a url")
	if code, _, errOut := ctl("claims", "list"); code != 2 || !strings.Contains(errOut, "QUEEN_API_URL") || strings.Contains(errOut, claimsToken) {
		t.Errorf("bad URL: %d %q", code, errOut)
	}
	// The API down: one line, no token.
	t.Setenv("QUEEN_API_URL", "http://127.0.0.1:1")
	if code, _, errOut := ctl("claims", "list"); code != 1 || strings.Contains(errOut, claimsToken) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("API down: %d %q", code, errOut)
	}
}

// Two bad variables are two lines, each with the command's prefix, in
// every command that reads the API's variables.
func TestEveryCommandPrefixesEachBadVariable(t *testing.T) {
	t.Setenv("QUEEN_API_URL", "not a url")
	t.Setenv("QUEEN_API_TOKEN", "")
	for _, c := range []struct {
		prefix string
		args   []string
	}{
		{"claims list", []string{"claims", "list"}},
		{"claims export", []string{"claims", "export"}},
		{"claims free", []string{"claims", "free", "hive/t27#1", "--reason", "x"}},
		{"claims import", []string{"claims", "import", writeDump(t, `{}`)}},
		{"explain", []string{"explain", "hive/t27#1"}},
		{"audit", []string{"audit"}},
		{"claims watch", []string{"claims", "watch"}},
		{"export status", []string{"export", "status"}},
	} {
		code, out, errOut := ctl(c.args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 2 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and two lines", c.args, code, out, errOut)
			continue
		}
		for i, v := range []string{"QUEEN_API_URL", "QUEEN_API_TOKEN"} {
			if !strings.HasPrefix(lines[i], "queenctl: "+c.prefix+": ") || !strings.Contains(lines[i], v) {
				t.Errorf("%v: line %d %q, want it prefixed %q and naming %s", c.args, i+1, lines[i], "queenctl: "+c.prefix+": ", v)
			}
		}
	}
}

// A review_state the Queen never writes lands, and the import says so on
// the line's report with the known words; a judged_head that is no commit
// id fails its line naming the field.
func TestClaimsImportPrintsWarnings(t *testing.T) {
	l := claimsServer(t)
	file := writeDump(t,
		`{"repo": "hive/t27", "issue": 20, "started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "accepted"}`,
		`{"repo": "hive/t27", "issue": 21, "started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "judged_head": "abc"}`,
	)
	code, out, errOut := ctl("claims", "import", file)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a bad line):\n%s\n%s", code, out, errOut)
	}
	want := []string{
		"line 1 hive/t27#20: created",
		`line 1 hive/t27#20: warning: review_state: "accepted" is not one of the Queen's words (accept, sendBack, escalate, wait, failed, cancelled, empty, stale-contract, obsolete); kept, and read as "other"`,
		"line 2 hive/t27#21: failed: judged_head: must be a commit id of 40 hex digits or null",
		"imported: 1 created, 1 failed, 1 warning",
	}
	if got := lines(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("report:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	if rec, err := l.Get(context.Background(), "hive/t27", 20); err != nil || rec.ReviewWord() != "accepted" {
		t.Fatalf("hive/t27#20: %+v %v, want the word kept", rec, err)
	}
}
