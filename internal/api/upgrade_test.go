package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/testkit"
)

// The ledgers of testdata/ledgers were written by the old releases
// themselves (tools/ledgerfixture) at fixtureT0, with what their claims API
// answered then.
var fixtureT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

var oldLedgers = []string{"v0.1.0", "schema2-string-source", "v0.2.0"}

type oldAnswer struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

type oldExpected struct {
	Answers []oldAnswer `json:"answers"`
}

// upgraded restores the old ledger name into a private Redis and opens it
// as a starting binary does (guarded, migrated), behind the claims API at
// fixtureT0.
func upgraded(t *testing.T, name string) (*env, ledger.MigrationReport, oldExpected) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "ledgers", name)
	var exp oldExpected
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	c := testkit.NewClock(fixtureT0)
	led := ledger.New(srv.Client(), ledger.Options{Now: c.Now, FreeClosedPR: true, ReleaseDeadClaims: true})
	ctx := context.Background()
	if _, err := led.Restore(ctx, filepath.Join(dir, "ledger.jsonl"), ledger.RestoreOptions{}); err != nil {
		t.Fatalf("restore %s: %v", name, err)
	}
	led.Guard()
	rep, err := led.Open(ctx)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	e := &env{redis: srv, ledger: led, clock: c, logs: &testkit.Buffer{}}
	h, err := api.New(api.Config{Ledger: led, Token: token, Now: c.Now,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(checked(t, h))
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e, rep, exp
}

// claimFields are the fields of a claim view that must answer after an
// upgrade as the old release answered them (version, history and explain
// may grow: the migration writes).
var claimFields = []string{"claim", "claims_issue", "live", "stage", "holds_files", "held_paths",
	"held_until", "send_back_claim", "accept_claim", "freed", "would_free", "export"}

func pick(m map[string]any, keys []string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// Every row the old release answered answers the same after the upgrade,
// with its history and the audit stream readable, whichever spelling of
// the repository asked; the merged issues keep every person's decision.
func TestLedgersWrittenByOldReleasesUpgrade(t *testing.T) {
	for _, name := range oldLedgers {
		t.Run(name, func(t *testing.T) {
			e, rep, exp := upgraded(t, name)
			if rep.To != ledger.SchemaVersion {
				t.Errorf("report to %d, want %d", rep.To, ledger.SchemaVersion)
			}
			checked := 0
			for _, a := range exp.Answers {
				if a.Method != "GET" || a.Status != 200 || !strings.Contains(a.Path, "/claims/") ||
					!strings.HasPrefix(a.Path, "/v1/repos/hive/t27/") && !strings.HasPrefix(a.Path, "/v1/repos/queen/other/") {
					continue
				}
				var old map[string]any
				if err := json.Unmarshal(a.Body, &old); err != nil {
					t.Fatal(err)
				}
				issue := int64(old["issue"].(float64))
				if name == "v0.1.0" && issue >= 7000 {
					continue // two rows each, merged: below
				}
				fields := claimFields
				if name == "v0.1.0" {
					// 0.2.0 renders the rule columns of a row freed by a
					// person as "free" where 0.1.0 said "live": a view
					// change, not stored data.
					fields = slices.DeleteFunc(slices.Clone(fields), func(f string) bool {
						return f == "accept_claim" || f == "send_back_claim"
					})
				}
				now := e.req(t, "GET", a.Path, "").mustCode(t, 200, "")
				if got, want := pick(now, fields), pick(old, fields); !reflect.DeepEqual(got, want) {
					t.Errorf("%s after the upgrade:\n got %v\nwant %v (as %s answered)", a.Path, got, want, name)
				}
				hist, _ := now["history"].([]any)
				if len(hist) == 0 {
					t.Errorf("%s: no history after the upgrade", a.Path)
				}
				for _, h := range hist {
					src, _ := h.(map[string]any)["source"].(map[string]any)
					if src["kind"] == nil || src["kind"] == "" {
						t.Errorf("%s: history entry without a source kind: %v", a.Path, h)
					}
				}
				checked++
			}
			if checked < 13 {
				t.Fatalf("compared %d rows, want the 13 the old release answered for hive/t27 and queen/other", checked)
			}

			// Rows of the mixed-case spelling answer under every spelling.
			for _, p := range []string{"/v1/repos/hive/t27/claims/6001", "/v1/repos/Hive/T27/claims/6001"} {
				v := e.req(t, "GET", p, "").mustCode(t, 200, "")
				if v["claim"] != "running" || !slices.Contains(anyStrings(v["held_paths"]), "lib/held.go") {
					t.Errorf("%s: %v, want running holding lib/held.go", p, pick(v, claimFields))
				}
			}
			// The audit stream reads whole, each source an object.
			au := e.req(t, "GET", "/v1/audit?limit=1000", "").mustCode(t, 200, "")
			entries := au["entries"].([]any)
			if len(entries) < 30 {
				t.Errorf("audit has %d entries after the upgrade, want the old release's 34 and more", len(entries))
			}
			kinds := map[string]bool{}
			for _, en := range entries {
				src, _ := en.(map[string]any)["source"].(map[string]any)
				k, _ := src["kind"].(string)
				if k == "" {
					t.Errorf("audit entry without a source kind: %v", en)
				}
				kinds[k] = true
			}
			for _, k := range []string{"api", "webhook", "manual", "export"} {
				if !kinds[k] {
					t.Errorf("no audit entry of source %q after the upgrade: kinds %v", k, kinds)
				}
			}

			// Opening again (the next start) moves and merges nothing.
			again, err := e.ledger.Open(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if again.Moved != 0 || len(again.Merged) != 0 || again.Adopted {
				t.Errorf("second open: %+v, want nothing to do", again)
			}
			if name != "v0.1.0" {
				return // one key per repository already: nothing to merge
			}
			held := e.req(t, "GET", "/v1/repos/hive/t27/held-paths", "").mustCode(t, 200, "")
			var paths []string
			for _, h := range held["held"].([]any) {
				paths = append(paths, fmt.Sprint(h.(map[string]any)["path"]))
			}
			slices.Sort(paths)
			// What 0.1.0 held under its two spellings, together.
			if want := []string{"lib/held.go", "src/a.go", "src/b.go", "src/h.go"}; !slices.Equal(paths, want) {
				t.Errorf("held-paths %v, want %v", paths, want)
			}

			// A person's free on the canonical spelling, a keep on the
			// other, and a later dispatch each survive the merge.
			v := e.req(t, "GET", "/v1/repos/hive/t27/claims/7000", "").mustCode(t, 200, "")
			if v["claims_issue"] != false {
				t.Errorf("#7000 claims_issue %v after the upgrade: the person's free was undone", v["claims_issue"])
			}
			v = e.req(t, "GET", "/v1/repos/hive/t27/claims/7001", "").mustCode(t, 200, "")
			if v["claims_issue"] != true || v["kept"] == nil {
				t.Errorf("#7001 %v kept %v: the person's keep was lost", v["claims_issue"], v["kept"])
			}
			v = e.req(t, "GET", "/v1/repos/hive/t27/claims/7002", "").mustCode(t, 200, "")
			if v["claim"] != "running" || !slices.Contains(anyStrings(v["held_paths"]), "src/h.go") {
				t.Errorf("#7002 %v: the later dispatch (running, src/h.go) was lost", pick(v, claimFields))
			}

		})
	}
}

// The merge of two spellings names every issue it merged and what it kept.
func TestUpgradeReportNamesEveryMerge(t *testing.T) {
	_, rep, _ := upgraded(t, "v0.1.0")
	if !rep.Adopted || rep.From != 0 {
		t.Errorf("report %+v: want a 0.1.0 ledger adopted from schema 0", rep)
	}
	if rep.Moved != 1 {
		t.Errorf("moved %d rows alone, want Hive/T27's #6001 (its other three merge)", rep.Moved)
	}
	all := strings.Join(rep.Merged, "\n")
	for _, n := range []string{"#7000", "#7001", "#7002"} {
		if !strings.Contains(all, n) {
			t.Errorf("merges %q do not name %s", rep.Merged, n)
		}
	}
	if len(rep.Merged) != 3 {
		t.Errorf("merges %q, want 3", rep.Merged)
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, fmt.Sprint(s))
	}
	return out
}
