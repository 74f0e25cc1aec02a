// Command gensnapshot writes testdata/replay/2026-10-11.json, the replay
// snapshot rebuilt from the two sets measured on the live Queen on
// 2026-10-11: the 89 rows that claimed their issue at 12:55Z and the 374
// completed rows at 12:47Z. The rows are synthetic: their counts are the
// measured ones, their fields are drawn to match them, and the file says so
// in its "about". The output is deterministic: the same program always
// writes the same bytes (a test holds the committed file to it).
//
//	go run ./tools/gensnapshot -o testdata/replay/2026-10-11.json
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"
)

const repo = "gHashTag/t27"

// about is the snapshot's own statement of what it is.
const about = "Synthetic rows built by tools/gensnapshot from the counts measured on the live Queen " +
	"on 2026-10-11 (89 rows claiming their issue at 12:55Z, 374 completed rows at 12:47Z); " +
	"the counts are real, the rows are not the live data."

var takenAt = time.Date(2026, 10, 11, 12, 55, 0, 0, time.UTC)

// The measured sets. The claimed set claims its issue under claim_of alone;
// the completed set was read at 12:47Z.
const (
	sendBacksUnder = 8  // finished send-backs under the ceiling, idle < 60m
	sendBacksAt    = 1  // finished send-back at the ceiling, idle < 60m
	running        = 40 // not finished
	queued         = 4  // of the running rows, not started yet
	awaiting       = 28 // wait or null, idle < 360m
	escalated      = 12 // idle < 30m, still held by the valve
	closedOnly     = 2  // accepted, only PRs closed unmerged
	openPR         = 121
	mergedPR       = 2
	noPR           = 213
	failed         = 26 // review_state failed
	cancelled      = 10 // review_state cancelled
	firstIssue     = 8150
	lastIssue      = 9420
)

