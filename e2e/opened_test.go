package e2e

import (
	"testing"
)

// Issue 22: a PR opened on queen-<N> after accept_claim freed the claim was
// not looked at until the sweep (the receiver acted on closed and reopened
// only), so explain and the audit showed the free on an older read. The
// opened delivery now re-reads the branch at once: the claim is live again
// on a read that shows the new PR.
func TestFreeOpenedAfterFreeIsLiveAgain(t *testing.T) {
	t.Parallel()
	f := newClosedPRStack(t, 9821, 1221)
	f.deliverPR(9821, 1221, "closed", false, "d-close-9821")
	frCheckFreed(t, f.waitFreed(9821), "d-close-9821")

	f.openPR(9821, 1222) // a new PR on the same branch
	f.waitDone(f.deliverPR(9821, 1222, "opened", false, "d-open-9821"))
	v := f.claim(9821)
	if !v.Live || !v.ClaimsIssue || v.Freed != nil || v.WouldFree != nil {
		t.Fatalf("after the new PR opened: live %v claims_issue %v freed %+v would_free %+v; want live again",
			v.Live, v.ClaimsIssue, v.Freed, v.WouldFree)
	}
	if n := v.decisions("unfree"); n != 1 {
		t.Fatalf("history shows %d unfrees, want 1", n)
	}
	r := v.lastRead()
	if r == nil || r.Source.Kind != "webhook" || r.Source.Delivery != "d-open-9821" || r.Inputs.PRs.Open != 1 {
		t.Fatalf("the newest read %+v, want the opened delivery's, showing the open PR", r)
	}
}
