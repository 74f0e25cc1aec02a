package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

const committed = "../../testdata/replay/2026-10-11.json"

// The committed snapshot is exactly what the generator writes: regenerate it
// with `go run ./tools/gensnapshot -o testdata/replay/2026-10-11.json`.
func TestCommittedSnapshotIsGenerated(t *testing.T) {
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the generator's output (%d vs %d bytes); regenerate it", committed, len(want), len(got))
	}
	again, _ := generate()
	if !bytes.Equal(got, again) {
		t.Fatal("two runs of the generator differ")
	}
}

// The rows are shaped like the Queen's: one repo, distinct issues with their
// queen-<N> branch, and the measured mix of verdicts.
func TestSnapshotShape(t *testing.T) {
	data, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		TakenAt string                       `json:"taken_at"`
		Rows    []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	if snap.TakenAt != "2026-10-11T12:55:00Z" {
		t.Errorf("taken_at %s", snap.TakenAt)
	}
	hex40 := regexp.MustCompile(`^"[0-9a-f]{40}"$`)
	seen := map[int]bool{}
	verdicts := map[string]int{}
	last := 0
	for _, r := range snap.Rows {
		var repo, branch string
		var issue int
		json.Unmarshal(r["repo"], &repo)
		json.Unmarshal(r["issue"], &issue)
		json.Unmarshal(r["branch"], &branch)
		if repo != "gHashTag/t27" || seen[issue] || issue <= last || branch != "queen-"+string(r["issue"]) {
			t.Fatalf("row %s#%d branch %s: want gHashTag/t27, distinct rising issues, queen-<issue>", repo, issue, branch)
		}
		seen[issue], last = true, issue
		var paths []string
		if json.Unmarshal(r["owned_paths"], &paths); len(paths) == 0 {
			t.Errorf("%d: no owned_paths", issue)
		}
		v := string(r["review_state"])
		verdicts[v]++
		if v == `"accept"` && !hex40.Match(r["judged_head"]) {
			t.Errorf("%d: accepted without a 40-hex judged_head: %s", issue, r["judged_head"])
		}
		if _, ok := r["prs"]; ok != (v == `"accept"`) {
			t.Errorf("%d: prs recorded on a %s row", issue, v)
		}
	}
	want := map[string]int{`"sendBack"`: 9, `null`: 40 + 10, `"wait"`: 18, `"escalate"`: 12, `"accept"`: 338, `"failed"`: 26, `"cancelled"`: 10}
	if len(snap.Rows) != 463 || !equal(verdicts, want) {
		t.Errorf("%d rows, review_state counts %v; want 463, %v", len(snap.Rows), verdicts, want)
	}
}

func equal(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
