package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

const shipped = "../../testdata/replay/2026-10-11.json"

func load(t *testing.T, path string) (*Snapshot, *Report) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return s, Evaluate(s)
}

func word(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// The measured jams: of the 89 rows that claimed their issue at 12:55Z,
// send_back_claim frees exactly the 8 under-ceiling send-backs; of the 338
// accepted rows, accept_claim frees exactly the 2 with only closed-unmerged PRs.
func TestShippedSnapshot(t *testing.T) {
	s, rep := load(t, shipped)
	if got := rep.TakenAt.Format("2006-01-02T15:04:05Z07:00"); got != "2026-10-11T12:55:00Z" {
		t.Errorf("taken_at = %s", got)
	}
	// The counts are what was measured; the rows are generated from them,
	// and the file says so, so no one reads it as the live data.
	if !strings.HasPrefix(s.About, "Synthetic rows built by tools/gensnapshot") {
		t.Errorf("about = %q: the snapshot must say it is synthetic", s.About)
	}
	if len(rep.Rows) != 463 || len(s.Rows) != 463 {
		t.Fatalf("%d rows, want 463 (89 claimed + 374 completed)", len(rep.Rows))
	}

	// The claimed set: every row that is neither decided nor released.
	var claimed, still, freedSendBacks int
	for i, l := range rep.Rows {
		switch l.Claim {
		case "running", "rejected", "awaitingReview":
		default:
			continue
		}
		claimed++
		if l.ClaimsIssue {
			still++
			continue
		}
		r := s.Rows[i]
		if l.Claim != "rejected" || word(l.SendBackClaim) != "free" || r.ReviewWord() != "sendBack" || r.SendBacks >= r.Ceiling {
			t.Errorf("%s#%d stopped claiming but is not an under-ceiling send-back: %+v", l.Repo, l.Issue, l)
		}
		if l.Live || l.HoldsFiles || l.Stage != "done" {
			t.Errorf("%s#%d freed by send_back_claim still live or holding: %+v", l.Repo, l.Issue, l)
		}
		freedSendBacks++
	}
	if claimed != 89 || still != 81 || freedSendBacks != 8 {
		t.Errorf("claimed set: %d rows, %d still claim, %d freed; want 89, 81, 8", claimed, still, freedSendBacks)
	}

	// The accepted rows by what their PR read found, counted from the input.
	groups := map[string][2]int{} // bucket -> [rows, live rows]
	for i, l := range rep.Rows {
		r := s.Rows[i]
		if r.ReviewWord() != "accept" {
			if l.AcceptClaim != nil {
				t.Errorf("%s: accept_claim %s on a row that is not accepted", r.Key(), word(l.AcceptClaim))
			}
			continue
		}
		p := r.PRs
		var bucket string
		switch {
		case p == nil || !p.Read:
			bucket = "unread"
		case p.Merged > 0:
			bucket = "merged"
		case p.Open > 0:
			bucket = "open"
		case p.ClosedUnmerged > 0:
			bucket = "closed only"
		default:
			bucket = "none"
		}
		g := groups[bucket]
		g[0]++
		if word(l.AcceptClaim) == "live" && l.Live && l.ClaimsIssue {
			g[1]++
		} else if word(l.AcceptClaim) != "free" || l.Live || l.ClaimsIssue {
			t.Errorf("%s: inconsistent view %+v", r.Key(), l)
		}
		groups[bucket] = g
	}
	want := map[string][2]int{"closed only": {2, 0}, "open": {121, 121}, "merged": {2, 2}, "none": {213, 213}}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("accepted rows [rows, live] by PR state = %v, want %v", groups, want)
	}

	wantSummary := Summary{
		Claims:        ClaimCounts{Running: 40, Accepted: 338, Rejected: 9, AwaitingReview: 40, Failed: 36},
		SendBackClaim: SendBackSummary{Rows: 9, Free: 8, Live: 1},
		AcceptClaim:   AcceptSummary{Rows: 338, Free: 2, Live: 336, OpenPR: 121, MergedPR: 2, NoPR: 213},
	}
	if rep.Summary != wantSummary {
		t.Errorf("summary = %+v\nwant      %+v", rep.Summary, wantSummary)
	}
	checkSummary(t, rep)
}

