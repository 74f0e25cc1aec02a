package dispatch

import (
	"testing"
	"time"
)

func TestExportStateSameComparesTheOutcomeOnly(t *testing.T) {
	at := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)
	base := ExportState{State: "retrying", Attempts: 1, LastError: "GET /queen/export/1: status 503", Version: 4}
	same := base
	same.Attempts, same.LastError, same.Version, same.At = 7, "GET /queen/export/1: status 504", 9, &at
	if !base.Same(same) {
		t.Fatalf("%+v and %+v differ only in bookkeeping", base, same)
	}
	for _, change := range []func(s *ExportState){
		func(s *ExportState) { s.State = "failed" },
		func(s *ExportState) { s.PushedHead = "abc" },
		func(s *ExportState) { s.PRNumber = 17 },
		func(s *ExportState) { s.Refusal = "workflow: touches ci.yml" },
	} {
		other := base
		change(&other)
		if base.Same(other) {
			t.Errorf("%+v and %+v record different outcomes", base, other)
		}
	}
}

func TestSameDispatchIsTheDispatchTime(t *testing.T) {
	t1 := time.Date(2026, 10, 11, 10, 2, 0, 0, time.UTC)
	t1Elsewhere := t1.In(time.FixedZone("CEST", 2*3600))
	t2 := t1.Add(time.Hour)
	for _, c := range []struct {
		a, b *time.Time
		want bool
	}{
		{&t1, &t1Elsewhere, true},
		{&t1, &t2, false},
		{nil, nil, true},
		{&t1, nil, false},
		{nil, &t1, false},
	} {
		if got := (&Row{DispatchedAt: c.a}).SameDispatch(&Row{DispatchedAt: c.b}); got != c.want {
			t.Errorf("SameDispatch(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
