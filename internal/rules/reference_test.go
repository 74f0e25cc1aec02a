package rules_test

// An independent reference for the cards, written as decision tables from
// docs/design.md (The cards: the holds card, the claim card and the valve).
//
// This file deliberately does not import internal/rules: Go imports are per
// file, so nothing here can call a production helper or read a production
// constant. Every number and word below is copied from the reference. The
// production code is a first-match switch over comparisons; this is a set of
// disjoint rows over bands of the inputs, checked at build time to cover
// every cell exactly once, so one mistake cannot hide in both.

import (
	"fmt"
	"strings"
)

// Numbers of the reference, copied from docs/design.md.
const (
	refRetryFloor     = 30   // RETRY_FLOOR_MINUTES, the empty floor, the valve's 30-minute path
	refCeilingFloor   = 60   // CEILING_FLOOR_MINUTES = SEND_BACK_FLOOR_MINUTES
	refBackfillWindow = 120  // BACKFILL_WINDOW_MINUTES
	refFrozenFloor    = 360  // WAIT_FROZEN_FLOOR_MINUTES
	refPolicyHold     = 2880 // POLICY_HOLD_MINUTES
	refMaxReleases    = 1    // MAX_RELEASES
	refFreeCeiling    = 3    // FREE_ATTEMPT_CEILING
	refMissCeiling    = 3    // REVIEWER_MISS_CEILING
	refAwaitingHold   = 30   // AWAITING_HOLD_MINUTES
	refSendBackHold   = 120  // SEND_BACK_HOLD_MINUTES
)

// The claim words other programs see, at their codes.
var refClaimWords = []string{"running", "accepted", "rejected", "awaitingReview", "failed", "cancelled"}

// refClaimCode is the code of a claim word; -1 for a word that is no claim.
func refClaimCode(word string) int {
	for i, w := range refClaimWords {
		if w == word {
			return i
		}
	}
	return -1
}

// Verdict classes of the reference: one per recognised word, plus other.
const (
	vcNone = iota
	vcAccept
	vcSendBack
	vcEscalate
	vcWait
	vcFailed
	vcCancelled
	vcEmpty
	vcStale
	vcObsolete
	vcOther
	vcCount
)

// refVerdictClass reads a review_state word by map lookup (production scans
// an array); a Go map has no prototype, so "__proto__" is just a key miss.
var refVerdictClass = map[string]int{
	"":               vcNone,
	"accept":         vcAccept,
	"sendBack":       vcSendBack,
	"escalate":       vcEscalate,
	"wait":           vcWait,
	"failed":         vcFailed,
	"cancelled":      vcCancelled,
	"empty":          vcEmpty,
	"stale-contract": vcStale,
	"obsolete":       vcObsolete,
}

func refClassOfWord(word string) int {
	if c, ok := refVerdictClass[word]; ok {
		return c
	}
	return vcOther
}

// refClassOfCode reads a verdict code (trios numbering); 11 and up are other.
func refClassOfCode(code int) int {
	if code >= 0 && code < vcOther {
		return code
	}
	return vcOther
}

// refIdleBand bands idle minutes by the claim card's floors: the number of
// floors already reached. 0: <30, 1: 30..59, 2: 60..119, 3: 120..359, 4: >=360.
func refIdleBand(idle uint64) int {
	band := 0
	for _, floor := range []uint64{refRetryFloor, refCeilingFloor, refBackfillWindow, refFrozenFloor} {
		if idle >= floor {
			band++
		}
	}
	return band
}

const idleBands = 5

// Criteria bands.
const (
	critUnread = iota // column not read: counts as one criterion, never none
	critZero          // read, no criteria
	critSome          // read, at least one
	critBands
)

func refCriteriaBand(read bool, n uint64) int {
	switch {
	case !read:
		return critUnread
	case n == 0:
		return critZero
	default:
		return critSome
	}
}

// set is a bit set over the values of one dimension; all matches any value.
type set uint32

const all set = ^set(0)

func of(values ...int) set {
	var s set
	for _, v := range values {
		s |= 1 << uint(v)
	}
	return s
}

func (s set) has(v int) bool { return s&(1<<uint(v)) != 0 }

// Idle band sets used by the rows.
var (
	idleBelow30  = of(0)
	idleFrom30   = of(1, 2, 3, 4)
	idleBelow60  = of(0, 1)
	idleFrom60   = of(2, 3, 4)
	idleBelow120 = of(0, 1, 2)
	idleFrom120  = of(3, 4)
	idleBelow360 = of(0, 1, 2, 3)
	idleFrom360  = of(4)
)