// checkSummary recounts the summary from the lines and checks the buckets
// partition accept_claim's rows.
func checkSummary(t *testing.T, rep *Report) {
	t.Helper()
	claims := map[string]int{}
	var sb SendBackSummary
	var acc [3]int // rows, free, live
	for _, l := range rep.Rows {
		claims[l.Claim]++
		if l.SendBackClaim != nil {
			sb.Rows++
			if *l.SendBackClaim == "free" {
				sb.Free++
			} else {
				sb.Live++
			}
		}
		if l.AcceptClaim != nil {
			acc[0]++
			if *l.AcceptClaim == "free" {
				acc[1]++
			} else {
				acc[2]++
			}
		}
	}
	c := rep.Summary.Claims
	got := map[string]int{"running": c.Running, "accepted": c.Accepted, "rejected": c.Rejected,
		"awaitingReview": c.AwaitingReview, "failed": c.Failed, "cancelled": c.Cancelled}
	for w, n := range got {
		if claims[w] != n {
			t.Errorf("summary claims[%s] = %d, rows say %d", w, n, claims[w])
		}
	}
	if c.Total() != len(rep.Rows) {
		t.Errorf("claims total %d, %d rows", c.Total(), len(rep.Rows))
	}
	if rep.Summary.SendBackClaim != sb {
		t.Errorf("send_back_claim summary %+v, rows say %+v", rep.Summary.SendBackClaim, sb)
	}
	a := rep.Summary.AcceptClaim
	if a.Rows != acc[0] || a.Free != acc[1] || a.Live != acc[2] {
		t.Errorf("accept_claim summary %+v, rows say rows=%d free=%d live=%d", a, acc[0], acc[1], acc[2])
	}
	if sum := a.Free + a.OpenPR + a.MergedPR + a.NoPR + a.Unread; sum != a.Rows {
		t.Errorf("accept_claim buckets sum to %d, want %d rows: %+v", sum, a.Rows, a)
	}
}

// Hand-built rows; every expected view below was worked out from the cards
// by hand at 12:55Z.
const handBuilt = `{"taken_at": "2026-10-11T12:55:00Z", "rows": [
 {"repo": "hive/t27", "issue": 1, "started": true, "dispatched_at": "2026-10-11T12:00:00Z", "owned_paths": ["a.rs"]},
 {"repo": "hive/t27", "issue": 2, "finished_at": "2026-10-11T12:10:00Z", "review_state": "sendBack", "send_backs": 1, "ceiling": 2},
 {"repo": "hive/t27", "issue": 3, "finished_at": "2026-10-11T11:25:00Z", "review_state": "sendBack", "send_backs": 2, "ceiling": 2, "owned_paths": ["b.rs"]},
 {"repo": "hive/t27", "issue": 4, "finished_at": "2026-10-11T11:54:00Z", "review_state": "sendBack", "send_backs": 0},
 {"repo": "hive/t27", "issue": 5, "finished_at": "2026-10-11T11:55:01Z", "review_state": "sendBack", "send_backs": 2, "ceiling": null},
 {"repo": "hive/t27", "issue": 6, "finished_at": "2026-10-11T12:50:00Z", "review_state": "sendBack", "send_backs": 0, "ceiling": 0},
 {"repo": "hive/t27", "issue": 7, "finished_at": "2026-10-10T09:00:00Z", "review_state": "accept", "judged_head": "0123456789abcdef0123456789abcdef01234567", "prs": {"read": true, "closed_unmerged": 1}},
 {"repo": "hive/t27", "issue": 8, "finished_at": "2026-10-10T09:00:00Z", "review_state": "accept"},
 {"repo": "hive/t27", "issue": 9, "finished_at": "2026-10-10T09:00:00Z", "review_state": "accept", "prs": {"read": false, "open": 0, "merged": 0, "closed_unmerged": 3}},
 {"repo": "hive/t27", "issue": 10, "finished_at": "2026-10-10T09:00:00Z", "review_state": "accept", "prs": {"read": true, "open": 1, "merged": 0, "closed_unmerged": 2}},
 {"repo": "hive/t27", "issue": 11, "finished_at": "2026-10-10T09:00:00Z", "review_state": "accept", "prs": {"read": true, "open": 0, "merged": 1, "closed_unmerged": 1}},
 {"repo": "hive/t27", "issue": 12, "finished_at": "2026-10-10T09:00:00Z", "review_state": "accept", "prs": {"read": true, "open": 0, "merged": 0, "closed_unmerged": 0}},
 {"repo": "hive/t27", "issue": 13, "finished_at": "2026-10-11T13:05:00Z", "review_state": "wait", "owned_paths": ["c.rs"]},
 {"repo": "hive/t27", "issue": 14, "finished_at": "2026-10-11T06:15:00Z", "review_state": null},
 {"repo": "hive/t27", "issue": 15, "finished_at": "2026-10-11T12:45:00Z", "review_state": "escalate", "criteria": ["builds"]},
 {"repo": "other/repo", "issue": 1, "finished_at": "2026-10-11T12:45:00Z", "review_state": "obsolete", "prs": null}
]}`

