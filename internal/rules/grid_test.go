package rules_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/queen-app/queen-app/internal/rules"
)

// The grid's dimensions (docs/design.md, the claim card: 16 words x 27 idle clocks x 5
// send-back counts x 4 ceilings x 4 releases x 4 criteria x 4 x 4, and here
// both finished values on top).
var (
	gridWords = []string{
		"", "accept", "sendBack", "escalate", "wait", "failed", "cancelled", "empty", "stale-contract", "obsolete",
		"Accept", "SENDBACK", "__proto__", "constructor", "escalated", "0",
	}
	// A minute either side of every floor, 0, 1, a few between, huge and the saturation value.
	gridIdle = []uint32{
		0, 1, 15,
		29, 30, 31, 45,
		59, 60, 61, 90,
		119, 120, 121, 240,
		359, 360, 361, 1000,
		2879, 2880, 2881, 10000,
		100000, 1000000, math.MaxUint32 - 1, math.MaxUint32,
	}
	gridSendBacks = []uint32{0, 1, 2, 3, 4}
	gridCeilings  = []uint32{0, 1, 2, 3}
	gridReleases  = []uint32{0, 1, 2, 3}
	gridCriteria  = []struct {
		read bool
		n    uint32
	}{{false, 0}, {true, 0}, {true, 1}, {true, 2}}
	gridFree   = []uint32{0, 2, 3, 4} // either side of FREE_ATTEMPT_CEILING 3
	gridMisses = []uint32{0, 2, 3, 4} // either side of REVIEWER_MISS_CEILING 3
)

const gridRows = 2 * 16 * 27 * 5 * 4 * 4 * 4 * 4 * 4 // 4,423,680

