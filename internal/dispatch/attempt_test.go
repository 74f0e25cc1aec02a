package dispatch

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/rules"
)

var (
	dispatched = time.Date(2026, 10, 11, 10, 2, 0, 0, time.UTC)
	head1      = strings.Repeat("1", 40)
	head2      = strings.Repeat("2", 40)
	head3      = strings.Repeat("3", 40)
)

func at(d time.Duration) time.Time { return dispatched.Add(d) }

func TestRoleOfAPullRequest(t *testing.T) {
	a := Attempt{DispatchedAt: &dispatched, JudgedHead: head2}
	half := dispatched.Add(700 * time.Millisecond)
	for _, c := range []struct {
		name    string
		a       Attempt
		pr      PR
		want    PRRole
		counted bool
	}{
		{"open, before the dispatch, another head", a, PR{State: "open", HeadSHA: head1, CreatedAt: at(-time.Hour)}, PRCurrent, true},
		{"closed at the judged head, before the dispatch", a, PR{State: "closed", HeadSHA: head2, CreatedAt: at(-time.Hour)}, PRCurrent, true},
		{"merged at the judged head", a, PR{State: "closed", Merged: true, HeadSHA: head2, CreatedAt: at(-time.Hour)}, PRCurrent, true},
		{"closed, created at the dispatch", a, PR{State: "closed", HeadSHA: head1, CreatedAt: at(0)}, PRDispatched, true},
		{"closed, created after the dispatch", a, PR{State: "closed", HeadSHA: head3, CreatedAt: at(time.Minute)}, PRDispatched, true},
		{"closed in the dispatch's second, stamped before it", Attempt{DispatchedAt: &half, JudgedHead: head2},
			PR{State: "closed", HeadSHA: head1, CreatedAt: at(0)}, PRDispatched, true},
		{"closed a second before the dispatch, another head", a, PR{State: "closed", HeadSHA: head1, CreatedAt: at(-time.Second)}, PREarlier, false},
		{"merged before the dispatch, another head", a, PR{State: "closed", Merged: true, HeadSHA: head1, CreatedAt: at(-time.Hour)}, PREarlier, false},
		{"no dispatch time: every PR is the attempt's", Attempt{JudgedHead: head2}, PR{State: "closed", HeadSHA: head1, CreatedAt: at(-time.Hour)}, PRDispatched, true},
		{"no judged head matches no head", Attempt{DispatchedAt: &dispatched}, PR{State: "closed", CreatedAt: at(-time.Hour)}, PREarlier, false},
	} {
		if got := c.a.Role(c.pr); got != c.want || c.a.Mine(c.pr) != c.counted {
			t.Errorf("%s: role %d mine %t, want %d and %t", c.name, got, c.a.Mine(c.pr), c.want, c.counted)
		}
	}
}

