package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/ledger"
)

var viewKeys = []string{"repo", "issue", "claim", "claims_issue", "live", "stage", "holds_files", "held_paths",
	"held_until", "send_back_claim", "accept_claim", "freed", "would_free", "prs", "export", "version"}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string { s = slices.Clone(s); sort.Strings(s); return s }

func TestNewRefusesAnEmptyToken(t *testing.T) {
	if _, err := api.New(api.Config{Ledger: &ledger.Ledger{}}); err == nil || !strings.Contains(err.Error(), "Token") {
		t.Fatalf("New with no token: %v", err)
	}
}

func TestPutUpsertsAndAnswersTheClaimView(t *testing.T) {
	e := newEnv(t, envOpts{})
	m := e.put(t, "hive/t27", 9111, sentBack10)
	if got, want := keysOf(m), sorted(append(viewKeys, "outcome")...); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	want := map[string]any{
		"repo": "hive/t27", "issue": 9111.0, "claim": "rejected", "claims_issue": true, "live": true,
		"stage": "send_back", "holds_files": true, "held_paths": []any{"bootstrap/src/compiler.rs"},
		"held_until": "2026-10-10T21:50:00Z", "send_back_claim": "free", "accept_claim": nil, "freed": nil,
		"version": 1.0, "outcome": "would_free",
	}
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	wf, _ := m["would_free"].(map[string]any)
	if wf["rule"] != "send_back_claim" || wf["evidence"] != "send_backs 1 < ceiling 2" {
		t.Errorf("would_free = %#v", m["would_free"])
	}

	// The same body again writes nothing.
	m = e.put(t, "hive/t27", 9111, sentBack10)
	if m["outcome"] != "unchanged" || m["version"] != 1.0 {
		t.Fatalf("second PUT: outcome %v version %v", m["outcome"], m["version"])
	}

	// Absent keeps, null clears.
	m = e.req(t, "PUT", "/v1/repos/hive/t27/dispatches/9111", `{"review_state": null}`, api.SourceHeader, "queen-runtime").mustCode(t, 200, "")
	if m["outcome"] != "updated" || m["claim"] != "awaitingReview" || m["version"] != 2.0 {
		t.Fatalf("null review_state: %v", m)
	}
	rec := e.get(t, "hive/t27", 9111)
	if rec.ReviewState != nil || rec.SendBacks != 1 || len(rec.OwnedPaths) != 1 || len(rec.Criteria) != 2 || rec.FinishedAt == nil {
		t.Fatalf("stored row after {review_state: null}: %+v", rec.Row)
	}
	if h := e.history(t, "hive/t27", 9111); len(h) != 2 || h[0].Source != audit.API("queen-runtime") || h[1].Source != audit.API("") {
		t.Fatalf("history sources: %+v", h)
	}
}

func TestPutWithReleaseOnFreesTheDeadSendBack(t *testing.T) {
	e := newEnv(t, envOpts{ledger: ledger.Options{ReleaseDeadClaims: true}})
	m := e.put(t, "hive/t27", 9111, sentBack10)
	if m["outcome"] != "free" || m["live"] != false || m["claims_issue"] != false || m["stage"] != "done" ||
		m["holds_files"] != false || !reflect.DeepEqual(m["held_paths"], []any{}) || m["held_until"] != nil || m["would_free"] != nil {
		t.Fatalf("freed send-back: %v", m)
	}
	if fr, _ := m["freed"].(map[string]any); fr["rule"] != "send_back_claim" {
		t.Fatalf("freed = %v", m["freed"])
	}
}

