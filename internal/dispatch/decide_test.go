package dispatch

import (
	"strings"
	"testing"
	"time"
)

// The claim card sees every counter of the row: an escalation's path
// depends on the send-backs against the ceiling, the releases spent and
// whether the criteria were read (docs/design.md, the review valve: the ceiling kind waits 60
// minutes, a spent release closes, no criteria backfills for 120, the rest
// release after 30).
func TestDecideReadsEveryCounterOfTheRow(t *testing.T) {
	esc := `"finished_at":"` + ago(45) + `","review_state":"escalate"`
	for _, c := range []struct {
		name, body, claim string
	}{
		{"criteria read, 45m idle: released", `{` + esc + `,"criteria":["builds"]}`, "failed"},
		{"criteria unread counts as one: released", `{` + esc + `}`, "failed"},
		{"at the send-back ceiling: waits 60m", `{` + esc + `,"criteria":["builds"],"send_backs":2,"ceiling":2}`, "awaitingReview"},
		{"release spent: closed", `{` + esc + `,"criteria":["builds"],"ceiling_releases":1}`, "cancelled"},
		{"zero criteria read: backfills", `{` + esc + `,"criteria":[]}`, "awaitingReview"},
	} {
		if v := ViewOf(row(t, c.body), now); v.Claim != c.claim {
			t.Errorf("%s: claim %s, want %s", c.name, v.Claim, c.claim)
		}
	}
	r := row(t, `{`+esc+`,"criteria":["a","b"],"free_attempts":3,"reviewer_misses":1,"ceiling_releases":1}`)
	text := strings.Join(Explain(r, now), "\n")
	for _, want := range []string{"criteria=2", "free_attempts=3 reviewer_misses=1", "releases=1", "idle=45m"} {
		if !strings.Contains(text, want) {
			t.Errorf("explain lacks %q:\n%s", want, text)
		}
	}
}

// An unfinished row is working whatever its verdict word says: neither
// rule applies to it, so nothing frees it.
func TestAWorkingRowHasNoRuleToFreeIt(t *testing.T) {
	for _, body := range []string{
		`{"started":true,"review_state":"accept","owned_paths":["a"]}`,
		`{"started":true,"review_state":"sendBack","send_backs":1,"owned_paths":["a"]}`,
	} {
		r := row(t, body)
		r.PRs = &PRState{Read: true, ClosedUnmerged: 1}
		d := Decide(r, now)
		if d.Accept != nil || d.SendBack != nil || d.RuleFrees() != "" {
			t.Errorf("%s: accept %v send_back %v frees %q; want no rule", body, d.Accept, d.SendBack, d.RuleFrees())
		}
		if v := ViewOf(r, now); v.Stage != "working" || !v.HoldsFiles || v.HeldUntil != nil {
			t.Errorf("%s: %+v, want working and held with no end", body, v)
		}
	}
}

// RuleFrees names the rule that answers free (the replay's freeing reads
// it), and none where every rule answers live.
func TestRuleFreesNamesTheRuleThatFrees(t *testing.T) {
	sendBack := func(n int) string {
		return `{"finished_at":"` + ago(10) + `","review_state":"sendBack","send_backs":` + string(rune('0'+n)) + `,"ceiling":2}`
	}
	accept := `{"finished_at":"` + ago(10) + `","review_state":"accept"}`
	for _, c := range []struct {
		name, body string
		prs        *PRState
		want       string
	}{
		{"send-back under the ceiling", sendBack(1), nil, RuleSendBack},
		{"send-back at the ceiling", sendBack(2), nil, ""},
		{"accept, PR closed unmerged", accept, &PRState{Read: true, ClosedUnmerged: 1}, RuleAccept},
		{"accept, PR open", accept, &PRState{Read: true, Open: 1, ClosedUnmerged: 1}, ""},
		{"accept, PRs unread", accept, nil, ""},
		{"wait", `{"finished_at":"` + ago(10) + `","review_state":"wait"}`, nil, ""},
	} {
		r := row(t, c.body)
		r.PRs = c.prs
		if got := Decide(r, now).RuleFrees(); got != c.want {
			t.Errorf("%s: RuleFrees = %q, want %q", c.name, got, c.want)
		}
	}
}

// would_free is a free the flag held back: the row stays live, claims its
// issue and holds its paths, and the view shows the would-be free apart
// from a recorded one.
func TestAWouldFreeRowStaysLive(t *testing.T) {
	r := row(t, `{"finished_at":"`+ago(10)+`","review_state":"sendBack","send_backs":1,"owned_paths":["a/b.rs"]}`)
	r.WouldFree = &FreeRecord{At: now, Rule: RuleSendBack, Evidence: "send_backs 1 < ceiling 2"}
	v := ViewOf(r, now)
	if !v.Live || !v.ClaimsIssue || !v.HoldsFiles || len(v.HeldPaths) != 1 || v.Stage != "send_back" {
		t.Fatalf("a would_free row: %+v, want live and holding", v)
	}
	if v.Freed != nil || v.WouldFree == nil || v.WouldFree.Rule != RuleSendBack || deref(v.SendBackClaim) != "free" {
		t.Fatalf("freed %v would_free %v send_back_claim %q", v.Freed, v.WouldFree, deref(v.SendBackClaim))
	}
}

// An awaiting row (no verdict yet, or wait) is held for 30 minutes from
// finished_at (docs/design.md, the holds card), a send-back for 120.
func TestHeldUntilOfAnAwaitingRow(t *testing.T) {
	r := row(t, `{"finished_at":"`+ago(10)+`","review_state":"wait","owned_paths":["a"]}`)
	v := ViewOf(r, now)
	if v.HeldUntil == nil || !v.HeldUntil.Equal(now.Add(20*time.Minute)) {
		t.Fatalf("held_until = %v, want finished_at + 30m", v.HeldUntil)
	}
}

// A new dispatch starts fresh: nothing recorded for the earlier attempt
// survives it.
func TestResetRecordedDropsEverythingRecorded(t *testing.T) {
	r := New("hive/t27", 5)
	r.PRs = &PRState{Read: true, ClosedUnmerged: 1}
	r.Freed = &FreeRecord{At: now, Rule: RuleAccept}
	r.WouldFree = &FreeRecord{At: now, Rule: RuleSendBack}
	r.Export = &ExportState{State: "refused", Refusal: "workflow: x"}
	r.ResetRecorded()
	if r.PRs != nil || r.Freed != nil || r.WouldFree != nil || r.Export != nil {
		t.Fatalf("after a reset: prs %v freed %v would_free %v export %v", r.PRs, r.Freed, r.WouldFree, r.Export)
	}
}

// Any PR in any state counts, and so does a listed number: the export
// refuses a branch that has one.
func TestPRStateAnyCountsEveryState(t *testing.T) {
	for _, c := range []struct {
		p    PRState
		want bool
	}{
		{PRState{Read: true}, false},
		{PRState{Read: true, Open: 1}, true},
		{PRState{Read: true, Merged: 1}, true},
		{PRState{Read: true, ClosedUnmerged: 1}, true},
		{PRState{Read: true, Numbers: []int{7}}, true},
	} {
		if got := c.p.Any(); got != c.want {
			t.Errorf("%+v.Any() = %t, want %t", c.p, got, c.want)
		}
	}
}