func main() {
	out := flag.String("o", "", "write to `FILE` instead of standard output")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: gensnapshot [-o FILE]")
		os.Exit(2)
	}
	data, err := generate()
	if err == nil {
		if *out == "" {
			_, err = os.Stdout.Write(data)
		} else {
			err = os.WriteFile(*out, data, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensnapshot:", err)
		os.Exit(1)
	}
}

// row is one dispatch row in the snapshot's field order.
type row struct {
	Repo            string   `json:"repo"`
	Issue           int      `json:"issue"`
	Branch          string   `json:"branch"`
	Started         bool     `json:"started"`
	DispatchedAt    string   `json:"dispatched_at"`
	FinishedAt      *string  `json:"finished_at"`
	ReviewState     *string  `json:"review_state"`
	SendBacks       int      `json:"send_backs"`
	Ceiling         int      `json:"ceiling"`
	CeilingReleases int      `json:"ceiling_releases"`
	Criteria        []string `json:"criteria"`
	FreeAttempts    int      `json:"free_attempts"`
	ReviewerMisses  int      `json:"reviewer_misses"`
	OwnedPaths      []string `json:"owned_paths"`
	JudgedHead      *string  `json:"judged_head"`
	Reaped          bool     `json:"reaped"`
	IssueOpen       *bool    `json:"issue_open"`
	OwnerAssigned   bool     `json:"owner_assigned"`
	PRs             *prs     `json:"prs,omitempty"`

	dispatched time.Time // orders the rows before issue numbers are given
}

type prs struct {
	Read           bool `json:"read"`
	Open           int  `json:"open"`
	Merged         int  `json:"merged"`
	ClosedUnmerged int  `json:"closed_unmerged"`
}

// rng is splitmix64: tiny, and its sequence is fixed forever, unlike a
// library generator's helpers.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

func (r *rng) chance(percent int) bool { return r.intn(100) < percent }

func (r *rng) hex40() *string {
	const digits = "0123456789abcdef"
	b := make([]byte, 40)
	for i := range b {
		b[i] = digits[r.intn(16)]
	}
	s := string(b)
	return &s
}

// pick returns n distinct items of pool in pool order.
func (r *rng) pick(pool []string, n int) []string {
	idx := make([]int, len(pool))
	for i := range idx {
		idx[i] = i
	}
	for i := 0; i < n; i++ {
		j := i + r.intn(len(idx)-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	chosen := idx[:n]
	sort.Ints(chosen)
	out := make([]string, n)
	for i, k := range chosen {
		out[i] = pool[k]
	}
	return out
}

var paths = []string{
	"bootstrap/src/compiler.rs", "bootstrap/src/parser.rs", "bootstrap/src/lexer.rs",
	"bootstrap/src/typeck.rs", "bootstrap/src/codegen/c.rs", "bootstrap/src/codegen/wasm.rs",
	"bootstrap/src/codegen/verilog.rs", "bootstrap/tests/golden.rs", "specs/queen/holds.t27",
	"specs/queen/claim.t27", "specs/queen/review_valve.t27", "specs/queen/dispatch.t27",
	"specs/math/ternary.t27", "specs/math/trit.t27", "specs/nn/attention.t27", "specs/vsa/bind.t27",
	"specs/vsa/bundle.t27", "gen/c/queen/review_valve.c", "gen/c/math/ternary.c",
	"gen/rust/math/ternary.rs", "gen/verilog/trit_alu.v", "stdlib/core/list.t27",
	"stdlib/core/option.t27", "docs/LANGUAGE.md", "docs/specs/queen.md",
	"conformance/vectors/claim.json", "conformance/vectors/holds.json", "tests/specs/holds_test.t27",
}

var criteria = []string{
	"builds", "tests", "cargo test passes", "spec vectors hold", "generated C matches the spec",
	"no new warnings", "golden files updated", "conformance vectors pass", "docs updated",
}

func ptr[T any](v T) *T { return &v }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

type gen struct {
	r    rng
	rows []*row
}

// base is a row of the Queen's shape, dispatched at d, finished at f (nil: running).
func (g *gen) base(d time.Time, f *time.Time) *row {
	r := &row{
		Repo:          repo,
		Started:       true,
		DispatchedAt:  stamp(d),
		Ceiling:       2,
		Criteria:      g.r.pick(criteria, g.r.between(2, 4)),
		OwnedPaths:    g.r.pick(paths, g.r.between(1, 4)),
		IssueOpen:     ptr(true),
		OwnerAssigned: g.r.chance(8),
		dispatched:    d,
	}
	if f != nil {
		r.FinishedAt = ptr(stamp(*f))
	}
	g.rows = append(g.rows, r)
	return r
}

// idle is a row finished idle whole minutes (plus some seconds) before takenAt.
func (g *gen) idle(minutes int) *row {
	f := takenAt.Add(-time.Duration(minutes)*time.Minute - time.Duration(g.r.intn(60))*time.Second)
	d := f.Add(-time.Duration(g.r.between(25, 150)) * time.Minute)
	return g.base(d, &f)
}

// completed is a row finished between from and the 12:47Z measurement.
func (g *gen) completed(from time.Time) *row {
	until := time.Date(2026, 10, 11, 12, 40, 0, 0, time.UTC)
	f := from.Add(time.Duration(g.r.intn(int(until.Sub(from)/time.Second))) * time.Second)
	d := f.Add(-time.Duration(g.r.between(20, 180)) * time.Minute)
	return g.base(d, &f)
}

func (g *gen) accepted(from time.Time, p prs) {
	r := g.completed(from)
	r.ReviewState = ptr("accept")
	r.JudgedHead = g.r.hex40()
	if g.r.chance(15) {
		r.SendBacks = 1
	}
	if p.Merged > 0 {
		r.IssueOpen = ptr(false)
	} else if g.r.chance(5) {
		r.IssueOpen = nil
	}
	p.Read = true
	r.PRs = &p
}

func generate() ([]byte, error) {
	g := &gen{r: rng(20261011)}

	// The 12:55Z claimed set.
	for i := 0; i < sendBacksUnder+sendBacksAt; i++ {
		r := g.idle(g.r.between(1, 58))
		r.ReviewState = ptr("sendBack")
		r.JudgedHead = g.r.hex40()
		r.SendBacks = i % 2 // 0 or 1: under the ceiling of 2
		if i >= sendBacksUnder {
			r.SendBacks = 2
		}
	}
	for i := 0; i < running; i++ {
		d := takenAt.Add(-time.Duration(g.r.between(2, 175))*time.Minute - time.Duration(g.r.intn(60))*time.Second)
		r := g.base(d, nil)
		r.Started = i >= queued
		if g.r.chance(10) {
			r.SendBacks = 1 // dispatched again after a send-back
		}
	}
	for i := 0; i < awaiting; i++ {
		r := g.idle(g.r.between(0, 355))
		if i%3 != 0 {
			r.ReviewState = ptr("wait")
		}
	}
	for i := 0; i < escalated; i++ {
		r := g.idle(g.r.between(0, 28))
		r.ReviewState = ptr("escalate")
		r.JudgedHead = g.r.hex40()
		r.SendBacks = g.r.intn(2)
		r.FreeAttempts = g.r.intn(3)
		r.ReviewerMisses = g.r.intn(3)
	}

	// The 12:47Z completed set. The export push failed for days, so the
	// accepted rows with no PR are the recent ones.
	week := time.Date(2026, 10, 6, 8, 0, 0, 0, time.UTC)
	exportDown := time.Date(2026, 10, 8, 6, 0, 0, 0, time.UTC)
	g.accepted(week, prs{ClosedUnmerged: 1})
	g.accepted(week, prs{ClosedUnmerged: 2})
	for i := 0; i < openPR; i++ {
		p := prs{Open: 1}
		if g.r.chance(8) {
			p.ClosedUnmerged = 1 // an earlier PR of the branch was closed
		}
		g.accepted(week, p)
	}
	g.accepted(week, prs{Merged: 1})
	g.accepted(week, prs{Merged: 1, ClosedUnmerged: 1})
	for i := 0; i < noPR; i++ {
		g.accepted(exportDown, prs{})
	}
	for i := 0; i < failed+cancelled; i++ {
		r := g.completed(week)
		r.ReviewState = ptr("failed")
		if i >= failed {
			r.ReviewState = ptr("cancelled")
		}
		r.Reaped = g.r.chance(50)
		r.SendBacks = g.r.intn(3)
		if g.r.chance(20) {
			r.IssueOpen = nil
		}
	}

	// Issue numbers rise with dispatch time, as on the live tracker.
	issues := g.issues(len(g.rows))
	sort.SliceStable(g.rows, func(i, j int) bool { return g.rows[i].dispatched.Before(g.rows[j].dispatched) })
	for i, r := range g.rows {
		r.Issue = issues[i]
		r.Branch = fmt.Sprintf("queen-%d", r.Issue)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"taken_at\": %q,\n \"about\": %q,\n \"rows\": [", stamp(takenAt), about)
	for i, r := range g.rows {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n ]}\n")
	return b.Bytes(), nil
}

// issues draws n distinct issue numbers in [firstIssue, lastIssue), ascending.
func (g *gen) issues(n int) []int {
	pool := make([]int, lastIssue-firstIssue)
	for i := range pool {
		pool[i] = firstIssue + i
	}
	for i := 0; i < n; i++ {
		j := i + g.r.intn(len(pool)-i)
		pool[i], pool[j] = pool[j], pool[i]
	}
	out := pool[:n]
	sort.Ints(out)
	return out
}