// Relation of send_backs to the ceiling, and release bands.
var (
	underCeiling = of(0) // send_backs < ceiling
	atCeiling    = of(1) // send_backs >= ceiling
	noRelease    = of(0) // releases < MAX_RELEASES
	released     = of(1) // releases >= MAX_RELEASES
	finishedNo   = of(0)
	finishedYes  = of(1)
	critNonzero  = of(critUnread, critSome)
)

// claimRow is one row of the claim decision table: the claim word for every
// cell whose coordinates are in all six sets.
type claimRow struct {
	fin, verdict, idle, ceiling, releases, criteria set
	claim                                           string
	why                                             string
}

// refClaimRows are the claim card's expanded tables (docs/design.md), written so that
// no two rows share a cell.
var refClaimRows = []claimRow{
	{finishedNo, all, all, all, all, all, "running", "not finished"},

	{finishedYes, of(vcAccept), all, all, all, all, "accepted", "accept"},
	{finishedYes, of(vcFailed, vcCancelled, vcStale), all, all, all, all, "failed", "failed/cancelled/stale-contract"},
	{finishedYes, of(vcObsolete), all, all, all, all, "cancelled", "obsolete"},
	{finishedYes, of(vcEmpty), idleBelow30, all, all, all, "rejected", "empty inside its floor"},
	{finishedYes, of(vcEmpty), idleFrom30, all, all, all, "failed", "empty past its floor"},

	// Send-back: the full send-back grid.
	{finishedYes, of(vcSendBack), idleFrom60, underCeiling, all, all, "failed", "send-back under ceiling past 60"},
	{finishedYes, of(vcSendBack), idleBelow60, underCeiling, noRelease, all, "rejected", "send-back under ceiling inside 60"},
	{finishedYes, of(vcSendBack), idleBelow60, underCeiling, released, all, "cancelled", "spent-release quirk"},
	{finishedYes, of(vcSendBack), all, atCeiling, released, all, "cancelled", "send-back at ceiling, release spent"},
	{finishedYes, of(vcSendBack), idleFrom60, atCeiling, noRelease, all, "failed", "send-back at ceiling released at 60"},
	{finishedYes, of(vcSendBack), idleBelow60, atCeiling, noRelease, all, "rejected", "send-back at ceiling held"},

	// Escalate: the expanded escalate table, kind in the valve's order.
	{finishedYes, of(vcEscalate), idleBelow120, all, all, of(critZero), "awaitingReview", "no criteria: backfill"},
	{finishedYes, of(vcEscalate), idleFrom120, all, all, of(critZero), "cancelled", "no criteria: backfill window over"},
	{finishedYes, of(vcEscalate), all, atCeiling, released, critNonzero, "cancelled", "ceiling kind, release spent"},
	{finishedYes, of(vcEscalate), idleFrom60, atCeiling, noRelease, critNonzero, "failed", "ceiling kind released at 60"},
	{finishedYes, of(vcEscalate), idleBelow60, atCeiling, noRelease, critNonzero, "awaitingReview", "ceiling kind held"},
	{finishedYes, of(vcEscalate), all, underCeiling, released, critNonzero, "cancelled", "30-minute kind, release spent"},
	{finishedYes, of(vcEscalate), idleFrom30, underCeiling, noRelease, critNonzero, "failed", "30-minute kind released"},
	{finishedYes, of(vcEscalate), idleBelow30, underCeiling, noRelease, critNonzero, "awaitingReview", "30-minute kind held"},

	// No verdict or a wait: frozen after 360 under the ceiling, else held with no clock.
	{finishedYes, of(vcNone, vcWait), idleFrom360, underCeiling, all, all, "failed", "wait frozen past 360"},
	{finishedYes, of(vcNone, vcWait), idleBelow360, underCeiling, all, all, "awaitingReview", "wait inside 360"},
	{finishedYes, of(vcNone, vcWait), all, atCeiling, all, all, "awaitingReview", "wait at ceiling: no clock"},

	{finishedYes, of(vcOther), all, all, all, all, "awaitingReview", "unknown word: no clock"},
}

// refClaimTable is refClaimRows compiled into a dense array over the bands.
type refClaimTable struct {
	cells []int8 // claim code, or -1 where no row applies
}

const refClaimCells = 2 * vcCount * idleBands * 2 * 2 * critBands

func refClaimIndex(fin, verdict, idle, ceiling, releases, criteria int) int {
	return ((((fin*vcCount+verdict)*idleBands+idle)*2+ceiling)*2+releases)*critBands + criteria
}