func TestGetClaimExplainsAndShowsHistory(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 9111, sentBack10)
	m := e.req(t, "GET", "/v1/repos/hive/t27/claims/9111", "").mustCode(t, 200, "")
	if got, want := keysOf(m), sorted(append(viewKeys, "kept", "explain", "history")...); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	if m["claim"] != "rejected" || m["kept"] != nil {
		t.Fatalf("view: %v", m)
	}
	var lines []string
	for _, l := range m["explain"].([]any) {
		lines = append(lines, l.(string))
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{`review_state="sendBack" idle=10m send_backs=1`, "-> rejected",
		"send_back_claim: send_backs 1 < ceiling 2 -> free", "would be freed by send_back_claim (flag off)"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
	hist := m["history"].([]any)
	if len(hist) != 1 {
		t.Fatalf("history: %v", hist)
	}
	h0 := hist[0].(map[string]any)
	if src, _ := h0["source"].(map[string]any); h0["action"] != "upsert" || h0["decision"] != "would_free" || src["kind"] != "api" || h0["version"] != 1.0 {
		t.Fatalf("history[0] = %v", h0)
	}

	e.req(t, "GET", "/v1/repos/hive/t27/claims/9112", "").mustCode(t, 404, "")
	e.req(t, "GET", "/v1/repos/hive/t27/claims/9111?history=abc", "").mustCode(t, 400, "history")
	e.req(t, "GET", "/v1/repos/hive/t27/claims/9111?verbose=1", "").mustCode(t, 400, "verbose")
}

func listKeys(t *testing.T, m map[string]any) []string {
	t.Helper()
	var out []string
	for _, c := range m["claims"].([]any) {
		v := c.(map[string]any)
		if got := keysOf(v); !reflect.DeepEqual(got, sorted(viewKeys...)) {
			t.Fatalf("list entry keys %v", got)
		}
		out = append(out, fmt.Sprintf("%s#%v", v["repo"], v["issue"]))
	}
	return out
}

// follow pages through /v1/claims with q, returning every key and the
// number of pages.
func (e *env) follow(t *testing.T, q url.Values) ([]string, int) {
	t.Helper()
	var all []string
	pages := 0
	for {
		m := e.req(t, "GET", "/v1/claims?"+q.Encode(), "").mustCode(t, 200, "")
		if got := keysOf(m); !reflect.DeepEqual(got, []string{"claims", "next_cursor"}) {
			t.Fatalf("list keys %v", got)
		}
		pages++
		keys := listKeys(t, m)
		if lim := q.Get("limit"); lim != "" && len(keys) > int(lim[0]-'0') {
			t.Fatalf("page of %d rows over limit %s", len(keys), lim)
		}
		all = append(all, keys...)
		next := m["next_cursor"].(string)
		if next == "" {
			return all, pages
		}
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		q.Set("cursor", next)
	}
}

func TestListFiltersAndPagesAcrossRepositories(t *testing.T) {
	e := newEnv(t, envOpts{})
	for issue, body := range map[int]string{1: working, 2: sentBack10, 3: accepted, 4: failedRow, 5: working} {
		e.put(t, "hive/t27", issue, body)
	}
	for issue, body := range map[int]string{7: waiting, 8: atCeiling, 9: failedRow} {
		e.put(t, "acme/web", issue, body)
	}
	all := []string{"acme/web#7", "acme/web#8", "acme/web#9", "hive/t27#1", "hive/t27#2", "hive/t27#3", "hive/t27#4", "hive/t27#5"}
	got, pages := e.follow(t, url.Values{"limit": {"3"}})
	if !reflect.DeepEqual(got, all) || pages < 3 {
		t.Fatalf("all rows in %d pages: %v", pages, got)
	}
	if got, pages := e.follow(t, url.Values{}); !reflect.DeepEqual(got, all) || pages != 1 {
		t.Fatalf("default page: %v in %d pages", got, pages)
	}
	cases := []struct {
		q    url.Values
		want []string
	}{
		{url.Values{"repo": {"hive/t27"}, "limit": {"2"}}, all[3:]},
		{url.Values{"repo": {"acme/web"}}, all[:3]},
		{url.Values{"claim": {"running"}}, []string{"hive/t27#1", "hive/t27#5"}},
		{url.Values{"claim": {"running"}, "limit": {"1"}}, []string{"hive/t27#1", "hive/t27#5"}},
		{url.Values{"claims_issue": {"false"}}, []string{"acme/web#9", "hive/t27#4"}},
		{url.Values{"claims_issue": {"true"}, "claim": {"rejected"}}, []string{"acme/web#8", "hive/t27#2"}},
		{url.Values{"claims_issue": {"true"}, "repo": {"acme/web"}, "limit": {"1"}}, []string{"acme/web#7", "acme/web#8"}},
		{url.Values{"claim": {"cancelled"}}, nil},
	}
	for _, tc := range cases {
		if got, _ := e.follow(t, tc.q); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.q.Encode(), got, tc.want)
		}
	}
	// A filtered page is filled from further rows, not cut at the rows read.
	if got, pages := e.follow(t, url.Values{"claims_issue": {"false"}, "limit": {"2"}}); len(got) != 2 || pages > 2 {
		t.Fatalf("filtered page: %v in %d pages", got, pages)
	}
	m := e.req(t, "GET", "/v1/claims?claim=running&limit=2", "").mustCode(t, 200, "")
	if got := listKeys(t, m); !reflect.DeepEqual(got, []string{"hive/t27#1", "hive/t27#5"}) {
		t.Fatalf("one filtered page: %v", got)
	}

	for q, field := range map[string]string{
		"claim=Running":                       "claim",
		"claim=":                              "claim",
		"claims_issue=yes":                    "claims_issue",
		"claims_issue=1":                      "claims_issue",
		"limit=0":                             "limit",
		"limit=abc":                           "limit",
		"limit=1001":                          "limit",
		"cursor=garbage":                      "cursor",
		"repo=hive/t27&cursor=acme/web%239":   "cursor",
		"repo=nope":                           "repo",
		"repo=hive/t27&repo=acme/web":         "repo",
		"claimsissue=true":                    "claimsissue",
		"claims_issue=true&claims_issue=true": "claims_issue",
	} {
		e.req(t, "GET", "/v1/claims?"+q, "").mustCode(t, 400, field)
	}
}

