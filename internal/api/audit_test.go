package api_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
)

func TestAuditListsTheStreamNewestLast(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 9111, sentBack10)
	e.put(t, "hive/t27", 9112, accepted)
	e.put(t, "hive/t28", 9111, working)
	e.req(t, "POST", path("hive/t27", 9112, "claims")+"/keep", `{"reason": "a person looks at it"}`).mustCode(t, 200, "")

	read := func(q string) apiwire.AuditList {
		t.Helper()
		var out apiwire.AuditList
		e.req(t, "GET", "/v1/audit"+q, "").mustCode(t, 200, "")
		e.req(t, "GET", "/v1/audit"+q, "").decode(t, &out)
		return out
	}
	rows := func(l apiwire.AuditList) string {
		s := ""
		for _, en := range l.Entries {
			s += en.Repo + "#" + strconv.FormatInt(en.Issue, 10) + ":" + en.Action + " "
		}
		return s
	}
	for q, want := range map[string]string{
		"":                          "hive/t27#9111:upsert hive/t27#9112:upsert hive/t28#9111:upsert hive/t27#9112:keep ",
		"?repo=Hive/T27":            "hive/t27#9111:upsert hive/t27#9112:upsert hive/t27#9112:keep ",
		"?issue=9111":               "hive/t27#9111:upsert hive/t28#9111:upsert ",
		"?repo=hive/t27&issue=9112": "hive/t27#9112:upsert hive/t27#9112:keep ",
		"?limit=1":                  "hive/t27#9112:keep ",
		"?since=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)): "",
	} {
		if got := rows(read(q)); got != want {
			t.Errorf("GET /v1/audit%s: %q, want %q", q, got, want)
		}
	}
	if l := read("?limit=1"); !l.More || l.Entries[0].Source != audit.Manual("", "a person looks at it") {
		t.Errorf("limit 1: %+v, want the keep with more=true", l)
	}
	if l := read("?since=" + url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))); len(l.Entries) != 4 || l.More {
		t.Errorf("since an hour ago: %d entries more=%v, want all 4", len(l.Entries), l.More)
	}
	for q, field := range map[string]string{
		"?since=yesterday": "since", "?since=-0": "since", "?since=2026-10-10T20:00:00,5Z": "since",
		"?since=2026-10-10t20:00:00Z": "since", "?limit=0": "limit", "?issue=x": "issue", "?repo=nope": "repo", "?rule=x": "rule",
	} {
		e.req(t, "GET", "/v1/audit"+q, "").mustCode(t, 400, field)
	}
}

// The Queen's own row carries repo and issue: taken when they are the
// path's (repo in any case), refused by name otherwise.
func TestPutTakesRepoAndIssueEqualToThePath(t *testing.T) {
	e := newEnv(t, envOpts{})
	body := func(extra string) string {
		return `{` + extra + `, "started": true, "dispatched_at": "2026-10-10T19:00:00Z"}`
	}
	v := e.put(t, "hive/t27", 9111, body(`"repo": "Hive/T27", "issue": 9111`))
	if v["repo"] != "hive/t27" || v["issue"] != float64(9111) || v["claim"] != "running" {
		t.Fatalf("PUT with repo and issue: %v", v)
	}
	for extra, field := range map[string]string{
		`"repo": "hive/t28"`:             "repo",
		`"repo": 7`:                      "repo",
		`"issue": 9112`:                  "issue",
		`"issue": "9111"`:                "issue",
		`"repo": "hive/t27", "issue": 1`: "issue",
	} {
		e.req(t, "PUT", path("hive/t27", 9200, "dispatches"), body(extra)).mustCode(t, 400, field)
		e.absent(t, "hive/t27", 9200)
	}
}

// A message of the audit stream that is no entry (a hand edit) is left out
// and logged, as the watch stream leaves it out: the list around it, and
// the newest entry a watch starts after, are still read.
func TestAuditLeavesOutAMessageThatIsNoEntry(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.put(t, "hive/t27", 1, working)
	if err := e.redis.Client().XAdd(t.Context(), &redis.XAddArgs{Stream: "queen:audit",
		Values: map[string]any{"entry": "{not json"}}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"?limit=1", "", "?repo=hive/t27"} {
		var out apiwire.AuditList
		e.req(t, "GET", "/v1/audit"+q, "").decode(t, &out)
		if len(out.Entries) != 1 || out.Entries[0].Issue != 1 {
			t.Fatalf("GET /v1/audit%s: %+v, want the entry of issue 1", q, out)
		}
	}
	if !strings.Contains(e.logs.String(), "no entry; left out") {
		t.Fatalf("the message left out is not logged: %s", e.logs.String())
	}
}
