package rules_test

import (
	"math"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/rules"
)

// TestHoldsFiles: the holds card's asserted vectors.
func TestHoldsFiles(t *testing.T) {
	for _, c := range []struct {
		s       rules.HoldStage
		minutes uint32
		want    bool
	}{
		{rules.StageWorking, 0, true},
		{rules.StageWorking, 4000000000, true},
		{rules.StageWorking, math.MaxUint32, true},
		{rules.StageAwaiting, 0, true},
		{rules.StageAwaiting, 29, true},
		{rules.StageAwaiting, 30, false},
		{rules.StageSendBack, 0, true},
		{rules.StageSendBack, 119, true},
		{rules.StageSendBack, 120, false},
		{rules.StageEscalated, 0, false},
		{rules.StageDone, 0, false},
		{rules.HoldStage(5), 0, false},
		{rules.HoldStage(255), 0, false},
	} {
		if got := rules.HoldsFiles(c.s, c.minutes); got != c.want {
			t.Errorf("HoldsFiles(%d, %d) = %v, want %v", c.s, c.minutes, got, c.want)
		}
	}
}

// TestHoldStage: the caller's holdStage vectors, as the stage words other
// programs see.
func TestHoldStage(t *testing.T) {
	for _, c := range []struct {
		finished bool
		review   string
		want     string
	}{
		{F, "", "working"},
		{F, "sendBack", "working"},
		{F, "accept", "working"},
		{T, "sendBack", "send_back"},
		{T, "escalate", "escalated"},
		{T, "wait", "awaiting"},
		{T, "", "awaiting"},
		{T, "empty", "awaiting"},
		{T, "escalated", "awaiting"},
		{T, "Accept", "awaiting"},
		{T, "accept", "done"},
		{T, "failed", "done"},
		{T, "cancelled", "done"},
		{T, "obsolete", "done"},
		{T, "stale-contract", "done"},
	} {
		if got := rules.StageOf(c.finished, c.review).String(); got != c.want {
			t.Errorf("StageOf(%v, %q) = %s, want %s", c.finished, c.review, got, c.want)
		}
	}
	words := []string{"working", "send_back", "awaiting", "escalated", "done"}
	for code, w := range words {
		if got := rules.HoldStage(code).String(); got != w {
			t.Errorf("HoldStage(%d).String() = %q, want %q", code, got, w)
		}
	}
	for _, code := range []int{5, 6, 255} {
		if got := rules.HoldStage(code).String(); got != "invalid" {
			t.Errorf("HoldStage(%d).String() = %q, want invalid", code, got)
		}
	}
}

// row is a dispatch row as the holds caller reads it.
type row struct {
	finishedAt *time.Time
	review     string
	ownedPaths []string
}

// heldPaths is the caller heldPaths(row, now) over the card's functions.
func heldPaths(r row, now time.Time) []string {
	var minutes uint32
	if r.finishedAt != nil {
		minutes = rules.MinutesSince(*r.finishedAt, now)
	}
	if rules.HoldsFiles(rules.StageOf(r.finishedAt != nil, r.review), minutes) {
		return r.ownedPaths
	}
	return nil
}

// TestHeldPaths: the caller test vectors (now 2026-10-08T16:00Z unless stated).
func TestHeldPaths(t *testing.T) {
	now := time.Date(2026, 10, 8, 16, 0, 0, 0, time.UTC)
	ago := func(m int) *time.Time { at := now.Add(-time.Duration(m) * time.Minute); return &at }
	two := []string{"a/b.go", "c/d.go"}
	for _, c := range []struct {
		name string
		r    row
		now  time.Time
		want int
	}{
		{"not finished, no verdict", row{nil, "", two}, now, 2},
		{"wait 29 min", row{ago(29), "wait", two}, now, 2},
		{"wait 31 min", row{ago(31), "wait", two}, now, 0},
		{"wait 13:31Z at 15:24Z", row{ptr(time.Date(2026, 10, 8, 13, 31, 0, 0, time.UTC)), "wait", two}, time.Date(2026, 10, 8, 15, 24, 0, 0, time.UTC), 0},
		{"escalate just now", row{ago(0), "escalate", two}, now, 0},
		{"sendBack 90 min", row{ago(90), "sendBack", two}, now, 2},
		{"sendBack 121 min", row{ago(121), "sendBack", two}, now, 0},
		{"not finished, owned_paths null", row{nil, "", nil}, now, 0},
		{"finished in the future reads 0", row{ptr(now.Add(time.Hour)), "wait", two}, now, 2},
	} {
		if got := heldPaths(c.r, c.now); len(got) != c.want {
			t.Errorf("%s: held %v, want %d paths", c.name, got, c.want)
		}
	}
}

func ptr(t time.Time) *time.Time { return &t }