func TestHeldPathsComeFromLiveHoldingRows(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 1, working)
	e.put(t, "hive/t27", 2, atCeiling)
	e.put(t, "hive/t27", 3, accepted)
	e.put(t, "hive/t27", 4, waiting)
	e.put(t, "hive/t27", 5, `{"started": true, "owned_paths": ["src/a.go"]}`)
	e.put(t, "hive/t27", 6, sentBack10)
	e.req(t, "POST", "/v1/repos/hive/t27/claims/6/free", `{"reason": "bee gone"}`).mustCode(t, 200, "")
	e.put(t, "acme/web", 1, working)

	type held struct {
		Path  string     `json:"path"`
		Issue int64      `json:"issue"`
		Stage string     `json:"stage"`
		Until *time.Time `json:"until"`
	}
	read := func() []held {
		r := e.req(t, "GET", "/v1/repos/hive/t27/held-paths", "")
		m := r.mustCode(t, 200, "")
		if got := keysOf(m); !reflect.DeepEqual(got, []string{"held"}) {
			t.Fatalf("keys %v", got)
		}
		for _, h := range m["held"].([]any) {
			if got := keysOf(h.(map[string]any)); !reflect.DeepEqual(got, []string{"issue", "path", "stage", "until"}) {
				t.Fatalf("held entry keys %v", got)
			}
		}
		var out struct{ Held []held }
		r.decode(t, &out)
		return out.Held
	}
	at := func(s string) *time.Time { v, _ := time.Parse(time.RFC3339, s); return &v }
	want := []held{
		{"docs/x.md", 2, "send_back", at("2026-10-10T21:30:00Z")},
		{"src/a.go", 1, "working", nil},
		{"src/a.go", 5, "working", nil},
		{"src/b.go", 1, "working", nil},
		{"src/w.go", 4, "awaiting", at("2026-10-10T20:15:00Z")},
	}
	if got := read(); !reflect.DeepEqual(got, want) {
		t.Fatalf("held paths:\n got %+v\nwant %+v", got, want)
	}
	// 31 minutes on, the wait row's 30-minute hold has run out.
	e.clock.Set(t0.Add(31 * time.Minute))
	if got := read(); !reflect.DeepEqual(got, want[:4]) {
		t.Fatalf("held paths at 20:31:\n got %+v\nwant %+v", got, want[:4])
	}
	e.req(t, "GET", "/v1/repos/hive/t27/held-paths?x=1", "").mustCode(t, 400, "x")
}

type admission struct {
	Queue    uint32  `json:"queue"`
	Admitted []int64 `json:"admitted"`
	Held     []int64 `json:"held"`
	Refusal  *string `json:"refusal"`
}

