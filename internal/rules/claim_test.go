package rules_test

import (
	"math"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/rules"
)

// cv is one claim_of vector in the card's argument order: finished, verdict,
// idle, send_backs, ceiling, releases, criteria_read, criteria, free, misses.
type cv struct {
	fin                 bool
	v                   rules.Verdict
	idle, sb, ceil, rel uint32
	read                bool
	crit, free, miss    uint32
	want                string
}

func (c cv) input() rules.ClaimInput {
	return rules.ClaimInput{Finished: c.fin, Verdict: c.v, IdleMinutes: c.idle, SendBacks: c.sb, Ceiling: c.ceil,
		Releases: c.rel, CriteriaRead: c.read, Criteria: c.crit, FreeAttempts: c.free, ReviewerMisses: c.miss}
}

func checkClaims(t *testing.T, vectors []cv) {
	t.Helper()
	for _, c := range vectors {
		if got := rules.ClaimOf(c.input()).String(); got != c.want {
			t.Errorf("ClaimOf(%+v) = %s, want %s", c.input(), got, c.want)
		}
	}
}

const (
	T = true
	F = false
)

var (
	vNone     = rules.VerdictNone
	vAccept   = rules.VerdictAccept
	vSendBack = rules.VerdictSendBack
	vEscalate = rules.VerdictEscalate
	vWait     = rules.VerdictWait
	vFailed   = rules.VerdictFailed
	vCanc     = rules.VerdictCancelled
	vEmpty    = rules.VerdictEmpty
	vStale    = rules.VerdictStaleContract
	vObsolete = rules.VerdictObsolete
	vOther    = rules.VerdictOther
)

