package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const snapshot = "../../testdata/replay/2026-10-11.json"

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

type replayOut struct {
	TakenAt string `json:"taken_at"`
	Rows    []struct {
		Repo          string  `json:"repo"`
		Issue         int64   `json:"issue"`
		Claim         string  `json:"claim"`
		ClaimsIssue   bool    `json:"claims_issue"`
		Live          bool    `json:"live"`
		SendBackClaim *string `json:"send_back_claim"`
		AcceptClaim   *string `json:"accept_claim"`
	} `json:"rows"`
	Summary map[string]map[string]int `json:"summary"`
}

// checkShipped holds the --json output on the shipped snapshot to the
// measured jams.
func checkShipped(t *testing.T, stdout string) {
	t.Helper()
	var out replayOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("--json output is not JSON: %v", err)
	}
	if out.TakenAt != "2026-10-11T12:55:00Z" || len(out.Rows) != 463 {
		t.Fatalf("taken_at %s, %d rows", out.TakenAt, len(out.Rows))
	}
	var claimed, still, sendBackFree, acceptFree int
	for _, r := range out.Rows {
		if r.Claim == "running" || r.Claim == "rejected" || r.Claim == "awaitingReview" {
			claimed++
			if r.ClaimsIssue {
				still++
			}
		}
		if r.SendBackClaim != nil && *r.SendBackClaim == "free" {
			sendBackFree++
		}
		if r.AcceptClaim != nil && *r.AcceptClaim == "free" {
			acceptFree++
		}
	}
	if claimed != 89 || still != 81 || sendBackFree != 8 || acceptFree != 2 {
		t.Errorf("claimed %d, still claiming %d, send_back_claim frees %d, accept_claim frees %d; want 89, 81, 8, 2",
			claimed, still, sendBackFree, acceptFree)
	}
	want := map[string]map[string]int{
		"claims":          {"running": 40, "accepted": 338, "rejected": 9, "awaitingReview": 40, "failed": 36, "cancelled": 0},
		"send_back_claim": {"rows": 9, "free": 8, "live": 1},
		"accept_claim":    {"rows": 338, "free": 2, "live": 336, "open_pr": 121, "merged_pr": 2, "no_pr": 213, "unread": 0},
	}
	if !reflect.DeepEqual(out.Summary, want) {
		t.Errorf("summary %v\nwant    %v", out.Summary, want)
	}
}

func TestReplayJSONFlagAnywhere(t *testing.T) {
	var outputs []string
	for _, args := range [][]string{
		{"replay", "--json", snapshot},
		{"replay", snapshot, "--json"},
		{"replay", "-json", snapshot},
		{"replay", "--json=true", "--", snapshot},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		outputs = append(outputs, stdout)
	}
	checkShipped(t, outputs[0])
	for i, o := range outputs[1:] {
		if o != outputs[0] {
			t.Errorf("output %d differs from the output with --json first", i+1)
		}
	}
}

func TestReplayTable(t *testing.T) {
	code, stdout, stderr := runCLI("replay", snapshot)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "ROW ") || len(lines) < 1+463+5 {
		t.Fatalf("want a header, 463 rows and the summary; got %d lines starting %q", len(lines), lines[0])
	}
	for _, want := range []string{
		"claims: running 40, accepted 338, rejected 9, awaitingReview 40, failed 36, cancelled 0",
		"send_back_claim: 9 rows, 8 free, 1 live",
		"accept_claim: 338 rows, 2 free, 336 live (open_pr 121, merged_pr 2, no_pr 213, unread 0)",
	} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("table lacks the summary line %q", want)
		}
	}
	var freed int
	for _, l := range lines[1 : 1+463] {
		f := strings.Fields(l)
		if len(f) != 8 || !strings.HasPrefix(f[0], "gHashTag/t27#") {
			t.Fatalf("row line %q", l)
		}
		if f[1] == "rejected" && f[6] == "free" && f[2] == "false" {
			freed++
		}
	}
	if freed != 8 {
		t.Errorf("%d rejected rows freed by send_back_claim in the table, want 8", freed)
	}
}