func (e *env) admit(t *testing.T, repo, body string) admission {
	t.Helper()
	r := e.req(t, "POST", "/v1/repos/"+repo+"/admission", body)
	m := r.mustCode(t, 200, "")
	if got := keysOf(m); !reflect.DeepEqual(got, []string{"admitted", "held", "queue", "refusal"}) {
		t.Fatalf("admission keys %v", got)
	}
	var a admission
	r.decode(t, &a)
	return a
}

// reviewQueueRows puts rows of which exactly two are in the review queue.
func reviewQueueRows(t *testing.T, e *env) {
	e.put(t, "hive/t27", 1, waiting)                                                                             // in
	e.put(t, "hive/t27", 2, `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "issue_open": true}`)      // in: no verdict
	e.put(t, "hive/t27", 3, `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "reaped": true}`)          // reaped
	e.put(t, "hive/t27", 4, `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "issue_open": false}`)     // issue closed
	e.put(t, "hive/t27", 5, atCeiling)                                                                           // a verdict
	e.put(t, "hive/t27", 6, `{"started": false, "finished_at": "2026-10-10T19:00:00Z", "review_state": "wait"}`) // never started
	e.put(t, "hive/t27", 7, accepted)
	e.put(t, "hive/t27", 8, working)
}

const refusal2 = "2 dispatches wait in review; the backlog is closed until the review queue is empty"

func TestAdmissionReviewFirstOn(t *testing.T) {
	e := newEnv(t, envOpts{reviewFirst: true})
	reviewQueueRows(t, e)
	a := e.admit(t, "hive/t27", `{"candidates": [{"issue": 100}, {"issue": 101, "owner_assigned": true}, {"issue": 5, "owner_assigned": false}]}`)
	if a.Queue != 2 || !reflect.DeepEqual(a.Admitted, []int64{101, 5}) || !reflect.DeepEqual(a.Held, []int64{100}) || a.Refusal != nil {
		t.Fatalf("mixed round: %+v", a)
	}
	a = e.admit(t, "hive/t27", `{"candidates": [{"issue": 100}, {"issue": 102}, {"issue": 1}]}`)
	if a.Queue != 2 || len(a.Admitted) != 0 || !reflect.DeepEqual(a.Held, []int64{100, 102, 1}) || a.Refusal == nil || *a.Refusal != refusal2 {
		t.Fatalf("backlog round: %+v", a)
	}
	a = e.admit(t, "hive/t27", `{"candidates": []}`)
	if a.Queue != 2 || len(a.Admitted) != 0 || len(a.Held) != 0 || a.Refusal != nil {
		t.Fatalf("empty round: %+v", a)
	}
	// Another repository's queue is its own.
	a = e.admit(t, "acme/web", `{"candidates": [{"issue": 100}]}`)
	if a.Queue != 0 || !reflect.DeepEqual(a.Admitted, []int64{100}) || a.Refusal != nil {
		t.Fatalf("empty repo: %+v", a)
	}
	// Reviews land: the queue empties and the backlog opens.
	e.put(t, "hive/t27", 1, `{"review_state": "accept"}`)
	e.put(t, "hive/t27", 2, `{"review_state": "sendBack"}`)
	a = e.admit(t, "hive/t27", `{"candidates": [{"issue": 100}, {"issue": 102}]}`)
	if a.Queue != 0 || !reflect.DeepEqual(a.Admitted, []int64{100, 102}) || a.Refusal != nil {
		t.Fatalf("after the reviews: %+v", a)
	}

	for body, field := range map[string]string{
		`{}`:                             "candidates",
		`{"candidates": 3}`:              "candidates",
		`{"candidates": [7]}`:            "candidates[0]",
		`{"candidates": [{"issue": 0}]}`: "candidates[0].issue",
		`{"candidates": [{"issue": 1}, {"issue": -4}]}`:           "candidates[1].issue",
		`{"candidates": [{"owner_assigned": true}]}`:              "candidates[0].issue",
		`{"candidates": [{"issue": 1, "owner": true}]}`:           "candidates[0].owner",
		`{"candidates": [{"issue": 1, "owner_assigned": "yes"}]}`: "candidates[0].owner_assigned",
		`{"candidates": [{"issue": 1}, {"issue": 1}]}`:            "candidates[1].issue",
		`{"candidates": [], "round": 2}`:                          "round",
	} {
		e.req(t, "POST", "/v1/repos/hive/t27/admission", body).mustCode(t, 400, field)
	}
}