func sp(s string) *string { return &s }

var handViews = []Line{
	// Not finished: working, holds its files.
	{Repo: "hive/t27", Issue: 1, Claim: "running", ClaimsIssue: true, Live: true, Stage: "working", HoldsFiles: true},
	// Send-back 1 of 2, idle 45m: claim_of holds it (rejected) but it is under the ceiling: free.
	{Repo: "hive/t27", Issue: 2, Claim: "rejected", Stage: "done", SendBackClaim: sp("free")},
	// At the ceiling, idle 90m >= 60: the valve releases (failed); live, files held until 120m.
	{Repo: "hive/t27", Issue: 3, Claim: "failed", Live: true, Stage: "send_back", HoldsFiles: true, SendBackClaim: sp("live")},
	// Under the ceiling (missing ceiling reads 2), idle 61m: claim_of already failed it; free.
	{Repo: "hive/t27", Issue: 4, Claim: "failed", Stage: "done", SendBackClaim: sp("free")},
	// null ceiling reads 2; 59m59s is 59 whole minutes: still held, rejected and live.
	{Repo: "hive/t27", Issue: 5, Claim: "rejected", ClaimsIssue: true, Live: true, Stage: "send_back", HoldsFiles: true, SendBackClaim: sp("live")},
	// Ceiling 0: never under it, so send_back_claim leaves it to the valve.
	{Repo: "hive/t27", Issue: 6, Claim: "rejected", ClaimsIssue: true, Live: true, Stage: "send_back", HoldsFiles: true, SendBackClaim: sp("live")},
	// Only closed-unmerged PRs: free.
	{Repo: "hive/t27", Issue: 7, Claim: "accepted", Stage: "done", AcceptClaim: sp("free")},
	// PRs never read, or read false: live.
	{Repo: "hive/t27", Issue: 8, Claim: "accepted", ClaimsIssue: true, Live: true, Stage: "done", AcceptClaim: sp("live")},
	{Repo: "hive/t27", Issue: 9, Claim: "accepted", ClaimsIssue: true, Live: true, Stage: "done", AcceptClaim: sp("live")},
	// Open, merged, or no PR: live.
	{Repo: "hive/t27", Issue: 10, Claim: "accepted", ClaimsIssue: true, Live: true, Stage: "done", AcceptClaim: sp("live")},
	{Repo: "hive/t27", Issue: 11, Claim: "accepted", ClaimsIssue: true, Live: true, Stage: "done", AcceptClaim: sp("live")},
	{Repo: "hive/t27", Issue: 12, Claim: "accepted", ClaimsIssue: true, Live: true, Stage: "done", AcceptClaim: sp("live")},
	// Finished in the future: 0 minutes, awaiting, files held.
	{Repo: "hive/t27", Issue: 13, Claim: "awaitingReview", ClaimsIssue: true, Live: true, Stage: "awaiting", HoldsFiles: true},
	// No verdict for 400m >= 360, under the ceiling: failed; files gone after 30m.
	{Repo: "hive/t27", Issue: 14, Claim: "failed", Live: true, Stage: "awaiting"},
	// Escalated 10m ago: the valve holds the issue 30m; escalations hold no files.
	{Repo: "hive/t27", Issue: 15, Claim: "awaitingReview", ClaimsIssue: true, Live: true, Stage: "escalated"},
	{Repo: "other/repo", Issue: 1, Claim: "cancelled", Live: true, Stage: "done"},
}

func TestHandBuilt(t *testing.T) {
	s, err := Parse([]byte(handBuilt))
	if err != nil {
		t.Fatal(err)
	}
	rep := Evaluate(s)
	if len(rep.Rows) != len(handViews) {
		t.Fatalf("%d rows, want %d", len(rep.Rows), len(handViews))
	}
	for i, want := range handViews {
		if got := rep.Rows[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("row %d %s#%d:\n got %+v sb=%s acc=%s\nwant %+v sb=%s acc=%s", i, want.Repo, want.Issue,
				got, word(got.SendBackClaim), word(got.AcceptClaim), want, word(want.SendBackClaim), word(want.AcceptClaim))
		}
	}
	want := Summary{
		Claims:        ClaimCounts{Running: 1, Accepted: 6, Rejected: 3, AwaitingReview: 2, Failed: 3, Cancelled: 1},
		SendBackClaim: SendBackSummary{Rows: 5, Free: 2, Live: 3},
		AcceptClaim:   AcceptSummary{Rows: 6, Free: 1, Live: 5, OpenPR: 1, MergedPR: 1, NoPR: 1, Unread: 2},
	}
	if rep.Summary != want {
		t.Errorf("summary = %+v\nwant      %+v", rep.Summary, want)
	}
	checkSummary(t, rep)
}