// buildRefClaimTable expands the rows and fails unless every cell is covered
// by exactly one row.
func buildRefClaimTable() (*refClaimTable, error) {
	t := &refClaimTable{cells: make([]int8, refClaimCells)}
	owner := make([]int, refClaimCells)
	for i := range t.cells {
		t.cells[i] = -1
		owner[i] = -1
	}
	var problems []string
	for r, row := range refClaimRows {
		code := refClaimCode(row.claim)
		if code < 0 {
			return nil, fmt.Errorf("reference row %d (%s): %q is no claim word", r, row.why, row.claim)
		}
		for fin := 0; fin < 2; fin++ {
			for v := 0; v < vcCount; v++ {
				for idle := 0; idle < idleBands; idle++ {
					for c := 0; c < 2; c++ {
						for rel := 0; rel < 2; rel++ {
							for cr := 0; cr < critBands; cr++ {
								if !(row.fin.has(fin) && row.verdict.has(v) && row.idle.has(idle) &&
									row.ceiling.has(c) && row.releases.has(rel) && row.criteria.has(cr)) {
									continue
								}
								i := refClaimIndex(fin, v, idle, c, rel, cr)
								if owner[i] >= 0 {
									problems = append(problems, fmt.Sprintf("cell fin=%d v=%d idle=%d ceil=%d rel=%d crit=%d in rows %d and %d", fin, v, idle, c, rel, cr, owner[i], r))
									continue
								}
								owner[i] = r
								t.cells[i] = int8(code)
							}
						}
					}
				}
			}
		}
	}
	for i, o := range owner {
		if o < 0 {
			problems = append(problems, fmt.Sprintf("cell %d in no row", i))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("reference claim table: %s", strings.Join(problems, "; "))
	}
	return t, nil
}

// refClaimInput is a row's input to the reference, in plain integers.
type refClaimInput struct {
	finished       bool
	verdictClass   int
	idle           uint64
	sendBacks      uint64
	ceiling        uint64
	releases       uint64
	criteriaRead   bool
	criteria       uint64
	freeAttempts   uint64
	reviewerMisses uint64
}

// claim looks the input up by its bands and returns the claim word.
func (t *refClaimTable) claim(in refClaimInput) string {
	fin := 0
	if in.finished {
		fin = 1
	}
	c := 0
	if in.sendBacks >= in.ceiling {
		c = 1
	}
	rel := 0
	if in.releases >= refMaxReleases {
		rel = 1
	}
	code := t.cells[refClaimIndex(fin, in.verdictClass, refIdleBand(in.idle), c, rel, refCriteriaBand(in.criteriaRead, in.criteria))]
	if code < 0 {
		return "?"
	}
	return refClaimWords[code]
}

// Escalation kinds (codes never move) and the kind table of the valve.
var refKindNames = []string{"UNRECORDED", "NO_CRITERIA", "SEND_BACK_CEILING", "DEAD_LETTER", "REVIEWER_GAVE_UP",
	"EMPTY_ACCEPT", "BEYOND_THE_PATCH", "BASE_TRUTH_ALONE", "EFFECT_GAVE_UP"}

func refKindCode(name string) int {
	for i, n := range refKindNames {
		if n == name {
			return i
		}
	}
	panic("no kind " + name)
}

// refEscalationKindOf applies escalation_kind_of as a truth table over
// (criteria counted as none?, at ceiling?, dead letter?, reviewer gave up?).
func refEscalationKindOf(sendBacks, ceiling uint64, read bool, criteria, free, misses uint64) int {
	none := read && criteria == 0 // unread counts as one criterion
	key := [4]bool{none, sendBacks >= ceiling, free >= refFreeCeiling, misses >= refMissCeiling}
	return refKindCode(refKindTable[key])
}

// refKindTable lists all sixteen flag combinations explicitly.
var refKindTable = map[[4]bool]string{
	// none, ceiling, dead, gave
	{true, false, false, false}:  "NO_CRITERIA",
	{true, false, false, true}:   "NO_CRITERIA",
	{true, false, true, false}:   "NO_CRITERIA",
	{true, false, true, true}:    "NO_CRITERIA",
	{true, true, false, false}:   "NO_CRITERIA",
	{true, true, false, true}:    "NO_CRITERIA",
	{true, true, true, false}:    "NO_CRITERIA",
	{true, true, true, true}:     "NO_CRITERIA",
	{false, true, false, false}:  "SEND_BACK_CEILING",
	{false, true, false, true}:   "SEND_BACK_CEILING",
	{false, true, true, false}:   "SEND_BACK_CEILING",
	{false, true, true, true}:    "SEND_BACK_CEILING",
	{false, false, true, false}:  "DEAD_LETTER",
	{false, false, true, true}:   "DEAD_LETTER",
	{false, false, false, true}:  "REVIEWER_GAVE_UP",
	{false, false, false, false}: "UNRECORDED",
}

// Valve steps in words, at their codes.
var refStepNames = []string{"HOLD", "RELEASE", "BACKFILL", "CLOSE"}

// refNextStep is next_step by kind family: backfill kinds (1, 6, 7) on the
// 120-minute window whatever the releases; the ceiling kind (2) on 60;
// every other code, unknown ones included, on 30.
func refNextStep(kind int, idle, releases uint64) string {
	switch {
	case kind == 1 || kind == 6 || kind == 7:
		if idle >= refBackfillWindow {
			return "CLOSE"
		}
		return "BACKFILL"
	case releases >= refMaxReleases:
		return "CLOSE"
	}
	floor := uint64(refRetryFloor)
	if kind == 2 {
		floor = refCeilingFloor
	}
	if idle >= floor {
		return "RELEASE"
	}
	return "HOLD"
}

// refStepHoldsFiles: a hold or a backfill keeps the files.
var refStepHoldsFiles = map[string]bool{"HOLD": true, "BACKFILL": true, "RELEASE": false, "CLOSE": false}

// refRecordedKind: a recorded-only kind (5..8) speaks where counters say UNRECORDED.
func refRecordedKind(recorded int, countersKind int) int {
	if countersKind == 0 && recorded >= 5 && recorded <= 8 {
		return recorded
	}
	return countersKind
}

// Hold stages and their grace: -1 holds forever, 0 never holds.
var refStageWords = []string{"working", "send_back", "awaiting", "escalated", "done"}

var refStageGrace = map[int]int64{
	0: -1,              // working
	1: refSendBackHold, // send_back
	2: refAwaitingHold, // awaiting
	3: 0,               // escalated
	4: 0,               // done
}

func refHoldsFiles(stage int, minutes uint64) bool {
	grace, ok := refStageGrace[stage]
	switch {
	case !ok:
		return false // any other code
	case grace < 0:
		return true
	default:
		return minutes < uint64(grace)
	}
}

// refStageOf is the holds caller's holdStage as a word table.
var refStageOfWord = map[string]string{
	"sendBack":       "send_back",
	"escalate":       "escalated",
	"accept":         "done",
	"failed":         "done",
	"cancelled":      "done",
	"obsolete":       "done",
	"stale-contract": "done",
}

func refStageOf(finished bool, word string) string {
	if !finished {
		return "working"
	}
	if s, ok := refStageOfWord[word]; ok {
		return s
	}
	return "awaiting"
}

// refSendBackFree: send_back_claim is FREE exactly below the ceiling.
func refSendBackFree(sendBacks, ceiling uint64) bool { return ceiling > sendBacks }

// refAcceptFree: accept_claim as its five-row table.
func refAcceptFree(read bool, open, merged, closedUnmerged uint64) bool {
	switch {
	case !read:
		return false
	case merged > 0:
		return false
	case open > 0:
		return false
	default:
		return closedUnmerged > 0
	}
}

// refPRStep is pr_step in words.
func refPRStep(queen, changesOnHead, judged bool, changesHeads, hours uint64) string {
	if !queen {
		return "NONE"
	}
	if !judged {
		return "JUDGE"
	}
	if !changesOnHead {
		return "NONE"
	}
	if changesHeads >= 3 || hours >= 48 { // more than PR_FIX_ATTEMPTS (2); PR_FIX_WINDOW_HOURS (48)
		return "CLOSE"
	}
	return "WAIT_FIX"
}

// refConflictStep is conflict_step in words.
func refConflictStep(queen, conflicting, updateFailed bool, updates, hours, releases, queued uint64) string {
	if !queen || !conflicting {
		return "NONE"
	}
	redo := updateFailed || updates >= 2 || hours >= 48 // CONFLICT_UPDATES, CONFLICT_WAIT_HOURS
	if redo {
		if releases >= refMaxReleases {
			return "CLOSE"
		}
		return "REDO"
	}
	if queued >= 51 { // more than UPDATE_QUEUE_CEILING (50)
		return "WAIT"
	}
	return "UPDATE"
}