func TestAdmissionReviewFirstOffAdmitsAll(t *testing.T) {
	e := newEnv(t, envOpts{})
	reviewQueueRows(t, e)
	a := e.admit(t, "hive/t27", `{"candidates": [{"issue": 100}, {"issue": 102}]}`)
	if a.Queue != 2 || !reflect.DeepEqual(a.Admitted, []int64{100, 102}) || len(a.Held) != 0 || a.Refusal != nil {
		t.Fatalf("review-first off: %+v", a)
	}
}

func TestOverridesAndDeleteAreAudited(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 2, sentBack10)

	m := e.req(t, "POST", "/v1/repos/hive/t27/claims/2/free", `{"reason": "bee confirmed gone"}`).mustCode(t, 200, "")
	if got, want := keysOf(m), sorted(append(viewKeys, "outcome")...); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v", got)
	}
	fr, _ := m["freed"].(map[string]any)
	if m["outcome"] != "free" || m["live"] != false || m["claims_issue"] != false || m["would_free"] != nil ||
		fr["rule"] != "manual" || fr["evidence"] != "bee confirmed gone" || m["version"] != 2.0 {
		t.Fatalf("free: %v", m)
	}
	m = e.req(t, "POST", "/v1/repos/hive/t27/claims/2/free", `{"reason": "again"}`).mustCode(t, 200, "")
	if m["outcome"] != "already free" || m["version"] != 2.0 {
		t.Fatalf("second free: %v", m)
	}
	m = e.req(t, "POST", "/v1/repos/hive/t27/claims/2/keep", `{"reason": "owner wants it"}`, api.SourceHeader, "queenctl").mustCode(t, 200, "")
	if m["outcome"] != "keep" || m["live"] != true || m["freed"] != nil || m["claims_issue"] != true || m["version"] != 3.0 {
		t.Fatalf("keep: %v", m)
	}
	m = e.req(t, "GET", "/v1/repos/hive/t27/claims/2", "").mustCode(t, 200, "")
	if k, _ := m["kept"].(map[string]any); k["reason"] != "owner wants it" || k["source"] != "queenctl" {
		t.Fatalf("kept = %v", m["kept"])
	}

	// Refused overrides write nothing.
	for body, field := range map[string]string{
		`{}`: "reason", `{"reason": "  "}`: "reason", `{"reason": 3}`: "reason", `{"reason": null}`: "reason",
		`{"reason": "x", "by": "me"}`: "by", `{"reason": "` + strings.Repeat("x", 1001) + `"}`: "reason",
	} {
		e.req(t, "POST", "/v1/repos/hive/t27/claims/2/free", body).mustCode(t, 400, field)
	}
	if v := e.get(t, "hive/t27", 2).Version; v != 3 {
		t.Fatalf("version %d after refused overrides, want 3", v)
	}
	e.req(t, "POST", "/v1/repos/hive/t27/claims/3/free", `{"reason": "x"}`).mustCode(t, 404, "")
	e.req(t, "POST", "/v1/repos/hive/t27/claims/3/keep", `{"reason": "x"}`).mustCode(t, 404, "")
	e.absent(t, "hive/t27", 3)

	e.req(t, "DELETE", "/v1/repos/hive/t27/dispatches/2?bogus=1", "").mustCode(t, 400, "bogus")
	m = e.req(t, "DELETE", "/v1/repos/hive/t27/dispatches/2?reason=duplicate+row", "").mustCode(t, 200, "")
	if !reflect.DeepEqual(m, map[string]any{"repo": "hive/t27", "issue": 2.0, "outcome": "deleted", "version": 4.0}) {
		t.Fatalf("delete: %v", m)
	}
	e.absent(t, "hive/t27", 2)
	e.req(t, "DELETE", "/v1/repos/hive/t27/dispatches/2", "").mustCode(t, 404, "")
	e.req(t, "GET", "/v1/repos/hive/t27/claims/2", "").mustCode(t, 404, "")

	h := e.history(t, "hive/t27", 2)
	var got []string
	for _, en := range h {
		got = append(got, fmt.Sprintf("%s/%s/%s", en.Action, en.Decision, en.Source))
	}
	want := []string{"delete//api: duplicate row", "keep/keep/manual queenctl: owner wants it", "free/free/manual: bee confirmed gone", "upsert/would_free/api"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("history:\n got %v\nwant %v", got, want)
	}
	if audit, err := e.ledger.Audit(context.Background(), 10); err != nil || len(audit) != 4 || audit[0].Action != "delete" {
		t.Fatalf("audit stream: %v %+v", err, audit)
	}
}

