package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// demoRows runs the built queenctl demo with nothing but PATH and HOME set
// and returns the table's lines by row, and the whole stdout.
func demoRows(t *testing.T, args ...string) (map[string][]string, string) {
	t.Helper()
	code, out, errOut := run(t, filepath.Join(bin, "queenctl"), append([]string{"demo"}, args...)...)
	if code != 0 || errOut != "" {
		t.Fatalf("queenctl demo %v: exit %d, stderr %q\n%s", args, code, errOut, out)
	}
	if !strings.Contains(out, "GitHub and the Queen's export are a local SANDBOX") {
		t.Errorf("the output does not say that GitHub and the export are a sandbox:\n%s", out)
	}
	// A row is two lines: its facts, then its scenario and outcome.
	rows := map[string][]string{}
	inTable, last := false, ""
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "ROW":
			inTable = true
		case inTable && len(f) > 0 && strings.HasPrefix(f[0], "hive/t27#"):
			rows[f[0]], last = f, f[0]
		case inTable && last != "" && strings.HasPrefix(l, "    "):
			rows[last] = append(rows[last], f...)
			last = ""
		case inTable && len(f) == 0 && len(rows) > 0:
			inTable = false
		}
		if inTable && len(l) > 120 {
			t.Errorf("the demo's table is %d columns wide, past 120:\n%s", len(l), l)
		}
	}
	if len(rows) != 10 {
		t.Fatalf("the table has %d rows, want 10:\n%s", len(rows), out)
	}
	return rows, out
}

// has reports whether a table line holds every one of want as a whole
// field (the scenario column has spaces, so cells are found by value).
func has(f []string, want ...string) bool {
	line := " " + strings.Join(f, " ") + " "
	for _, w := range want {
		if !strings.Contains(line, " "+w+" ") {
			return false
		}
	}
	return true
}

var tookCell = regexp.MustCompile(` closed [0-9]+\.[0-9]s `)

// The demo plays the measured jams through the real binaries' code and
// checks its own outcomes; here they are checked again from what it printed.
func TestDemoFreesPushesAndKeeps(t *testing.T) {
	t.Parallel()
	rows, out := demoRows(t)
	for row, want := range map[string][]string{
		"hive/t27#9111": {"rejected", "false", "done", "ok:", "freed", "by", "send_back_claim"},
		"hive/t27#9112": {"rejected", "true", "send_back", "bootstrap/src/pass9112.rs", "ok:", "kept"},
		"hive/t27#9120": {"accepted", "false", "done", "closed", "ok:", "freed", "accept_claim"},
		"hive/t27#9121": {"accepted", "true", "merged", "ok:", "kept", "(merged"},
		"hive/t27#9122": {"accepted", "true", "open", "ok:", "kept", "(open"},
		"hive/t27#9123": {"accepted", "true", "ok:", "kept", "(no"},
		"hive/t27#9124": {"accepted", "true", "closed", "ok:", "kept", "(PRs", "unread,"},
		"hive/t27#9130": {"accepted", "true", "pr_opened", "open", "ok:", "pushed"},
		"hive/t27#9131": {"accepted", "true", "pr_opened", "open", "ok:", "pushed"},
		"hive/t27#9132": {"accepted", "true", "pr_opened", "open", "ok:", "pushed"},
	} {
		if !has(rows[row], want...) {
			t.Errorf("%s: %q, want %v", row, strings.Join(rows[row], " "), want)
		}
	}
	if !tookCell.MatchString(strings.Join(rows["hive/t27#9120"], " ")) {
		t.Errorf("hive/t27#9120: no time from its webhook to its free: %q", strings.Join(rows["hive/t27#9120"], " "))
	}
	for _, want := range []string{
		"signed pull_request webhook", "hive/t27#9120 FREED by accept_claim", "export: back up",
		"Every expected outcome happened: 2 claims freed, 3 accepted heads pushed with their PRs",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

// Shadow mode: the same decisions, recorded as would_free; nothing freed.
func TestDemoShadowModeFreesNothing(t *testing.T) {
	t.Parallel()
	rows, out := demoRows(t, "--flags=off")
	for row, f := range rows {
		if !has(f, "true", "ok:") {
			t.Errorf("%s: %q; with the flags off every row stays live", row, strings.Join(f, " "))
		}
	}
	for _, row := range []string{"hive/t27#9111", "hive/t27#9120"} {
		if !has(rows[row], "would_free") {
			t.Errorf("%s: %q, want would_free recorded", row, strings.Join(rows[row], " "))
		}
	}
	if !strings.Contains(out, "Every expected outcome happened: 2 would_free recorded, nothing freed") || strings.Contains(out, "FREED") {
		t.Errorf("shadow mode output:\n%s", out)
	}
}

// `queenctl demo --keep` prints a ready environment: with its export lines
// as they are, queenctl doctor passes, and claims list, explain and claims
// watch (its Try: hints) answer from the running demo.
func TestDemoKeepPrintsAReadyEnvironment(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(filepath.Join(bin, "queenctl"), "demo", "--keep")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var printed, hints []string
	deadline := time.After(frLimit)
	for tried := false; !tried; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("queenctl demo --keep ended:\n%s", strings.Join(printed, "\n"))
			}
			printed = append(printed, l)
			if kv, ok := strings.CutPrefix(l, "  export "); ok && strings.Contains(kv, "=") {
				k, v, _ := strings.Cut(kv, "=")
				env = append(env, k+"="+strings.Trim(v, "'"))
			}
			if h, ok := strings.CutPrefix(l, "  go run ./cmd/queenctl "); ok {
				hints = append(hints, h)
			}
			tried = strings.HasPrefix(l, "  curl ")
		case <-deadline:
			t.Fatalf("no Try: hints within %s:\n%s", frLimit, strings.Join(printed, "\n"))
		}
	}
	want := map[string]bool{"doctor": false, "claims list": false, "explain": false, "claims watch": false}
	for _, h := range hints {
		args := strings.Fields(h)
		name := args[0]
		if args[0] == "claims" {
			name += " " + args[1]
		}
		if _, ok := want[name]; !ok {
			continue
		}
		want[name] = true
		if name == "claims watch" {
			args = append(args, "--after", "0-0") // an answer at once: a change, or a reset
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c := exec.CommandContext(ctx, filepath.Join(bin, "queenctl"), args...)
		c.Env = env
		var out, errb bytes.Buffer
		c.Stderr = &errb
		if name != "claims watch" {
			c.Stdout = &out
		} else {
			pipe, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			first, _ := bufio.NewReader(pipe).ReadString('\n') // ends when the context does
			_ = c.Process.Kill()
			_ = c.Wait()
			cancel()
			if !strings.Contains(first, "hive/t27#") && !strings.HasPrefix(first, "reset: ") {
				t.Errorf("queenctl %s with the demo's exports printed no change: %q %s", h, first, errb.String())
			}
			continue
		}
		err := c.Run()
		cancel()
		if err != nil || !strings.Contains(out.String(), "hive/t27") && name != "doctor" {
			t.Errorf("queenctl %s with the demo's exports: %v\n%s%s", h, err, out.String(), errb.String())
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("the demo's Try: hints lack queenctl %s:\n%s", name, strings.Join(printed, "\n"))
		}
	}
}