func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	rows := func(r string) string {
		return `{"taken_at": "2026-10-11T12:55:00Z", "rows": [{"repo": "hive/t27", "issue": 1}, {"repo": "hive/t27", "issue": 2}, {"repo": "hive/t27", "issue": 3}, ` + r + `]}`
	}
	cases := []struct{ name, in, want string }{
		{"notjson", `taken_at: today`, "not a JSON object"},
		{"no-taken-at", `{"rows": []}`, "taken_at: required"},
		{"bad-taken-at", `{"taken_at": "12:55", "rows": []}`, `taken_at: "12:55" is not an RFC 3339 date`},
		{"rows-string", `{"taken_at": "2026-10-11T12:55:00Z", "rows": "all"}`, "rows: must be an array of rows"},
		{"no-repo", rows(`{"issue": 5}`), "row 3: repo: required"},
		{"no-issue", rows(`{"repo": "hive/t27"}`), "row 3 (hive/t27): issue: required"},
		{"bad-repo", rows(`{"repo": "hive", "issue": 5}`), `row 3: repo: must be "owner/name" (got "hive")`},
		{"issue-negative", rows(`{"repo": "hive/t27", "issue": -5}`), "row 3 (hive/t27): issue: must be a positive whole number (got -5)"},
		{"repeat", rows(`{"repo": "hive/t27", "issue": 2}`), "row 3 (hive/t27#2): issue: repeats row 1"},
		{"bad-date", rows(`{"repo": "hive/t27", "issue": 9111, "dispatched_at": "10/11/2026"}`), `row 3 (hive/t27#9111): dispatched_at: "10/11/2026" is not an RFC 3339 date`},
		{"negative", rows(`{"repo": "hive/t27", "issue": 9111, "send_backs": -1}`), "row 3 (hive/t27#9111): send_backs: must not be negative (got -1)"},
		{"review-state", rows(`{"repo": "hive/t27", "issue": 9111, "review_state": ["accept"]}`), "row 3 (hive/t27#9111): review_state: must be a string or null"},
		{"prs", rows(`{"repo": "hive/t27", "issue": 9111, "prs": {"read": true, "merged": 1.5}}`), "row 3 (hive/t27#9111): prs.merged: must be a whole number (got 1.5)"},
		{"typo", rows(`{"repo": "hive/t27", "issue": 9111, "finshed_at": null}`), "row 3 (hive/t27#9111): finshed_at: unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".json")
			if err := os.WriteFile(path, []byte(c.in), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"replay", path}, {"replay", "--json", path}} {
				code, stdout, stderr := runCLI(args...)
				if code != 1 || stdout != "" {
					t.Errorf("%v: exit %d, stdout %q; want 1 and nothing", args, code, stdout)
				}
				prefix := "queenctl: replay " + path + ": " + c.want
				if !strings.HasPrefix(stderr, prefix) || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
					t.Errorf("stderr %q\nwant one line starting %q", stderr, prefix)
				}
			}
		})
	}
	code, _, stderr := runCLI("replay", filepath.Join(dir, "missing.json"))
	if code != 1 || !strings.Contains(stderr, "missing.json") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args    []string
		code    int
		stdout  string // a substring, "" for none
		stderr  string
		oneLine bool
	}{
		{args: nil, code: 2, stderr: "usage: queenctl COMMAND"},
		{args: []string{"--help"}, code: 0, stdout: "replay"},
		{args: []string{"reply"}, code: 2, stderr: `queenctl: unknown command "reply"`, oneLine: true},
		{args: []string{"replay"}, code: 2, stderr: "queenctl: replay: want exactly one FILE (usage: queenctl replay FILE [--json])", oneLine: true},
		{args: []string{"replay", "a.json", "b.json"}, code: 2, stderr: "want exactly one FILE", oneLine: true},
		{args: []string{"replay", snapshot, "--yaml"}, code: 2, stderr: "queenctl: replay: flag provided but not defined: -yaml", oneLine: true},
		{args: []string{"replay", "--json=maybe", snapshot}, code: 2, stderr: "invalid boolean value", oneLine: true},
		{args: []string{"replay", "-h"}, code: 0, stdout: "usage: queenctl replay FILE [--json]"},
		{args: []string{"replay", snapshot, "--help"}, code: 0, stdout: "-json"},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, c.code, stderr)
		}
		if c.stdout != "" && !strings.Contains(stdout, c.stdout) {
			t.Errorf("%v: stdout %q lacks %q", c.args, stdout, c.stdout)
		}
		if c.stdout != "" && stderr != "" {
			t.Errorf("%v: help wrote to stderr: %q", c.args, stderr)
		}
		if c.stderr != "" && (!strings.Contains(stderr, c.stderr) || stdout != "") {
			t.Errorf("%v: stderr %q lacks %q, or stdout %q not empty", c.args, stderr, c.stderr, stdout)
		}
		if c.oneLine && strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: stderr is not one line: %q", c.args, stderr)
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  []string
		json bool
	}{
		{[]string{"a", "--json", "b"}, []string{"a", "b"}, true},
		{[]string{"--json", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "b"}, []string{"a", "b"}, false},
		{[]string{"a", "--", "--json", "b"}, []string{"a", "--json", "b"}, false},
		{[]string{"-", "--json"}, []string{"-"}, true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		j := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, c.args)
		if err != nil || !reflect.DeepEqual(pos, c.pos) || *j != c.json {
			t.Errorf("parseArgs(%q) = %q, json=%t, %v; want %q, json=%t", c.args, pos, *j, err, c.pos, c.json)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if _, err := parseArgs(fs, []string{"a", "--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help after a positional: %v, want flag.ErrHelp", err)
	}
}

// buildQueenctl builds this package's binary into a test directory and
// returns its path, for the tests that run it as a process.
func buildQueenctl(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "queenctl")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// The built binary, run as a process on the shipped snapshot.
func TestBinary(t *testing.T) {
	bin := buildQueenctl(t)

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "replay", snapshot, "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() != 0 {
		t.Fatalf("queenctl replay --json: %v, stderr %q", err, stderr.String())
	}
	checkShipped(t, stdout.String())

	out, err := exec.Command(bin, "replay", snapshot).Output()
	if err != nil || !strings.Contains(string(out), "accept_claim: 338 rows, 2 free, 336 live") {
		t.Errorf("queenctl replay (table): %v, summary missing", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"taken_at": "2026-10-11T12:55:00Z", "rows": [{"repo": "hive/t27", "issue": 9111, "send_backs": -1}]}`), 0o644)
	stderr.Reset()
	cmd = exec.Command(bin, "replay", bad)
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("bad snapshot: %v, want exit status 1", err)
	}
	if want := "queenctl: replay " + bad + ": row 0 (hive/t27#9111): send_backs: must not be negative (got -1)\n"; stderr.String() != want {
		t.Errorf("stderr %q\nwant   %q", stderr.String(), want)
	}

	err = exec.Command(bin, "replay").Run()
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("no FILE: %v, want exit status 2", err)
	}
}