// TestClaimOf: the asserted vectors of trios claim.t27 and the t27 copy.
func TestClaimOf(t *testing.T) {
	checkClaims(t, []cv{
		{F, vAccept, 999999, 9, 2, 9, T, 0, 9, 9, "running"},
		{F, vFailed, 0, 0, 2, 0, T, 1, 0, 0, "running"},
		{F, vObsolete, 0, 0, 2, 0, T, 1, 0, 0, "running"},
		{F, vNone, 0, 0, 2, 0, F, 0, 0, 0, "running"},
		{T, vAccept, 0, 0, 2, 0, T, 1, 0, 0, "accepted"},
		{T, vFailed, 0, 9, 2, 0, T, 1, 0, 0, "failed"},
		{T, vCanc, 0, 0, 2, 0, T, 1, 0, 0, "failed"},
		{T, vStale, 0, 0, 2, 0, T, 1, 0, 0, "failed"},
		{T, vObsolete, 0, 0, 2, 0, T, 1, 0, 0, "cancelled"},
		{T, vEmpty, 0, 0, 2, 0, T, 1, 0, 0, "rejected"},
		{T, vEmpty, 29, 0, 2, 0, T, 1, 0, 0, "rejected"},
		{T, vEmpty, 30, 0, 2, 0, T, 1, 0, 0, "failed"},
		{T, vEmpty, 30, 9, 2, 9, T, 1, 9, 9, "failed"},
		{T, vSendBack, 59, 1, 2, 0, T, 1, 0, 0, "rejected"},
		{T, vSendBack, 60, 1, 2, 0, T, 1, 0, 0, "failed"},
		{T, vSendBack, 60, 0, 2, 0, T, 1, 0, 0, "failed"},
		{T, vSendBack, 60, 1, 2, 1, T, 1, 0, 0, "failed"},
		{T, vSendBack, 59, 1, 2, 1, T, 1, 0, 0, "cancelled"},
		{T, vSendBack, 59, 2, 2, 0, T, 1, 0, 0, "rejected"},
		{T, vSendBack, 60, 2, 2, 0, T, 1, 0, 0, "failed"},
		{T, vSendBack, 999999, 2, 2, 1, T, 1, 0, 0, "cancelled"},
		{T, vSendBack, 0, 0, 2, 1, T, 1, 0, 0, "cancelled"},
		{T, vSendBack, 60, 2, 3, 0, T, 1, 0, 0, "failed"},
		{T, vSendBack, 0, 3, 3, 0, T, 1, 0, 0, "rejected"},
		{T, vEscalate, 29, 0, 2, 0, T, 2, 0, 0, "awaitingReview"},
		{T, vEscalate, 30, 0, 2, 0, T, 2, 0, 0, "failed"},
		{T, vEscalate, 30, 0, 2, 1, T, 2, 0, 0, "cancelled"},
		{T, vEscalate, 119, 0, 2, 1, T, 0, 0, 0, "awaitingReview"},
		{T, vEscalate, 120, 0, 2, 0, T, 0, 0, 0, "cancelled"},
		{T, vEscalate, 59, 2, 2, 0, T, 2, 0, 0, "awaitingReview"},
		{T, vEscalate, 60, 2, 2, 0, T, 2, 0, 0, "failed"},
		{T, vEscalate, 30, 0, 2, 0, T, 2, 3, 0, "failed"},
		{T, vEscalate, 30, 0, 2, 0, T, 2, 0, 3, "failed"},
		{T, vEscalate, 120, 0, 2, 0, F, 0, 0, 0, "failed"},
		{T, vEscalate, 120, 0, 2, 0, T, 0, 0, 0, "cancelled"},
		{T, vWait, 0, 0, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, vWait, 359, 1, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, vWait, 360, 1, 2, 0, T, 1, 0, 0, "failed"},
		{T, vNone, 360, 0, 2, 0, F, 0, 0, 0, "failed"},
		{T, vWait, 999999, 2, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, vOther, 0, 0, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, vOther, 999999, 0, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, rules.Verdict(11), 999999, 0, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, rules.Verdict(255), 999999, 0, 2, 0, T, 1, 0, 0, "awaitingReview"},

		// Only in the t27 copy.
		{T, vSendBack, 61, 1, 2, 0, F, 3, 0, 0, "failed"},
		{T, vSendBack, 60, 2, 2, 1, F, 3, 0, 0, "cancelled"},
		{T, vEscalate, 29, 0, 2, 0, F, 3, 0, 0, "awaitingReview"},
		{T, vEscalate, 30, 0, 2, 0, F, 3, 0, 0, "failed"},
		{T, vEscalate, 0, 0, 2, 0, T, 0, 0, 0, "awaitingReview"},
		{T, vEscalate, 29, 0, 2, 0, T, 4, 3, 0, "awaitingReview"},
		{T, vEscalate, 59, 2, 2, 0, T, 4, 0, 0, "awaitingReview"},
		{T, vEscalate, 0, 0, 2, 1, T, 4, 3, 0, "cancelled"},
		{T, vWait, 360, 2, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, vOther, 100000, 0, 2, 0, T, 1, 0, 0, "awaitingReview"},
		{T, vEmpty, 100000, 0, 2, 0, T, 1, 0, 0, "failed"},
		{T, vAccept, 100000, 5, 2, 1, T, 0, 9, 9, "accepted"},
		{F, vOther, 100000, 5, 2, 1, T, 0, 9, 9, "running"},
	})
}

// TestSendBackGridTable: the full send-back grid of section 2 (criteria
// irrelevant: each row is checked with every criteria reading).
func TestSendBackGridTable(t *testing.T) {
	idles := []uint32{0, 59, 60, 1000}
	grid := []struct {
		sb, ceil, rel uint32
		want          [4]string
	}{
		{0, 2, 0, [4]string{"rejected", "rejected", "failed", "failed"}},
		{0, 2, 1, [4]string{"cancelled", "cancelled", "failed", "failed"}},
		{1, 2, 0, [4]string{"rejected", "rejected", "failed", "failed"}},
		{1, 2, 1, [4]string{"cancelled", "cancelled", "failed", "failed"}},
		{2, 2, 0, [4]string{"rejected", "rejected", "failed", "failed"}},
		{2, 2, 1, [4]string{"cancelled", "cancelled", "cancelled", "cancelled"}},
		{3, 2, 0, [4]string{"rejected", "rejected", "failed", "failed"}},
		{3, 2, 1, [4]string{"cancelled", "cancelled", "cancelled", "cancelled"}},
	}
	for _, g := range grid {
		for i, idle := range idles {
			for _, cr := range gridCriteria {
				checkClaims(t, []cv{{T, vSendBack, idle, g.sb, g.ceil, g.rel, cr.read, cr.n, 0, 0, g.want[i]}})
			}
		}
	}
}