// The reproduction: attempt 1's PR #24, closed unmerged, does not
// free the re-dispatched attempt accepted at head2, nor stop its export;
// the attempt's own PR #30, closed unmerged, frees it and is not proposed
// again.
func TestAReDispatchCountsOnlyItsOwnPullRequests(t *testing.T) {
	r := New("hive/t27", 21)
	r.DispatchedAt, r.JudgedHead = &dispatched, &head2
	readAt := at(time.Hour)
	pr24 := PR{Number: 24, State: "closed", HeadSHA: head1, CreatedAt: at(-3 * time.Hour)}
	read := PRState{Read: true, ReadAt: &readAt, Listed: []PR{pr24}}

	got := r.Attempt().Count(read)
	if got.Open+got.Merged+got.ClosedUnmerged != 0 || len(got.Numbers) != 0 || !slices.Equal(got.Earlier, []int{24}) {
		t.Fatalf("attempt 2 with only #24: %+v, want no PR of its own and #24 earlier", got)
	}
	if rules.AcceptLiveness(got.Read, got.Open, got.Merged, got.ClosedUnmerged) != rules.Live {
		t.Fatal("an earlier attempt's closed PR freed the new attempt")
	}
	if p := r.Attempt().Publishing(read); p.Any() {
		t.Fatalf("the export counts #24 against head2: %+v", p)
	}

	pr30 := PR{Number: 30, State: "closed", HeadSHA: head2, CreatedAt: at(2 * time.Hour)}
	read.Listed = []PR{pr30, pr24}
	got = r.Attempt().Count(read)
	if got.ClosedUnmerged != 1 || !slices.Equal(got.Numbers, []int{30}) || !slices.Equal(got.Earlier, []int{24}) {
		t.Fatalf("attempt 2 with #30 closed: %+v", got)
	}
	if rules.AcceptLiveness(got.Read, got.Open, got.Merged, got.ClosedUnmerged) != rules.Free {
		t.Fatal("the attempt's own closed PR did not free it")
	}
	if p := r.Attempt().Publishing(read); p.ClosedUnmerged != 1 || !slices.Equal(p.Numbers, []int{30}) {
		t.Fatalf("the export does not see #30 at the judged head: %+v", p)
	}

	// A PR of this attempt closed at another head (opened before the
	// Queen judged head2): accept_claim counts it, the export does not.
	pr27 := PR{Number: 27, State: "closed", HeadSHA: head3, CreatedAt: at(time.Hour)}
	read.Listed = []PR{pr24, pr27}
	if got := r.Attempt().Count(read); got.ClosedUnmerged != 1 || !slices.Equal(got.Numbers, []int{27}) {
		t.Fatalf("attempt 2 with #27 closed at another head: %+v, want #27 counted", got)
	}
	if p := r.Attempt().Publishing(read); p.Any() || !slices.Equal(p.Earlier, []int{24, 27}) {
		t.Fatalf("the export counts #27, closed at another head: %+v", p)
	}

	// Without a dispatch time (a row recorded as before), every PR counts.
	read.Listed = []PR{pr30, pr24}
	r.DispatchedAt = nil
	if got := r.Attempt().Count(read); got.ClosedUnmerged != 2 || len(got.Earlier) != 0 {
		t.Fatalf("no dispatch time: %+v, want both PRs counted", got)
	}
}

// A read that does not list its PRs says nothing of heads or times: both
// counts leave it as it is.
func TestAReadWithoutItsListCountsAsGiven(t *testing.T) {
	a := Attempt{DispatchedAt: &dispatched, JudgedHead: head2}
	read := PRState{Read: true, Open: 1, ClosedUnmerged: 2, Numbers: []int{3, 4, 5}}
	if got := a.Count(read); !sameCounts(got, read) {
		t.Fatalf("Count = %+v, want %+v", got, read)
	}
	if got := a.Publishing(read); !sameCounts(got, read) {
		t.Fatalf("Publishing = %+v, want %+v", got, read)
	}
}

func sameCounts(a, b PRState) bool {
	return a.Read == b.Read && a.Open == b.Open && a.Merged == b.Merged && a.ClosedUnmerged == b.ClosedUnmerged &&
		slices.Equal(a.Numbers, b.Numbers) && slices.Equal(a.Earlier, b.Earlier)
}

// Invariants over random branches: every listed PR is counted or earlier,
// exactly once; every open PR is counted; the export's PRs are the
// attempt's; counting again changes nothing; the zero Attempt (no dispatch
// known) counts every PR.
func TestCountInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2026))
	heads := []string{head1, head2, head3, ""}
	for i := 0; i < 2000; i++ {
		var listed []PR
		for n := range rng.IntN(6) {
			p := PR{Number: 10 + n, State: "closed", HeadSHA: heads[rng.IntN(len(heads))],
				CreatedAt: at(time.Duration(rng.IntN(7)-3) * time.Second)}
			switch rng.IntN(3) {
			case 0:
				p.State = "open"
			case 1:
				p.Merged = true
			}
			listed = append(listed, p)
		}
		a := Attempt{JudgedHead: heads[rng.IntN(len(heads))]}
		if rng.IntN(4) > 0 {
			d := at(time.Duration(rng.IntN(3000)) * time.Millisecond)
			a.DispatchedAt = &d
		}
		read := PRState{Read: true, Listed: listed}
		c, pub := a.Count(read), a.Publishing(read)

		all := append(slices.Clone(c.Numbers), c.Earlier...)
		slices.Sort(all)
		var want []int
		open := uint32(0)
		for _, p := range listed {
			want = append(want, p.Number)
			if p.Open() {
				open++
			}
		}
		if !slices.Equal(all, want) || int(c.Open+c.Merged+c.ClosedUnmerged) != len(c.Numbers) {
			t.Fatalf("%+v over %+v: counted %v and earlier %v, want each of %v once", a, listed, c.Numbers, c.Earlier, want)
		}
		if c.Open != open || pub.Open != open {
			t.Fatalf("%+v over %+v: open %d (export %d), want every open PR (%d)", a, listed, c.Open, pub.Open, open)
		}
		for _, n := range pub.Numbers {
			if !slices.Contains(c.Numbers, n) {
				t.Fatalf("%+v over %+v: the export counts #%d, which is not the attempt's", a, listed, n)
			}
		}
		if again := a.Count(c); !sameCounts(again, c) {
			t.Fatalf("counting again: %+v, was %+v", again, c)
		}
		if z := (Attempt{}).Count(read); len(z.Earlier) != 0 || len(z.Numbers) != len(listed) {
			t.Fatalf("the zero Attempt left PRs out: %+v", z)
		}
	}
}