// forEachGridRow calls fn for every row of the grid with the row's word and
// its card input (the verdict read by VerdictOf, as the boundary does).
func forEachGridRow(fn func(word string, in rules.ClaimInput)) {
	for _, word := range gridWords {
		v := rules.VerdictOf(word)
		for _, finished := range []bool{false, true} {
			for _, idle := range gridIdle {
				for _, sb := range gridSendBacks {
					for _, ceil := range gridCeilings {
						for _, rel := range gridReleases {
							for _, cr := range gridCriteria {
								for _, free := range gridFree {
									for _, miss := range gridMisses {
										fn(word, rules.ClaimInput{
											Finished: finished, Verdict: v, IdleMinutes: idle,
											SendBacks: sb, Ceiling: ceil, Releases: rel,
											CriteriaRead: cr.read, Criteria: cr.n,
											FreeAttempts: free, ReviewerMisses: miss,
										})
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

func refInput(word string, in rules.ClaimInput) refClaimInput {
	return refClaimInput{
		finished: in.Finished, verdictClass: refClassOfWord(word), idle: uint64(in.IdleMinutes),
		sendBacks: uint64(in.SendBacks), ceiling: uint64(in.Ceiling), releases: uint64(in.Releases),
		criteriaRead: in.CriteriaRead, criteria: uint64(in.Criteria),
		freeAttempts: uint64(in.FreeAttempts), reviewerMisses: uint64(in.ReviewerMisses),
	}
}

func mustRefTable(t testing.TB) *refClaimTable {
	t.Helper()
	ref, err := buildRefClaimTable()
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestReferenceTableCoversEveryCell proves the reference's rows are disjoint
// and complete before anything is compared against them.
func TestReferenceTableCoversEveryCell(t *testing.T) {
	ref := mustRefTable(t)
	for i, c := range ref.cells {
		if c < 0 || int(c) >= len(refClaimWords) {
			t.Fatalf("cell %d holds %d", i, c)
		}
	}
}

// TestClaimGrid compares ClaimOf with the reference on every grid row, as
// codes and as the words other programs see.
func TestClaimGrid(t *testing.T) {
	ref := mustRefTable(t)
	rows := 0
	var reached [6]int
	var mismatches []string
	forEachGridRow(func(word string, in rules.ClaimInput) {
		rows++
		got := rules.ClaimOf(in)
		want := ref.claim(refInput(word, in))
		if int(got) < len(reached) {
			reached[got]++
		}
		if got.String() != want || int(got) != refClaimCode(want) {
			if len(mismatches) < 20 {
				mismatches = append(mismatches, fmt.Sprintf("word %q %+v: got %d %q, want %q", word, in, got, got.String(), want))
			}
		}
	})
	if rows != gridRows {
		t.Errorf("grid has %d rows, want %d", rows, gridRows)
	}
	if rows < 2211840 {
		t.Errorf("grid has %d rows, fewer than the card's 2,211,840", rows)
	}
	for _, m := range mismatches {
		t.Error(m)
	}
	for c, n := range reached {
		if n == 0 {
			t.Errorf("no grid row reaches claim %d (%s)", c, refClaimWords[c])
		}
	}
	t.Logf("%d rows; claims reached %v", rows, reached)
}

// TestClaimAllVerdictCodes feeds every verdict code, the ones no word maps
// to included (11..255 behave like OTHER).
func TestClaimAllVerdictCodes(t *testing.T) {
	ref := mustRefTable(t)
	for code := 0; code < 256; code++ {
		for _, idle := range gridIdle {
			for _, sb := range gridSendBacks {
				for _, rel := range gridReleases {
					for _, cr := range gridCriteria {
						in := rules.ClaimInput{Finished: true, Verdict: rules.Verdict(code), IdleMinutes: idle,
							SendBacks: sb, Ceiling: 2, Releases: rel, CriteriaRead: cr.read, Criteria: cr.n}
						r := refClaimInput{finished: true, verdictClass: refClassOfCode(code), idle: uint64(idle),
							sendBacks: uint64(sb), ceiling: 2, releases: uint64(rel), criteriaRead: cr.read, criteria: uint64(cr.n)}
						if got, want := rules.ClaimOf(in).String(), ref.claim(r); got != want {
							t.Fatalf("verdict code %d %+v: got %s, want %s", code, in, got, want)
						}
					}
				}
			}
		}
	}
}

// TestVerdictGrid: every grid word and a few more read as the reference's class.
func TestVerdictGrid(t *testing.T) {
	for _, w := range append(gridWords, "ACCEPT", "accept ", " accept", "send_back", "stale_contract", "null", "undefined", "wait\x00") {
		if got, want := int(rules.VerdictOf(w)), refClassOfWord(w); got != want {
			t.Errorf("VerdictOf(%q) = %d, want %d", w, got, want)
		}
	}
}

var (
	kindGridSendBacks = []uint32{0, 1, 2, 3, 4, math.MaxUint32}
	kindGridCeilings  = []uint32{0, 1, 2, 3, 4, math.MaxUint32}
	kindGridCriteria  = []uint32{0, 1, 2, 7, math.MaxUint32}
	kindGridCounts    = []uint32{0, 1, 2, 3, 4, 9, math.MaxUint32}
)

// TestEscalationKindOfGrid compares escalation_kind_of with the reference's
// truth table over every counter either side of its ceiling.
func TestEscalationKindOfGrid(t *testing.T) {
	n := 0
	for _, sb := range kindGridSendBacks {
		for _, ceil := range kindGridCeilings {
			for _, read := range []bool{false, true} {
				for _, cr := range kindGridCriteria {
					for _, free := range kindGridCounts {
						for _, miss := range kindGridCounts {
							n++
							got := rules.EscalationKindOf(sb, ceil, read, cr, free, miss)
							want := refEscalationKindOf(uint64(sb), uint64(ceil), read, uint64(cr), uint64(free), uint64(miss))
							if int(got) != want {
								t.Fatalf("EscalationKindOf(%d, %d, %v, %d, %d, %d) = %d, want %s", sb, ceil, read, cr, free, miss, got, refKindNames[want])
							}
						}
					}
				}
			}
		}
	}
	if n != 6*6*2*5*7*7 {
		t.Fatalf("kind grid has %d rows", n)
	}
}

// TestEscalationKindGrid: the valve's escalation_kind and its recorded
// variant over every flag and recorded code.
func TestEscalationKindGrid(t *testing.T) {
	for _, cr := range kindGridCriteria {
		for mask := 0; mask < 8; mask++ {
			sbc, dead, gave := mask&1 != 0, mask&2 != 0, mask&4 != 0
			// The reference table reads flags; feed it counters that produce them.
			b := func(f bool) uint64 {
				if f {
					return 9
				}
				return 0
			}
			want := refEscalationKindOf(b(sbc), 1, true, uint64(cr), b(dead), b(gave))
			if got := rules.EscalationKind(cr, sbc, dead, gave); int(got) != want {
				t.Fatalf("EscalationKind(%d, %v, %v, %v) = %d, want %s", cr, sbc, dead, gave, got, refKindNames[want])
			}
			for rec := 0; rec < 256; rec++ {
				got := rules.RecordedEscalationKind(rules.Kind(rec), cr, sbc, dead, gave)
				if w := refRecordedKind(rec, want); int(got) != w {
					t.Fatalf("RecordedEscalationKind(%d, %d, %v, %v, %v) = %d, want %d", rec, cr, sbc, dead, gave, got, w)
				}
			}
		}
	}
}

// TestNextStepGrid: next_step and the valve's holds_files for every kind
// code (unknown ones too) around every valve floor.
func TestNextStepGrid(t *testing.T) {
	idles := []uint32{0, 1, 29, 30, 31, 59, 60, 61, 119, 120, 121, 2879, 2880, 2881, math.MaxUint32}
	for kind := 0; kind < 256; kind++ {
		for _, idle := range idles {
			for _, rel := range []uint32{0, 1, 2, 3, math.MaxUint32} {
				step := rules.NextStep(rules.Kind(kind), idle, rel)
				want := refNextStep(kind, uint64(idle), uint64(rel))
				if int(step) >= len(refStepNames) || refStepNames[step] != want {
					t.Fatalf("NextStep(%d, %d, %d) = %d, want %s", kind, idle, rel, step, want)
				}
				if got := rules.StepHoldsFiles(step); got != refStepHoldsFiles[want] {
					t.Fatalf("StepHoldsFiles(%s) = %v", want, got)
				}
			}
		}
	}
}

// TestHoldsGrid: holds_files for every stage code, the invalid ones
// included, at minutes around both graces and at the extremes.
func TestHoldsGrid(t *testing.T) {
	minutes := []uint32{0, 1, 29, 30, 31, 59, 60, 119, 120, 121, 2880, 4000000000, math.MaxUint32 - 1, math.MaxUint32}
	for stage := 0; stage < 256; stage++ {
		for _, m := range minutes {
			if got, want := rules.HoldsFiles(rules.HoldStage(stage), m), refHoldsFiles(stage, uint64(m)); got != want {
				t.Errorf("HoldsFiles(%d, %d) = %v, want %v", stage, m, got, want)
			}
		}
	}
}

// TestStageOfGrid: the stage word of every grid word, finished or not.
func TestStageOfGrid(t *testing.T) {
	for _, w := range append(gridWords, "Escalate", "send_back", "done", "working") {
		for _, fin := range []bool{false, true} {
			if got, want := rules.StageOf(fin, w).String(), refStageOf(fin, w); got != want {
				t.Errorf("StageOf(%v, %q) = %s, want %s", fin, w, got, want)
			}
		}
	}
}

// TestLivenessGrids: send_back_claim, accept_claim and held_stage on their
// full small domains, and the composition holds_files(held_stage(l, s), m).
func TestLivenessGrids(t *testing.T) {
	free := func(b bool) rules.Liveness {
		if b {
			return rules.Free
		}
		return rules.Live
	}
	for sb := uint32(0); sb <= 3; sb++ {
		for ceil := uint32(0); ceil <= 4; ceil++ {
			if got, want := rules.SendBackLiveness(sb, ceil), free(refSendBackFree(uint64(sb), uint64(ceil))); got != want {
				t.Errorf("SendBackLiveness(%d, %d) = %s, want %s", sb, ceil, got, want)
			}
		}
	}
	for _, read := range []bool{false, true} {
		for open := uint32(0); open <= 3; open++ {
			for merged := uint32(0); merged <= 3; merged++ {
				for closed := uint32(0); closed <= 3; closed++ {
					want := free(refAcceptFree(read, uint64(open), uint64(merged), uint64(closed)))
					if got := rules.AcceptLiveness(read, open, merged, closed); got != want {
						t.Errorf("AcceptLiveness(%v, %d, %d, %d) = %s, want %s", read, open, merged, closed, got, want)
					}
				}
			}
		}
	}
	for _, l := range []rules.Liveness{rules.Free, rules.Live} {
		for stage := 0; stage < 256; stage++ {
			got := rules.EffectiveStage(l, rules.HoldStage(stage))
			want := stage
			if l == rules.Free {
				want = 4 // HS_DONE
			}
			if int(got) != want {
				t.Errorf("EffectiveStage(%s, %d) = %d, want %d", l, stage, got, want)
			}
			for _, m := range []uint32{0, 29, 30, 119, 120, math.MaxUint32} {
				if got, want := rules.HoldsFiles(got, m), refHoldsFiles(want, uint64(m)); got != want {
					t.Errorf("HoldsFiles(EffectiveStage(%s, %d), %d) = %v, want %v", l, stage, m, got, want)
				}
			}
		}
	}
}

// TestPRAndConflictGrids: pr_step and conflict_step over every flag and
// counts either side of their ceilings.
func TestPRAndConflictGrids(t *testing.T) {
	prNames := []string{"NONE", "JUDGE", "WAIT_FIX", "CLOSE"}
	bools := []bool{false, true}
	for _, q := range bools {
		for _, ch := range bools {
			for _, j := range bools {
				for heads := uint32(0); heads <= 5; heads++ {
					for _, h := range []uint32{0, 1, 47, 48, 49, math.MaxUint32} {
						got := rules.PRStep(q, ch, j, heads, h)
						if want := refPRStep(q, ch, j, uint64(heads), uint64(h)); int(got) >= len(prNames) || prNames[got] != want {
							t.Fatalf("PRStep(%v, %v, %v, %d, %d) = %d, want %s", q, ch, j, heads, h, got, want)
						}
					}
				}
			}
		}
	}
	cNames := []string{"NONE", "WAIT", "UPDATE", "REDO", "CLOSE"}
	for _, q := range bools {
		for _, c := range bools {
			for _, f := range bools {
				for u := uint32(0); u <= 3; u++ {
					for _, h := range []uint32{0, 47, 48, 49} {
						for rel := uint32(0); rel <= 2; rel++ {
							for _, qr := range []uint32{0, 49, 50, 51, 52, math.MaxUint32} {
								got := rules.ConflictStep(q, c, f, u, h, rel, qr)
								want := refConflictStep(q, c, f, uint64(u), uint64(h), uint64(rel), uint64(qr))
								if int(got) >= len(cNames) || cNames[got] != want {
									t.Fatalf("ConflictStep(%v, %v, %v, %d, %d, %d, %d) = %d, want %s", q, c, f, u, h, rel, qr, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}