// TestEscalateTable: the expanded escalate table (row 10), one vector per
// kind, either side of each kind's floor, with and without a spent release.
func TestEscalateTable(t *testing.T) {
	type kindCase struct {
		name               string
		sb, ceil           uint32
		read               bool
		crit, free, misses uint32
	}
	noCriteria := kindCase{"NO_CRITERIA", 5, 2, T, 0, 9, 9}
	ceiling := kindCase{"SEND_BACK_CEILING", 2, 2, T, 1, 9, 9}
	thirty := []kindCase{
		{"DEAD_LETTER", 0, 2, T, 1, 3, 0},
		{"REVIEWER_GAVE_UP", 0, 2, T, 1, 0, 3},
		{"UNRECORDED", 0, 2, T, 1, 0, 0},
		{"UNRECORDED (unread criteria)", 0, 2, F, 0, 2, 2},
	}
	esc := func(k kindCase, idle, rel uint32, want string) cv {
		return cv{T, vEscalate, idle, k.sb, k.ceil, rel, k.read, k.crit, k.free, k.misses, want}
	}
	var vs []cv
	for _, rel := range []uint32{0, 1, 3} {
		vs = append(vs, esc(noCriteria, 0, rel, "awaitingReview"), esc(noCriteria, 119, rel, "awaitingReview"),
			esc(noCriteria, 120, rel, "cancelled"), esc(noCriteria, math.MaxUint32, rel, "cancelled"))
	}
	for _, idle := range []uint32{0, 59, 60, math.MaxUint32} {
		vs = append(vs, esc(ceiling, idle, 1, "cancelled"), esc(ceiling, idle, 2, "cancelled"))
	}
	vs = append(vs, esc(ceiling, 0, 0, "awaitingReview"), esc(ceiling, 59, 0, "awaitingReview"),
		esc(ceiling, 60, 0, "failed"), esc(ceiling, 2880, 0, "failed"))
	for _, k := range thirty {
		vs = append(vs, esc(k, 0, 1, "cancelled"), esc(k, 2880, 1, "cancelled"),
			esc(k, 0, 0, "awaitingReview"), esc(k, 29, 0, "awaitingReview"),
			esc(k, 30, 0, "failed"), esc(k, 2880, 0, "failed"))
	}
	checkClaims(t, vs)
}

// TestClaimQuirks: the card's known quirks, kept on purpose.
func TestClaimQuirks(t *testing.T) {
	t.Run("spent release is non-monotonic in time", func(t *testing.T) {
		checkClaims(t, []cv{
			{T, vSendBack, 59, 1, 2, 1, T, 1, 0, 0, "cancelled"},
			{T, vSendBack, 60, 1, 2, 1, T, 1, 0, 0, "failed"},
		})
	})
	t.Run("the word cancelled fails, only obsolete cancels", func(t *testing.T) {
		checkClaims(t, []cv{
			{T, rules.VerdictOf("cancelled"), 0, 0, 2, 0, T, 1, 0, 0, "failed"},
			{T, rules.VerdictOf("obsolete"), 0, 0, 2, 0, T, 1, 0, 0, "cancelled"},
		})
	})
	t.Run("wait at ceiling and unknown words hold with no clock", func(t *testing.T) {
		checkClaims(t, []cv{
			{T, vWait, math.MaxUint32, 2, 2, 0, T, 1, 0, 0, "awaitingReview"},
			{T, vNone, math.MaxUint32, 3, 2, 0, T, 1, 0, 0, "awaitingReview"},
			{T, rules.VerdictOf("escalated"), math.MaxUint32, 0, 2, 0, T, 1, 0, 0, "awaitingReview"},
		})
	})
	t.Run("empty floor ignores counters", func(t *testing.T) {
		checkClaims(t, []cv{
			{T, vEmpty, 29, 9, 0, 9, T, 0, 9, 9, "rejected"},
			{T, vEmpty, 30, 9, 0, 9, F, 0, 9, 9, "failed"},
		})
	})
	t.Run("ceiling 0 puts every send-back at the ceiling", func(t *testing.T) {
		checkClaims(t, []cv{
			{T, vSendBack, 60, 0, 0, 1, T, 1, 0, 0, "cancelled"},
			{T, vSendBack, 59, 0, 0, 0, T, 1, 0, 0, "rejected"},
			{T, vWait, 360, 0, 0, 0, T, 1, 0, 0, "awaitingReview"},
			{T, vEscalate, 59, 0, 0, 0, T, 1, 0, 0, "awaitingReview"},
		})
	})
}

