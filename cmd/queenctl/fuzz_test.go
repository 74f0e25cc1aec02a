package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
)

// FuzzImportLine: a line of the Queen's dump never panics the import; a
// refusal is one line of the report; a taken line names a valid repo and
// issue, sends exactly its Queen-owned columns, verbatim, and lists every
// other column (repo and issue aside) as ignored.
func FuzzImportLine(f *testing.F) {
	data, err := os.ReadFile("../../testdata/replay/2026-10-11.json")
	if err != nil {
		f.Fatal(err)
	}
	var s struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		f.Fatal(err)
	}
	// Snapshot rows carry prs, which the Queen's dump does not: an ignored column.
	for _, i := range []int{0, 90, 200, len(s.Rows) - 1} {
		f.Add(append(bytes.Clone(s.Rows[i]), '\n'), "")
	}
	for _, l := range dump { // the Queen's own columns beside the row's (claims_test.go)
		f.Add([]byte(l+"\n"), "hive/t27")
	}
	f.Add([]byte(`{"repo": "Hive/T27", "issue": 1e10, "Started": true}`), "")
	f.Add([]byte(`{"issue": 7, "repo": null}`), "acme/web")
	f.Fuzz(func(t *testing.T, data []byte, defRepo string) {
		// The import reads the file a line at a time.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		}
		if !ghrepo.Valid(defRepo) {
			defRepo = "" // --repo is checked before any line is read
		}
		d, err := parseDumpLine(data, defRepo)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("failure %q is not one line of the report", msg)
			}
			return
		}
		obj, err := dispatch.DecodeObject(data)
		if err != nil {
			t.Fatalf("took a line DecodeObject refuses: %v", err)
		}
		if !ghrepo.Valid(d.repo) || d.issue < 1 || d.issue > 1e10 {
			t.Fatalf("took %s#%d", d.repo, d.issue)
		}
		if _, ok := obj["repo"]; !ok && d.repo != defRepo {
			t.Fatalf("repo %q, though the line has none and --repo is %q", d.repo, defRepo)
		}
		for name, v := range d.patch {
			if !dispatch.IsQueenField(name) {
				t.Fatalf("sends %q, not a Queen column", name)
			}
			if !bytes.Equal(v, obj[name]) {
				t.Fatalf("sends %s as %s, the line has %s", name, v, obj[name])
			}
		}
		if !slices.IsSorted(d.ignored) || len(slices.Compact(slices.Clone(d.ignored))) != len(d.ignored) {
			t.Fatalf("ignored %q: not sorted and unique", d.ignored)
		}
		for _, name := range d.ignored {
			if dispatch.IsQueenField(name) || name == "repo" || name == "issue" {
				t.Fatalf("ignores %q", name)
			}
		}
		n := len(d.patch) + len(d.ignored)
		for _, name := range []string{"repo", "issue"} {
			if _, ok := obj[name]; ok {
				n++
			}
		}
		if n != len(obj) {
			t.Fatalf("sends %d and ignores %d of the line's %d columns", len(d.patch), len(d.ignored), len(obj))
		}
	})
}