func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 1, sentBack10) // version 1
	big := `{"criteria": ["` + strings.Repeat("x", api.MaxBodyBytes) + `"]}`
	const put1, put2 = "/v1/repos/hive/t27/dispatches/1", "/v1/repos/hive/t27/dispatches/2"
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		code                     int
		field                    string
	}{
		{"no token", "PUT", put2, working, []string{"Authorization", ""}, 401, ""},
		{"wrong token", "PUT", put2, working, []string{"Authorization", "Bearer " + token + "x"}, 401, ""},
		{"token prefix", "PUT", put2, working, []string{"Authorization", "Bearer " + token[:5]}, 401, ""},
		{"basic auth", "PUT", put2, working, []string{"Authorization", "Basic " + token}, 401, ""},
		{"malformed JSON", "PUT", put2, `{"started": tru`, nil, 400, ""},
		{"not an object", "PUT", put2, `[1]`, nil, 400, ""},
		{"two objects", "PUT", put2, `{} {}`, nil, 400, ""},
		{"unknown field", "PUT", put2, `{"started": true, "strated": true}`, nil, 400, "strated"},
		{"duplicate field", "PUT", put2, `{"started": true, "review_state": "accept", "review_state": "sendBack"}`, nil, 400, "review_state"},
		{"duplicate, escaped", "PUT", put2, `{"started": true, "st\u0061rted": false}`, nil, 400, "started"},
		{"duplicate, nested", "PUT", put2, `{"started": true, "criteria": [{"a": 1, "a": 2}]}`, nil, 400, "criteria[0].a"},
		{"existing row, duplicate", "PUT", put1, `{"send_backs": 0, "send_backs": 5}`, nil, 400, "send_backs"},
		{"free, duplicate reason", "POST", "/v1/repos/hive/t27/claims/1/free", `{"reason": "x", "reason": "y"}`, nil, 400, "reason"},
		{"admission, duplicate issue", "POST", "/v1/repos/hive/t27/admission", `{"candidates": [{"issue": 2, "issue": 1}]}`, nil, 400, "candidates[0].issue"},
		{"another repo in the body", "PUT", put2, `{"repo": "hive/t28"}`, nil, 400, "repo"},
		{"negative counter", "PUT", put2, `{"send_backs": -1}`, nil, 400, "send_backs"},
		{"fractional counter", "PUT", put2, `{"ceiling": 1.5}`, nil, 400, "ceiling"},
		{"unparsable date", "PUT", put2, `{"finished_at": "2026-10-10 19:00"}`, nil, 400, "finished_at"},
		{"non-string review_state", "PUT", put2, `{"review_state": 3}`, nil, 400, "review_state"},
		{"bad path in owned_paths", "PUT", put2, `{"owned_paths": ["a", 7]}`, nil, 400, "owned_paths[1]"},
		{"issue 0", "PUT", "/v1/repos/hive/t27/dispatches/0", working, nil, 400, "issue"},
		{"issue abc", "PUT", "/v1/repos/hive/t27/dispatches/abc", working, nil, 400, "issue"},
		{"issue -1", "PUT", "/v1/repos/hive/t27/dispatches/-1", working, nil, 400, "issue"},
		{"issue too big", "PUT", "/v1/repos/hive/t27/dispatches/99999999999", working, nil, 400, "issue"},
		{"repo owner", "PUT", "/v1/repos/-hive/t27/dispatches/2", working, nil, 400, "repo"},
		{"repo with space", "PUT", "/v1/repos/hive/t%2027/dispatches/2", working, nil, 400, "repo"},
		{"repo dots", "PUT", "/v1/repos/hive/../dispatches/2", working, nil, 400, "path"},
		{"dot-dot to another row", "PUT", "/v1/repos/x/../hive/t27/dispatches/2", working, nil, 400, "path"},
		{"dot-dot, no token", "PUT", "/v1/repos/x/../hive/t27/dispatches/2", working, []string{"Authorization", ""}, 401, ""},
		{"escaped dot-dot", "PUT", "/v1/repos/x/%2E%2E/hive/t27/dispatches/2", working, nil, 400, "path"},
		{"dot segment", "PUT", "/v1/repos/hive/t27/./dispatches/2", working, nil, 400, "path"},
		{"double slash", "PUT", "/v1/repos/hive//t27/dispatches/2", working, nil, 400, "path"},
		{"escaped slash in repo", "PUT", "/v1/repos/hive/t27%2Fx/dispatches/2", working, nil, 400, "repo"},
		{"body over 1 MiB", "PUT", put2, big, nil, 413, ""},
		{"form body", "PUT", put2, "started=true", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, ""},
		{"no content type", "PUT", put2, working, []string{"Content-Type", ""}, 415, ""},
		{"bad source", "PUT", put2, working, []string{api.SourceHeader, "a b"}, 400, api.SourceHeader},
		{"wrong method", "PATCH", put2, working, nil, 405, ""},
		{"unknown route", "PUT", "/v1/repos/hive/t27/dispatch/2", working, nil, 404, ""},
		{"trailing slash", "PUT", put2 + "/", working, nil, 400, "path"},
		{"trailing slash, no token", "PUT", put2 + "/", working, []string{"Authorization", ""}, 401, ""},
		{"existing row, bad date", "PUT", put1, `{"send_backs": 0, "finished_at": "nope"}`, nil, 400, "finished_at"},
		{"existing row, unknown field", "PUT", put1, `{"send_backs": 0, "sendbacks": 1}`, nil, 400, "sendbacks"},
		{"existing row, big body", "PUT", put1, big, nil, 413, ""},
		{"existing row, form", "PUT", put1, `{"send_backs": 0}`, []string{"Content-Type", "text/plain"}, 415, ""},
		{"existing row, no token", "PUT", put1, `{"send_backs": 0}`, []string{"Authorization", ""}, 401, ""},
		{"free, no token", "POST", "/v1/repos/hive/t27/claims/1/free", `{"reason": "x"}`, []string{"Authorization", ""}, 401, ""},
		{"delete, no token", "DELETE", put1, "", []string{"Authorization", ""}, 401, ""},
		{"delete, wrong method", "POST", put1, `{}`, nil, 405, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.req(t, tc.method, tc.path, tc.body, tc.hdr...)
			r.mustCode(t, tc.code, tc.field)
			switch tc.code {
			case 401:
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("401 without WWW-Authenticate: %v", r.header)
				}
			case 405:
				if got := r.header.Get("Allow"); got != "DELETE, PUT" {
					t.Errorf("405 with Allow %q", got)
				}
			}
			e.absent(t, "hive/t27", 2)
			rec := e.get(t, "hive/t27", 1)
			if rec.Version != 1 || rec.SendBacks != 1 {
				t.Fatalf("hive/t27#1 changed: version %d send_backs %d", rec.Version, rec.SendBacks)
			}
		})
	}
	// A body over the cap with no Content-Length (chunked) is cut at the cap.
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(big))
		pw.Close()
	}()
	req, _ := http.NewRequest("PUT", e.url+put2, pr)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked big body: status %d, want 413", resp.StatusCode)
	}
	e.absent(t, "hive/t27", 2)
}