// TestEscalationKindOf: the card's escalation_kind_of vectors.
func TestEscalationKindOf(t *testing.T) {
	for _, c := range []struct {
		sb, ceil         uint32
		read             bool
		crit, free, miss uint32
		want             rules.Kind
	}{
		{0, 2, T, 2, 0, 0, rules.KindUnrecorded},
		{0, 2, T, 2, 2, 2, rules.KindUnrecorded},
		{0, 2, T, 2, 3, 0, rules.KindDeadLetter},
		{0, 2, T, 2, 0, 3, rules.KindReviewerGaveUp},
		{1, 2, T, 2, 9, 9, rules.KindDeadLetter},
		{2, 2, T, 2, 9, 9, rules.KindSendBackCeiling},
		{2, 2, T, 0, 9, 9, rules.KindNoCriteria},
		{2, 2, F, 0, 9, 9, rules.KindSendBackCeiling},
	} {
		if got := rules.EscalationKindOf(c.sb, c.ceil, c.read, c.crit, c.free, c.miss); got != c.want {
			t.Errorf("EscalationKindOf(%d, %d, %v, %d, %d, %d) = %d, want %d", c.sb, c.ceil, c.read, c.crit, c.free, c.miss, got, c.want)
		}
	}
}

// TestCriteriaReadAs: criteria_read_as, both copies' vectors.
func TestCriteriaReadAs(t *testing.T) {
	for _, c := range []struct {
		read bool
		n    uint32
		want uint32
	}{{F, 0, 1}, {T, 0, 0}, {F, 7, 1}, {T, 4, 4}, {T, math.MaxUint32, math.MaxUint32}} {
		if got := rules.CriteriaCount(c.read, c.n); got != c.want {
			t.Errorf("CriteriaCount(%v, %d) = %d, want %d", c.read, c.n, got, c.want)
		}
	}
}

// TestClaimOfStep: claim_of_step, both copies' vectors, and every other
// step code keeps the held claim.
func TestClaimOfStep(t *testing.T) {
	for _, c := range []struct {
		s    rules.Step
		held rules.Claim
		want rules.Claim
	}{
		{rules.StepRelease, rules.ClaimRejected, rules.ClaimFailed},
		{rules.StepClose, rules.ClaimRejected, rules.ClaimCancelled},
		{rules.StepHold, rules.ClaimRejected, rules.ClaimRejected},
		{rules.StepBackfill, rules.ClaimAwaitingReview, rules.ClaimAwaitingReview},
		{rules.StepClose, rules.ClaimAwaitingReview, rules.ClaimCancelled},
		{rules.StepRelease, rules.ClaimAwaitingReview, rules.ClaimFailed},
	} {
		if got := rules.ClaimAfterStep(c.s, c.held); got != c.want {
			t.Errorf("ClaimAfterStep(%d, %s) = %s, want %s", c.s, c.held, got, c.want)
		}
	}
	for s := 4; s < 256; s++ {
		for held := rules.Claim(0); held < 6; held++ {
			if got := rules.ClaimAfterStep(rules.Step(s), held); got != held {
				t.Fatalf("ClaimAfterStep(%d, %s) = %s, want the held claim", s, held, got)
			}
		}
	}
}

