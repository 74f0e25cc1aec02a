package rules_test

import (
	"math"
	"testing"

	"github.com/queen-app/queen-app/internal/rules"
)

// TestInReviewQueue: the derived vectors, then every flag one at a time.
func TestInReviewQueue(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name                      string
		started, finished, reaped bool
		review                    string
		open                      *bool
		want                      bool
	}{
		{"finished, null verdict, open", T, T, F, "", &yes, true},
		{"finished, wait, open unknown", T, T, F, "wait", nil, true},
		{"finished, null, open unknown", T, T, F, "", nil, true},
		{"accept", T, T, F, "accept", &yes, false},
		{"not finished", T, F, F, "", &yes, false},
		{"reaped", T, T, T, "wait", &yes, false},
		{"issue closed", T, T, F, "wait", &no, false},
		{"not started", F, T, F, "wait", &yes, false},
		{"sendBack", T, T, F, "sendBack", &yes, false},
		{"escalate", T, T, F, "escalate", nil, false},
		{"Wait is another word", T, T, F, "Wait", &yes, false},
	} {
		if got := rules.InReviewQueue(c.started, c.finished, c.review, c.reaped, c.open); got != c.want {
			t.Errorf("%s: InReviewQueue = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestKindOf: assigned > send-back > backlog.
func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		assigned, sentBack bool
		want               rules.CandidateKind
	}{
		{T, T, rules.KindAssigned},
		{T, F, rules.KindAssigned},
		{F, T, rules.KindSendBackCandidate},
		{F, F, rules.KindBacklog},
	} {
		if got := rules.KindOf(c.assigned, c.sentBack); got != c.want {
			t.Errorf("KindOf(%v, %v) = %d, want %d", c.assigned, c.sentBack, got, c.want)
		}
	}
	if rules.KindAssigned == rules.KindSendBackCandidate || rules.KindSendBackCandidate == rules.KindBacklog || rules.KindAssigned == rules.KindBacklog {
		t.Error("candidate kinds are not distinct")
	}
}

// TestAdmits: the backlog only while the review queue is empty.
func TestAdmits(t *testing.T) {
	for _, c := range []struct {
		k    rules.CandidateKind
		q    uint32
		want bool
	}{
		{rules.KindBacklog, 0, true},
		{rules.KindBacklog, 1, false},
		{rules.KindBacklog, 29, false},
		{rules.KindBacklog, math.MaxUint32, false},
		{rules.KindSendBackCandidate, 29, true},
		{rules.KindSendBackCandidate, 0, true},
		{rules.KindSendBackCandidate, math.MaxUint32, true},
		{rules.KindAssigned, 29, true},
		{rules.KindAssigned, 0, true},
		{rules.KindAssigned, math.MaxUint32, true},
	} {
		if got := rules.Admits(c.k, c.q); got != c.want {
			t.Errorf("Admits(%d, %d) = %v, want %v", c.k, c.q, got, c.want)
		}
	}
}

// TestRoundRefused: refused when there was something and nothing was admitted.
func TestRoundRefused(t *testing.T) {
	for _, c := range []struct {
		cand, adm uint32
		want      bool
	}{{3, 0, true}, {1, 0, true}, {0, 0, false}, {3, 1, false}, {3, 3, false}, {1, 1, false}} {
		if got := rules.RoundRefused(c.cand, c.adm); got != c.want {
			t.Errorf("RoundRefused(%d, %d) = %v, want %v", c.cand, c.adm, got, c.want)
		}
	}
	const want = "29 dispatches wait in review; the backlog is closed until the review queue is empty"
	if got := rules.RefusalText(29); got != want {
		t.Errorf("RefusalText(29) = %q, want %q", got, want)
	}
}