func TestNeitherTokenNorBodyIsLogged(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 1, `{"owned_paths": ["secret-path-marker"]}`)
	e.req(t, "PUT", "/v1/repos/hive/t27/dispatches/1", `{"review_state": "body-marker"}`)
	e.req(t, "PUT", "/v1/repos/hive/t27/dispatches/1", `{"bad": "body-marker"}`)
	e.req(t, "GET", "/v1/claims", "", "Authorization", "Bearer wrong-token-marker")
	logs := e.logs.String()
	if !strings.Contains(logs, `"route":"put_dispatch"`) || !strings.Contains(logs, `"status":401`) {
		t.Fatalf("requests were not logged:\n%s", logs)
	}
	for _, secret := range []string{token, "wrong-token-marker", "secret-path-marker", "body-marker"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("log holds %q:\n%s", secret, logs)
		}
	}
}

func TestRequestsAreCountedByRouteAndCode(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 1, working)
	e.put(t, "hive/t27", 2, working)
	e.req(t, "PUT", "/v1/repos/hive/t27/dispatches/3", `{"x": 1}`)
	e.req(t, "GET", "/v1/claims", "", "Authorization", "")
	e.req(t, "GET", "/v1/claims", "")
	e.req(t, "GET", "/v1/claims/", "")
	e.req(t, "GET", "/v1/nothing", "")
	e.req(t, "POST", "/v1/claims", "{}")
	e.req(t, "GET", "/v1/repos/hive/t27/claims/1", "")
	e.req(t, "HEAD", "/v1/repos/hive/t27/claims/1", "")
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "queen_api_requests_total" {
			continue
		}
		for _, m := range mf.Metric {
			got[label(m, "route")+" "+label(m, "code")] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"put_dispatch 200": 2, "put_dispatch 400": 1, "unauthorized 401": 1, "list_claims 200": 1,
		"unclean_path 400": 1, "not_found 404": 1, "method_not_allowed 405": 1, "get_claim 200": 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("counters %v, want %v", got, want)
	}
}