// TestClaimWords: the words other programs see, and their way back.
func TestClaimWords(t *testing.T) {
	want := []string{"running", "accepted", "rejected", "awaitingReview", "failed", "cancelled"}
	for code, w := range want {
		c := rules.Claim(code)
		if c.String() != w {
			t.Errorf("Claim(%d).String() = %q, want %q", code, c.String(), w)
		}
		back, ok := rules.ParseClaim(w)
		if !ok || back != c {
			t.Errorf("ParseClaim(%q) = %d, %v", w, back, ok)
		}
		if got, live := rules.ClaimsIssue(c), code <= 3; got != live {
			t.Errorf("ClaimsIssue(%s) = %v, want %v", w, got, live)
		}
	}
	// A code outside the card reads awaitingReview (the newer boundary).
	for _, code := range []int{6, 7, 255} {
		if got := rules.Claim(code).String(); got != "awaitingReview" {
			t.Errorf("Claim(%d).String() = %q, want awaitingReview", code, got)
		}
		if rules.ClaimsIssue(rules.Claim(code)) {
			t.Errorf("ClaimsIssue(%d) = true for a code outside the card", code)
		}
	}
	for _, w := range []string{"", "Running", "awaiting_review", "awaiting", "cancel"} {
		if c, ok := rules.ParseClaim(w); ok {
			t.Errorf("ParseClaim(%q) = %d, true; want no claim", w, c)
		}
	}
}

// TestVerdictOf: the ten words, null read as "", and the trap words.
func TestVerdictOf(t *testing.T) {
	words := map[string]rules.Verdict{
		"": vNone, "accept": vAccept, "sendBack": vSendBack, "escalate": vEscalate, "wait": vWait,
		"failed": vFailed, "cancelled": vCanc, "empty": vEmpty, "stale-contract": vStale, "obsolete": vObsolete,
	}
	for w, v := range words {
		if got := rules.VerdictOf(w); got != v {
			t.Errorf("VerdictOf(%q) = %d, want %d", w, got, v)
		}
		if got := v.String(); got != w {
			t.Errorf("Verdict(%d).String() = %q, want %q", v, got, w)
		}
	}
	for _, w := range []string{"Accept", "SENDBACK", "__proto__", "constructor", "0", "escalated", "toString", "Wait", "accept\n"} {
		if got := rules.VerdictOf(w); got != vOther {
			t.Errorf("VerdictOf(%q) = %d, want OTHER", w, got)
		}
	}
	for _, code := range []int{10, 11, 255} {
		if got := rules.Verdict(code).String(); got != "other" {
			t.Errorf("Verdict(%d).String() = %q, want other", code, got)
		}
	}
}

// TestMinutes: the boundary's u32 rule on a millisecond clock.
func TestMinutes(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want uint32
	}{
		{0, 0},
		{math.NaN(), 0},
		{-60000, 0},
		{-1, 0},
		{-1e18, 0},
		{math.Inf(-1), 0},
		{1, 0},
		{59999, 0},
		{59999.999, 0},
		{60000, 1},
		{119999, 1},
		{1800000, 30},
		{1799999, 29},
		{3600000, 60},
		{21600000, 360},
		{float64(math.MaxUint32-1) * 60000, math.MaxUint32 - 1},
		{float64(math.MaxUint32) * 60000, math.MaxUint32},
		{float64(math.MaxUint32)*60000 + 59999, math.MaxUint32},
		{1e20, math.MaxUint32},
		{math.MaxFloat64, math.MaxUint32},
		{math.Inf(1), math.MaxUint32},
	} {
		if got := rules.Minutes(c.ms); got != c.want {
			t.Errorf("Minutes(%v) = %d, want %d", c.ms, got, c.want)
		}
	}
}

// TestMinutesSince: whole minutes since finished_at; unknown or future reads 0.
func TestMinutesSince(t *testing.T) {
	now := time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since time.Time
		want  uint32
	}{
		{time.Time{}, 0},
		{now, 0},
		{now.Add(time.Hour), 0},
		{now.Add(-59 * time.Second), 0},
		{now.Add(-time.Minute + time.Nanosecond), 0},
		{now.Add(-time.Minute), 1},
		{now.Add(-30*time.Minute - 59*time.Second), 30},
		{now.Add(-6 * time.Hour), 360},
		{now.Add(-48 * time.Hour), 2880},
		{time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), uint32(math.MaxInt64 / int64(time.Minute))},
	} {
		if got := rules.MinutesSince(c.since, now); got != c.want {
			t.Errorf("MinutesSince(%v) = %d, want %d", c.since, got, c.want)
		}
	}
}