func TestEmptyRows(t *testing.T) {
	s, err := Parse([]byte(`{"taken_at": "2026-10-11T14:55:00+02:00", "rows": []}`))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, Evaluate(s)); err != nil {
		t.Fatal(err)
	}
	var out struct {
		TakenAt string            `json:"taken_at"`
		Rows    []json.RawMessage `json:"rows"`
		Summary map[string]map[string]int
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b.String())
	}
	if out.TakenAt != "2026-10-11T12:55:00Z" || out.Rows == nil || len(out.Rows) != 0 {
		t.Errorf("taken_at %q, rows %v; want the UTC clock and []", out.TakenAt, out.Rows)
	}
	if len(out.Summary["claims"]) != 6 || len(out.Summary["accept_claim"]) != 7 || len(out.Summary["send_back_claim"]) != 3 {
		t.Errorf("summary lost its zero counts: %v", out.Summary)
	}
}

// jsonKeys lists an object's keys in the order they appear.
func jsonKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestWriteJSON(t *testing.T) {
	s, _ := Parse([]byte(handBuilt))
	var b bytes.Buffer
	if err := WriteJSON(&b, Evaluate(s)); err != nil {
		t.Fatal(err)
	}
	if got := jsonKeys(t, b.Bytes()); !reflect.DeepEqual(got, []string{"taken_at", "rows", "summary"}) {
		t.Errorf("top-level keys %v", got)
	}
	var out struct {
		TakenAt string            `json:"taken_at"`
		Rows    []json.RawMessage `json:"rows"`
		Summary struct {
			Claims        json.RawMessage `json:"claims"`
			SendBackClaim json.RawMessage `json:"send_back_claim"`
			AcceptClaim   json.RawMessage `json:"accept_claim"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	rowKeys := []string{"repo", "issue", "claim", "claims_issue", "live", "stage", "holds_files", "send_back_claim", "accept_claim"}
	for i, raw := range out.Rows {
		if got := jsonKeys(t, raw); !reflect.DeepEqual(got, rowKeys) {
			t.Fatalf("row %d keys %v, want %v", i, got, rowKeys)
		}
	}
	if !strings.Contains(string(out.Rows[1]), `"send_back_claim":"free","accept_claim":null`) {
		t.Errorf("row 1 = %s, want send_back_claim free and accept_claim null", out.Rows[1])
	}
	for name, c := range map[string]struct {
		raw  json.RawMessage
		keys []string
	}{
		"claims":          {out.Summary.Claims, []string{"running", "accepted", "rejected", "awaitingReview", "failed", "cancelled"}},
		"send_back_claim": {out.Summary.SendBackClaim, []string{"rows", "free", "live"}},
		"accept_claim":    {out.Summary.AcceptClaim, []string{"rows", "free", "live", "open_pr", "merged_pr", "no_pr", "unread"}},
	} {
		if got := jsonKeys(t, c.raw); !reflect.DeepEqual(got, c.keys) {
			t.Errorf("summary.%s keys %v, want %v", name, got, c.keys)
		}
	}
	var acc map[string]int
	json.Unmarshal(out.Summary.AcceptClaim, &acc)
	if want := map[string]int{"rows": 6, "free": 1, "live": 5, "open_pr": 1, "merged_pr": 1, "no_pr": 1, "unread": 2}; !reflect.DeepEqual(acc, want) {
		t.Errorf("accept_claim %v, want %v", acc, want)
	}
}

func TestWriteTable(t *testing.T) {
	s, _ := Parse([]byte(handBuilt))
	var b bytes.Buffer
	if err := WriteTable(&b, Evaluate(s)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	header := lines[0]
	for _, col := range []string{"ROW", "CLAIM", "CLAIMS_ISSUE", "LIVE", "STAGE", "HOLDS_FILES", "SEND_BACK_CLAIM", "ACCEPT_CLAIM"} {
		if !strings.Contains(header, col) {
			t.Errorf("header %q lacks %s", header, col)
		}
	}
	// Aligned: every column starts where its header does.
	col := strings.Index(header, "SEND_BACK_CLAIM")
	if got := strings.Fields(lines[2][col:])[0]; got != "free" {
		t.Errorf("row hive/t27#2 shows send_back_claim %q under its header, want free:\n%s\n%s", got, header, lines[2])
	}
	if got := strings.Fields(lines[1]); !reflect.DeepEqual(got, []string{"hive/t27#1", "running", "true", "true", "working", "true", "-", "-"}) {
		t.Errorf("row 0 = %q", got)
	}
	for _, want := range []string{
		"claims: running 1, accepted 6, rejected 3, awaitingReview 2, failed 3, cancelled 1\n",
		"send_back_claim: 5 rows, 2 free, 3 live\n",
		"accept_claim: 6 rows, 1 free, 5 live (open_pr 1, merged_pr 1, no_pr 1, unread 2)\n",
		"claims_issue: 10 rows; holds_files: 5 rows\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseRefuses(t *testing.T) {
	row := func(fields string) string {
		return `{"taken_at": "2026-10-11T12:55:00Z", "rows": [{"repo": "hive/t27", "issue": 1}, ` + fields + `]}`
	}
	cases := []struct {
		name, in, want string
		row            int
		field          string
	}{
		{"not JSON", `{"taken_at": `, "not a JSON object: unexpected EOF", -1, ""},
		{"not an object", `[1]`, "not a JSON object: json: cannot unmarshal array*", -1, ""},
		{"trailing data", `{"taken_at": "2026-10-11T12:55:00Z", "rows": []} {}`, "not a JSON object: data after the object", -1, ""},
		{"missing taken_at", `{"rows": []}`, "taken_at: required", -1, "taken_at"},
		{"bad taken_at", `{"taken_at": "yesterday", "rows": []}`, `taken_at: "yesterday" is not an RFC 3339 date`, -1, "taken_at"},
		{"taken_at past year 9999 in UTC", `{"taken_at": "9999-12-31T23:59:59-01:00", "rows": []}`, `taken_at: "9999-12-31T23:59:59-01:00" is outside the years 0000 to 9999 in UTC`, -1, "taken_at"},
		{"taken_at number", `{"taken_at": 5, "rows": []}`, `taken_at: must be an RFC 3339 date (got 5)`, -1, "taken_at"},
		{"missing rows", `{"taken_at": "2026-10-11T12:55:00Z"}`, "rows: required", -1, "rows"},
		{"rows object", `{"taken_at": "2026-10-11T12:55:00Z", "rows": {}}`, "rows: must be an array of rows", -1, "rows"},
		{"rows null", `{"taken_at": "2026-10-11T12:55:00Z", "rows": null}`, "rows: must be an array of rows", -1, "rows"},
		{"top-level typo", `{"taken_at": "2026-10-11T12:55:00Z", "row": []}`, "row: unknown field", -1, "row"},
		{"row not object", row(`7`), "row 1: must be a JSON object", 1, ""},
		{"missing repo", row(`{"issue": 9}`), "row 1: repo: required", 1, "repo"},
		{"repo not owner/name", row(`{"repo": "t27", "issue": 9}`), `row 1: repo: must be "owner/name" (got "t27")`, 1, "repo"},
		{"repo number", row(`{"repo": 27, "issue": 9}`), `row 1: repo: must be "owner/name" (got 27)`, 1, "repo"},
		{"missing issue", row(`{"repo": "hive/t27"}`), "row 1 (hive/t27): issue: required", 1, "issue"},
		{"issue zero", row(`{"repo": "hive/t27", "issue": 0}`), "row 1 (hive/t27): issue: must be a positive whole number (got 0)", 1, "issue"},
		{"issue fraction", row(`{"repo": "hive/t27", "issue": 9.5}`), "row 1 (hive/t27): issue: must be a positive whole number (got 9.5)", 1, "issue"},
		{"issue string", row(`{"repo": "hive/t27", "issue": "9"}`), `row 1 (hive/t27): issue: must be a positive whole number (got "9")`, 1, "issue"},
		{"repeated", row(`{"repo": "hive/t27", "issue": 1}`), "row 1 (hive/t27#1): issue: repeats row 0 (same repo and issue)", 1, "issue"},
		{"repeated other case", row(`{"repo": "Hive/T27", "issue": 1}`), "row 1 (Hive/T27#1): issue: repeats row 0 (same repo and issue)", 1, "issue"},
		{"bad date", row(`{"repo": "hive/t27", "issue": 9, "finished_at": "2026-10-11 12:00"}`), `row 1 (hive/t27#9): finished_at: "2026-10-11 12:00" is not an RFC 3339 date`, 1, "finished_at"},
		{"negative counter", row(`{"repo": "hive/t27", "issue": 9111, "send_backs": -1}`), "row 1 (hive/t27#9111): send_backs: must not be negative (got -1)", 1, "send_backs"},
		{"fractional counter", row(`{"repo": "hive/t27", "issue": 9, "ceiling": 1.5}`), "row 1 (hive/t27#9): ceiling: must be a whole number (got 1.5)", 1, "ceiling"},
		{"non-string review_state", row(`{"repo": "hive/t27", "issue": 9, "review_state": 1}`), "row 1 (hive/t27#9): review_state: must be a string or null", 1, "review_state"},
		{"unknown field", row(`{"repo": "hive/t27", "issue": 9, "send_back": 1}`), "row 1 (hive/t27#9): send_back: unknown field", 1, "send_back"},
		{"odd field name", row(`{"repo": "hive/t27", "issue": 9, "a\nb": 1}`), `row 1 (hive/t27#9): "a\nb": unknown field`, 1, `"a\nb"`},
		{"recorded field", row(`{"repo": "hive/t27", "issue": 9, "freed": null}`), "row 1 (hive/t27#9): freed: unknown field", 1, "freed"},
		{"bad owned path", row(`{"repo": "hive/t27", "issue": 9, "owned_paths": ["a", 3]}`), "row 1 (hive/t27#9): owned_paths[1]: must be a non-empty string", 1, "owned_paths[1]"},
		{"prs not object", row(`{"repo": "hive/t27", "issue": 9, "prs": true}`), "row 1 (hive/t27#9): prs: must be an object or null", 1, "prs"},
		{"prs negative", row(`{"repo": "hive/t27", "issue": 9, "prs": {"read": true, "open": -2}}`), "row 1 (hive/t27#9): prs.open: must not be negative (got -2)", 1, "prs.open"},
		{"prs fraction", row(`{"repo": "hive/t27", "issue": 9, "prs": {"read": true, "closed_unmerged": 0.5}}`), "row 1 (hive/t27#9): prs.closed_unmerged: must be a whole number (got 0.5)", 1, "prs.closed_unmerged"},
		{"prs read string", row(`{"repo": "hive/t27", "issue": 9, "prs": {"read": "yes"}}`), "row 1 (hive/t27#9): prs.read: must be true, false or null", 1, "prs.read"},
		{"prs unknown", row(`{"repo": "hive/t27", "issue": 9, "prs": {"read": true, "opened": 1}}`), "row 1 (hive/t27#9): prs.opened: unknown field", 1, "prs.opened"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.in))
			if err == nil {
				t.Fatalf("Parse accepted %s", c.in)
			}
			if want, prefix := strings.CutSuffix(c.want, "*"); err.Error() != c.want && !(prefix && strings.HasPrefix(err.Error(), want)) {
				t.Errorf("error %q\n want %q", err, c.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Row != c.row || e.Field != c.field {
				t.Errorf("error %#v, want row %d field %q", err, c.row, c.field)
			}
		})
	}
}

// FuzzParse: no input panics, and a refusal is always one line.
func FuzzParse(f *testing.F) {
	f.Add([]byte(handBuilt))
	f.Add([]byte(`{"taken_at": "2026-10-11T12:55:00Z", "rows": [{"repo": "a/b", "issue": 1, "x\u2028\r": 1}]}`))
	f.Add([]byte(`{"taken_at": "2026-10-11T12:55:00Z", "rows": [{"repo": "a/b", "issue": 1, "prs": {"read": true, "numbers": [1, 2]}}]}`))
	f.Add([]byte(`{"taken_at": "2026-10-11T12:55:00Z", "rows": [{"repo": "a/b", "issue": 1, "send_backs": 1e300}]}`))
	f.Add([]byte(`{"taken_at": "0001-01-01T00:00:00Z", "rows": [{"repo": "a/b", "issue": 1, "finished_at": "9999-12-31T23:59:59Z", "review_state": "sendBack"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		rep := Evaluate(s)
		if err := WriteJSON(&bytes.Buffer{}, rep); err != nil {
			t.Fatal(err)
		}
		if err := WriteTable(&bytes.Buffer{}, rep); err != nil {
			t.Fatal(err)
		}
	})
}