// Errors of the routing itself are JSON too, and a 405 says what is allowed.
func TestRoutingAnswersAreJSON(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 1, working)
	e.req(t, "GET", "/v1/repos/hive/t27/dispatch/1", "").mustCode(t, 404, "")
	e.req(t, "GET", "/v1", "").mustCode(t, 404, "")
	for path, allow := range map[string]string{
		"/v1/repos/hive/t27/dispatches/1":   "DELETE, PUT",
		"/v1/repos/hive/t27/claims/1":       "GET, HEAD",
		"/v1/repos/hive/t27/claims/1/free":  "POST",
		"/v1/claims":                        "GET, HEAD",
		"/v1/repos/hive/t27/exports/1/push": "POST",
		"/v1/repos/hive/t27/admission":      "POST",
		"/v1/repos/hive/t27/held-paths":     "GET, HEAD",
	} {
		r := e.req(t, "PATCH", path, "{}")
		r.mustCode(t, 405, "")
		if got := r.header.Get("Allow"); got != allow {
			t.Errorf("PATCH %s: Allow %q, want %q", path, got, allow)
		}
	}
	if r := e.req(t, "HEAD", "/v1/repos/hive/t27/claims/1", ""); r.code != 200 || len(r.body) != 0 {
		t.Fatalf("HEAD on a claim: %d %q, want 200 with no body", r.code, r.body)
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A person's free names the version they looked at: a new dispatch since
// then is not freed blind.
func TestOverrideOnAMovedRowIsRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 21, `{"started": true, "dispatched_at": "2026-10-10T10:00:00Z"}`)
	seen := e.get(t, "hive/t27", 21).Version
	e.put(t, "hive/t27", 21, `{"dispatched_at": "2026-10-10T19:00:00Z"}`) // a new attempt
	body := fmt.Sprintf(`{"reason": "bee gone", "version": %d}`, seen)
	e.req(t, "POST", "/v1/repos/hive/t27/claims/21/free", body).mustCode(t, 409, "version")
	if rec := e.get(t, "hive/t27", 21); rec.Freed != nil {
		t.Fatalf("the new attempt was freed by an override decided on version %d", seen)
	}
	e.req(t, "POST", "/v1/repos/hive/t27/claims/21/keep", `{"reason": "x", "version": 0}`).mustCode(t, 400, "version")
	now := e.get(t, "hive/t27", 21).Version
	e.req(t, "POST", "/v1/repos/hive/t27/claims/21/free", fmt.Sprintf(`{"reason": "bee gone", "version": %d}`, now)).mustCode(t, 200, "")
	if rec := e.get(t, "hive/t27", 21); rec.Freed == nil {
		t.Fatal("a free on the current version was not applied")
	}
}