// TestCount: the u32 rule on counters: floor, NaN and negative 0, saturate.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want uint32
	}{
		{0, 0}, {math.NaN(), 0}, {-1, 0}, {-1.5, 0}, {-1e30, 0}, {math.Inf(-1), 0},
		{0.5, 0}, {1, 1}, {1.5, 1}, {2.999, 2},
		{math.MaxUint32 - 1, math.MaxUint32 - 1}, {math.MaxUint32 - 0.5, math.MaxUint32 - 1},
		{math.MaxUint32, math.MaxUint32}, {math.MaxUint32 + 1, math.MaxUint32},
		{1e20, math.MaxUint32}, {math.Inf(1), math.MaxUint32},
	} {
		if got := rules.Count(c.x); got != c.want {
			t.Errorf("Count(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

// boardClaim reads a board row the way dispatchRowState does: an
// unparsable finished_at is finished with idle 0; criteria read when it is a list.
func boardClaim(t *testing.T, now time.Time, finishedAt *string, review string, sb, rel uint32, criteria []string) string {
	t.Helper()
	in := rules.ClaimInput{Verdict: rules.VerdictOf(review), SendBacks: sb, Ceiling: rules.DefaultSendBackCeiling,
		Releases: rel, CriteriaRead: criteria != nil, Criteria: uint32(len(criteria))}
	if finishedAt != nil {
		in.Finished = true
		if at, err := time.Parse(time.RFC3339, *finishedAt); err == nil {
			in.IdleMinutes = rules.MinutesSince(at, now)
		}
	}
	return rules.ClaimOf(in).String()
}

// TestBoardReading: the board rows of section 2 (now 2026-10-10T20:00Z).
func TestBoardReading(t *testing.T) {
	now := time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)
	at := func(s string) *string { return &s }
	for _, c := range []struct {
		name     string
		finished *string
		review   string
		sb, rel  uint32
		criteria []string
		want     string
	}{
		{"not finished, accept", nil, "accept", 0, 0, nil, "running"},
		{"empty 30 min", at("2026-10-10T19:30:00Z"), "empty", 0, 0, nil, "failed"},
		{"empty 30 min after flooring", at("2026-10-10T19:29:59Z"), "empty", 0, 0, nil, "failed"},
		{"send-back at ceiling, release spent", at("2026-10-10T18:00:00Z"), "sendBack", 2, 1, nil, "cancelled"},
		{"escalate, criteria [], 121 min", at("2026-10-10T17:59:00Z"), "escalate", 0, 0, []string{}, "cancelled"},
		{"not a date, wait", at("not a date"), "wait", 0, 0, nil, "awaitingReview"},
	} {
		if got := boardClaim(t, now, c.finished, c.review, c.sb, c.rel, c.criteria); got != c.want {
			t.Errorf("%s: claim %s, want %s", c.name, got, c.want)
		}
	}
}

// TestOldAuditBoundary: the millisecond vectors of the old audit, through
// Minutes, agree with the card where the card kept the old behaviour.
func TestOldAuditBoundary(t *testing.T) {
	for _, c := range []struct {
		v    rules.Verdict
		ms   float64
		sb   uint32
		rel  uint32
		want string
	}{
		{vEmpty, 1799999, 0, 0, "rejected"},
		{vEmpty, 1800000, 0, 0, "failed"},
		{vSendBack, 3600000, 1, 0, "failed"},
		{vWait, 21600000, 0, 0, "failed"},
		{vWait, 21599999, 0, 0, "awaitingReview"},
		{vSendBack, math.NaN(), 1, 0, "rejected"}, // NaN keeps the hold
	} {
		in := rules.ClaimInput{Finished: true, Verdict: c.v, IdleMinutes: rules.Minutes(c.ms), SendBacks: c.sb,
			Ceiling: 2, Releases: c.rel, CriteriaRead: true, Criteria: 1}
		if got := rules.ClaimOf(in).String(); got != c.want {
			t.Errorf("%s at %v ms: %s, want %s", c.v, c.ms, got, c.want)
		}
	}
}
