package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/redistest"
)

// queenctlRun runs queenctl with args and returns its exit code and output.
func queenctlRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// The ledger verbs on a real Redis: init creates once, status names the
// ledger and the Redis settings, a backup restored into an empty Redis is
// the same ledger, and restore refuses a Redis holding one unless forced.
func TestLedgerInitStatusBackupRestore(t *testing.T) {
	r := redistest.Start(t)
	t.Setenv("QUEEN_REDIS_URL", r.URL())

	code, out, errOut := queenctlRun("ledger", "status")
	if code != 1 || !strings.Contains(out, "none: this Redis is empty") {
		t.Fatalf("status of an empty Redis: exit %d: %s%s; want 1 saying there is no ledger", code, out, errOut)
	}
	code, out, _ = queenctlRun("ledger", "init")
	if code != 0 || !strings.HasPrefix(out, "created ledger ") {
		t.Fatalf("init: exit %d: %s", code, out)
	}
	id := strings.Fields(out)[2]
	if code, out, _ = queenctlRun("ledger", "init"); code != 0 || !strings.Contains(out, id+" exists") {
		t.Fatalf("second init: exit %d: %s; want ledger %s kept", code, out, id)
	}
	code, out, _ = queenctlRun("ledger", "status")
	for _, want := range []string{id, "schema:        3", "rows:          0 in 0 repositories", "maxmemory-policy noeviction", "persistence off"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status: exit %d: %s; want %q", code, out, want)
		}
	}

	file := filepath.Join(t.TempDir(), "queen.jsonl")
	if code, out, errOut = queenctlRun("ledger", "backup", file); code != 0 || !strings.Contains(out, "backed up ledger "+id) {
		t.Fatalf("backup: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut = queenctlRun("ledger", "restore", file); code != 1 || !strings.Contains(errOut, "--force") {
		t.Errorf("restore over a ledger: exit %d: %s; want a refusal naming --force", code, errOut)
	}
	other := redistest.Start(t)
	t.Setenv("QUEEN_REDIS_URL", other.URL())
	if code, out, errOut = queenctlRun("ledger", "restore", file); code != 0 || !strings.Contains(out, "restored ledger "+id) {
		t.Fatalf("restore into an empty Redis: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ = queenctlRun("ledger", "status"); code != 0 || !strings.Contains(out, id) {
		t.Errorf("status after the restore: exit %d: %s; want ledger %s", code, out, id)
	}

	// Usage and configuration errors name what is wrong, in one line.
	if code, _, errOut = queenctlRun("ledger", "backup"); code != 2 || !strings.Contains(errOut, "want FILE") {
		t.Errorf("backup without FILE: exit %d: %s", code, errOut)
	}
	t.Setenv("QUEEN_REDIS_URL", "")
	if code, _, errOut = queenctlRun("ledger", "init"); code != 2 || !strings.Contains(errOut, "QUEEN_REDIS_URL") {
		t.Errorf("init without QUEEN_REDIS_URL: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
}