// The claim view and explain show the earlier attempts' PRs apart from
// the attempt's, so a person sees why they did not count.
func TestViewAndExplainListEarlierAttemptsApart(t *testing.T) {
	r := row(t, `{"dispatched_at":"2026-10-08T13:00:00Z","finished_at":"`+ago(30)+`","review_state":"accept","judged_head":"`+head2+`"}`)
	read := PRState{Read: true, Listed: []PR{
		{Number: 24, State: "closed", HeadSHA: head1, CreatedAt: time.Date(2026, 10, 8, 9, 0, 0, 0, time.UTC)},
		{Number: 30, State: "open", HeadSHA: head2, CreatedAt: time.Date(2026, 10, 8, 15, 0, 0, 0, time.UTC)},
	}}
	p := r.Attempt().Count(read)
	r.PRs = &p
	v := ViewOf(r, now)
	if v.PRs == nil || v.PRs.Open != 1 || !slices.Equal(v.PRs.Numbers, []int{30}) || !slices.Equal(v.PRs.Earlier, []int{24}) || deref(v.AcceptClaim) != "live" {
		t.Fatalf("view prs %+v accept_claim %s", v.PRs, deref(v.AcceptClaim))
	}
	text := strings.Join(Explain(r, now), "\n")
	want := "pull requests of this attempt: #30; of earlier attempts, not counted: #24 (closed or merged before the dispatch at 2026-10-08T13:00:00Z, at a head other than the judged one)"
	if !strings.Contains(text, want) || !strings.Contains(text, "accept_claim: open=1 merged=0 closed_unmerged=0 -> live") {
		t.Fatalf("explain:\n%s\nwant the line %q", text, want)
	}
	r.PRs.Earlier = nil
	if text := strings.Join(Explain(r, now), "\n"); strings.Contains(text, "earlier attempts") {
		t.Fatalf("explain names earlier attempts where there are none:\n%s", text)
	}
}

// A row recorded before attempts were told apart has no earlier: it decodes
// as it was and writes back byte for byte (its digest does not move), and
// the PRs a read lists are never stored.
func TestARecordedReadWithoutEarlierDecodesAndKeepsItsBytes(t *testing.T) {
	const old = `{"read":true,"open":0,"merged":0,"closed_unmerged":1,"read_at":"2026-10-10T20:00:00Z","numbers":[9133]}`
	var p PRState
	if err := json.Unmarshal([]byte(old), &p); err != nil || p.Earlier != nil || p.Listed != nil || p.ClosedUnmerged != 1 {
		t.Fatalf("decoded %+v, %v", p, err)
	}
	if b, _ := json.Marshal(p); string(b) != old {
		t.Fatalf("written back as %s, was %s", b, old)
	}
	p.Earlier, p.Listed = []int{24}, []PR{{Number: 24, State: "closed", HeadSHA: head1, CreatedAt: dispatched}}
	if b, _ := json.Marshal(p); !strings.HasSuffix(string(b), `"numbers":[9133],"earlier":[24]}`) {
		t.Fatalf("recorded as %s: want earlier's numbers only, no listed PR", b)
	}
}