// TestSendBackClaim: send_back_claim's derived vectors.
func TestSendBackClaim(t *testing.T) {
	for _, c := range []struct {
		sb, ceil uint32
		want     rules.Liveness
	}{
		{0, 2, rules.Free}, {1, 2, rules.Free}, {2, 2, rules.Live}, {3, 2, rules.Live}, {0, 0, rules.Live},
		{math.MaxUint32, math.MaxUint32, rules.Live}, {0, math.MaxUint32, rules.Free},
	} {
		if got := rules.SendBackLiveness(c.sb, c.ceil); got != c.want {
			t.Errorf("SendBackLiveness(%d, %d) = %s, want %s", c.sb, c.ceil, got, c.want)
		}
	}
	if rules.Free.String() != "free" || rules.Live.String() != "live" {
		t.Errorf("liveness words %q %q, want free live", rules.Free, rules.Live)
	}
	if rules.Free == rules.Live {
		t.Error("Free and Live are the same value")
	}
}

// TestAcceptClaim: accept_claim's derived vectors.
func TestAcceptClaim(t *testing.T) {
	for _, c := range []struct {
		read                 bool
		open, merged, closed uint32
		want                 rules.Liveness
	}{
		{T, 0, 0, 1, rules.Free},
		{T, 0, 0, 5, rules.Free},
		{T, 0, 0, 0, rules.Live},
		{T, 1, 0, 1, rules.Live},
		{T, 0, 1, 1, rules.Live},
		{T, 2, 0, 0, rules.Live},
		{T, 0, 2, 0, rules.Live},
		{F, 0, 0, 1, rules.Live},
		{F, 0, 0, 0, rules.Live},
	} {
		if got := rules.AcceptLiveness(c.read, c.open, c.merged, c.closed); got != c.want {
			t.Errorf("AcceptLiveness(%v, open %d, merged %d, closed %d) = %s, want %s", c.read, c.open, c.merged, c.closed, got, c.want)
		}
	}
}

// TestHeldStage: held_stage's derived vectors: a freed row is done.
func TestHeldStage(t *testing.T) {
	for s := rules.HoldStage(0); s < 5; s++ {
		if got := rules.EffectiveStage(rules.Free, s); got != rules.StageDone {
			t.Errorf("EffectiveStage(Free, %s) = %s, want done", s, got)
		}
		if got := rules.EffectiveStage(rules.Live, s); got != s {
			t.Errorf("EffectiveStage(Live, %s) = %s, want unchanged", s, got)
		}
	}
	if got := rules.EffectiveStage(rules.Live, rules.StageSendBack); got != rules.StageSendBack {
		t.Errorf("EffectiveStage(Live, send_back) = %s", got)
	}
	// Behaviour change: an under-ceiling send-back frees its files at once.
	stage := rules.EffectiveStage(rules.SendBackLiveness(1, 2), rules.StageOf(true, "sendBack"))
	if rules.HoldsFiles(stage, 0) {
		t.Error("under-ceiling send-back still holds its files at minute 0")
	}
}

// TestHoldsQuirks: the holds card's quirks against the claim card.
func TestHoldsQuirks(t *testing.T) {
	// An escalate row frees its files at once while its issue stays claimed.
	esc := rules.ClaimInput{Finished: true, Verdict: rules.VerdictEscalate, IdleMinutes: 0, Ceiling: 2, CriteriaRead: true, Criteria: 1}
	if rules.HoldsFiles(rules.StageOf(true, "escalate"), 0) || rules.ClaimOf(esc) != rules.ClaimAwaitingReview {
		t.Error("escalate: want files free and claim awaitingReview")
	}
	// An under-ceiling send-back fails at 60 but keeps its files until 120.
	sb := rules.ClaimInput{Finished: true, Verdict: rules.VerdictSendBack, IdleMinutes: 60, SendBacks: 1, Ceiling: 2, CriteriaRead: true, Criteria: 1}
	if rules.ClaimOf(sb) != rules.ClaimFailed || !rules.HoldsFiles(rules.StageOf(true, "sendBack"), 60) {
		t.Error("send-back at 60: want claim failed and files still held")
	}
	// empty and unknown words get the 30-minute hold; the claim card holds an
	// unknown word forever and fails empty at 30.
	for _, w := range []string{"empty", "escalated"} {
		s := rules.StageOf(true, w)
		if !rules.HoldsFiles(s, 29) || rules.HoldsFiles(s, 30) {
			t.Errorf("%s: want the 30-minute hold", w)
		}
	}
	unknown := rules.ClaimInput{Finished: true, Verdict: rules.VerdictOf("escalated"), IdleMinutes: math.MaxUint32, Ceiling: 2}
	empty := rules.ClaimInput{Finished: true, Verdict: rules.VerdictEmpty, IdleMinutes: 30, Ceiling: 2}
	if rules.ClaimOf(unknown) != rules.ClaimAwaitingReview || rules.ClaimOf(empty) != rules.ClaimFailed {
		t.Error("unknown word must hold its issue forever and empty fail at 30")
	}
}
