package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/testkit"
)

// readme is the operator's documents as one text (testkit.OperatorDocs).
func readme(t *testing.T) string { return testkit.OperatorDocs(t, "..") }

// demoExcerpt is the README's excerpt of `queenctl demo`: the code block
// after "An excerpt:".
func demoExcerpt(t *testing.T) []string {
	t.Helper()
	text := readme(t)
	i := strings.Index(text, "An excerpt:\n\n```\n")
	if i < 0 {
		t.Fatal("README: no demo excerpt (\"An excerpt:\" and a code block)")
	}
	block := text[i+len("An excerpt:\n\n```\n"):]
	end := strings.Index(block, "```")
	if end < 0 {
		t.Fatal("README: the demo excerpt's code block does not end")
	}
	return strings.Split(strings.TrimRight(block[:end], "\n"), "\n")
}

// What changes from one demo run to the next: times, commit and delivery
// ids, the time a read was made, which PR number a push got and after how
// many attempts (the pushes race), and the width of the columns they fill.
var (
	demoClock   = regexp.MustCompile(`\[ *[0-9]+\.[0-9]s\]`)
	demoTook    = regexp.MustCompile(`\b[0-9]+\.[0-9]+m?s\b`)
	demoHex     = regexp.MustCompile(`\b[0-9a-f]{8,40}\b`)
	demoRead    = regexp.MustCompile(`read [0-9TZ:-]+`)
	demoPR      = regexp.MustCompile(`(^|[\s(])#[0-9]+`)
	demoAttempt = regexp.MustCompile(`\(attempt [0-9]+\)`)
	demoSpace   = regexp.MustCompile(`\s+`)
)

func maskDemo(line string) string {
	line = demoClock.ReplaceAllString(line, "[T]")
	line = demoTook.ReplaceAllString(line, "Ns")
	line = demoHex.ReplaceAllString(line, "HEX")
	line = demoRead.ReplaceAllString(line, "read TIME")
	line = demoPR.ReplaceAllString(line, "${1}#N")
	line = demoAttempt.ReplaceAllString(line, "(attempt N)")
	return strings.TrimSpace(demoSpace.ReplaceAllString(line, " "))
}

// The README shows what the demo prints: every line of its excerpt is a
// line the demo prints now, but for the times and ids that change from run
// to run (a line ending in "..." is the start of one).
func TestReadmeDemoExcerptIsWhatTheDemoPrints(t *testing.T) {
	t.Parallel()
	_, out := demoRows(t)
	var printed []string
	for _, l := range strings.Split(out, "\n") {
		printed = append(printed, maskDemo(l))
	}
	checked := 0
	for _, l := range demoExcerpt(t) {
		want := maskDemo(l)
		if want == "" || want == "..." {
			continue
		}
		prefix, cut := strings.CutSuffix(want, " ...")
		found := false
		for _, p := range printed {
			if p == want || cut && strings.HasPrefix(p, prefix) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README's demo excerpt shows a line the demo does not print:\n%s\n(the demo printed:\n%s)", l, out)
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("checked only %d lines of the excerpt", checked)
	}
}

// The README's "Connect the Queen" step imports the Queen's rows through a
// container whose root filesystem is read-only: queenctl reads the dump from
// /dev/stdin, which kubectl exec -i (or compose exec -T) feeds. Run the
// README's own arguments against a running webhook, twice.
func TestReadmeConnectImportsTheDumpFromStdin(t *testing.T) {
	t.Parallel()
	var args []string
	for _, l := range strings.Split(readme(t), "\n") {
		if i := strings.Index(l, "queenctl claims import /dev/stdin"); i >= 0 && strings.Contains(l, "<") {
			cmd := strings.TrimSpace(l[i+len("queenctl ") : strings.Index(l, "<")])
			args = strings.Fields(strings.ReplaceAll(cmd, "OWNER/NAME", repo))
			break
		}
	}
	if len(args) == 0 {
		t.Fatal("README: no `queenctl claims import /dev/stdin ... < rows.jsonl` step")
	}
	s := newStack(t, nil)
	s.webhook()

	// Two rows of the Queen's queen_dispatch table, as its database dumps
	// them: no repository, and columns queen-app does not keep.
	dump := `{"issue": 9201, "branch": "queen-9201", "started": true, "dispatched_at": "2026-10-11T10:02:00Z", "finished_at": "2026-10-11T12:20:00Z", "review_state": "sendBack", "send_backs": 1, "owned_paths": ["bootstrap/src/a.rs"], "conversation_id": "c-1", "outcome": null}
{"issue": 9202, "branch": "queen-9202", "started": true, "dispatched_at": "2026-10-11T10:05:00Z", "finished_at": "2026-10-11T11:00:00Z", "review_state": "accept", "judged_head": "4ba506f7a3274ba506f7a3274ba506f7a3274ba5", "conversation_id": "c-2", "outcome": "done"}
`
	importOnce := func() string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "queenctl"), args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
			"QUEEN_API_URL=" + s.apiURL, "QUEEN_API_TOKEN=" + apiToken}
		cmd.Stdin = strings.NewReader(dump)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("queenctl %v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}
	first := importOnce()
	for _, want := range []string{
		"line 1 hive/t27#9201: ", "line 2 hive/t27#9202: created",
		"ignored columns: conversation_id, outcome",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first import lacks %q:\n%s", want, first)
		}
	}
	var v struct {
		Claim string `json:"claim"`
	}
	if code := apiJSON(t, "GET", s.apiURL+"/v1/repos/"+repo+"/claims/9202", apiToken, nil, &v); code != 200 || v.Claim != "accepted" {
		t.Errorf("GET claim 9202 after the import: %d %q, want 200 accepted", code, v.Claim)
	}
	if again := importOnce(); !strings.Contains(again, "imported: 2 unchanged") {
		t.Errorf("a second import is not a no-op:\n%s", again)
	}
}
