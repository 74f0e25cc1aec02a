package replay_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/replay"
)

// snapshotFile is the module's shipped snapshot; the seeds are cut from it.
const snapshotFile = "../../testdata/replay/2026-10-11.json"

// FuzzSnapshot: Parse never panics and refuses only with a one-line
// *replay.Error; a snapshot it takes has no repeated row, evaluates and
// writes in every form, and its summary partitions its rows.
func FuzzSnapshot(f *testing.F) {
	data, err := os.ReadFile(snapshotFile)
	if err != nil {
		f.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		f.Fatal(err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(top["rows"], &rows); err != nil {
		f.Fatal(err)
	}
	// The whole file is 463 rows; a few small cuts keep the seeds fast.
	for _, cut := range [][2]int{{0, 1}, {100, 103}, {300, 302}, {len(rows) - 2, len(rows)}} {
		top["rows"], err = json.Marshal(rows[cut[0]:cut[1]])
		if err != nil {
			f.Fatal(err)
		}
		seed, err := json.Marshal(top)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
	}
	f.Add([]byte(`{"taken_at":"2026-10-11T12:55:00Z","rows":[]}`))
	f.Add([]byte(`{"taken_at":"2026-10-11T12:55:00+14:00","rows":[{"repo":"a/b","issue":1},{"repo":"A/B","issue":1}]}`))
	f.Add([]byte(`{"taken_at":"2026-10-11T12:55:00Z","rows":[{"repo":"a/b","issue":1,"review_state":"accept","finished_at":"2026-10-11T12:00:00Z","prs":{"read":true,"closed_unmerged":1,"numbers":[3]}}]}`))
	redispatched, err := os.ReadFile("../../testdata/replay/redispatch.json") // prs with pulls
	if err != nil {
		f.Fatal(err)
	}
	f.Add(redispatched)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := replay.Parse(data)
		if err != nil {
			if s != nil {
				t.Fatalf("Parse refused but gave a snapshot: %v", err)
			}
			var re *replay.Error
			if !errors.As(err, &re) {
				t.Fatalf("Parse error %T %q is not a *replay.Error", err, err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range s.Rows {
			if !ghrepo.Valid(r.Repo) || r.Issue < 1 {
				t.Fatalf("Parse took row %s", r.Key())
			}
			k := ghrepo.Key(r.Repo) + "#" + r.BranchName()
			if seen[k] {
				t.Fatalf("Parse took %s twice", r.Key())
			}
			seen[k] = true
		}

		rep := replay.Evaluate(s)
		if len(rep.Rows) != len(s.Rows) {
			t.Fatalf("Evaluate gave %d lines for %d rows", len(rep.Rows), len(s.Rows))
		}
		if n := rep.Summary.Claims.Total(); n != len(s.Rows) {
			t.Fatalf("claims counted %d of %d rows", n, len(s.Rows))
		}
		sb := rep.Summary.SendBackClaim
		if sb.Free+sb.Live != sb.Rows {
			t.Fatalf("send_back_claim summary %+v does not add up", sb)
		}
		ac := rep.Summary.AcceptClaim
		if ac.Free+ac.Live != ac.Rows || ac.Free+ac.OpenPR+ac.MergedPR+ac.NoPR+ac.Unread != ac.Rows {
			t.Fatalf("accept_claim summary %+v does not partition its rows", ac)
		}
		var out bytes.Buffer
		if err := replay.WriteJSON(&out, rep); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out.Bytes()) {
			t.Fatalf("WriteJSON wrote invalid JSON:\n%s", out.Bytes())
		}
		if err := replay.WriteTable(&bytes.Buffer{}, rep); err != nil {
			t.Fatal(err)
		}
		if err := replay.WriteSummary(&bytes.Buffer{}, rep); err != nil {
			t.Fatal(err)
		}
	})
}
