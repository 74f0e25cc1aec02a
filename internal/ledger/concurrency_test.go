package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
)

type ack struct {
	issue   int64
	version int64
	action  string
	digest  string
}

// 50 goroutines race upserts, PR records, new dispatches and overrides on
// four rows. Afterwards each row's history must explain its final state
// and hold every write that was acknowledged.
func TestConcurrentTransitionsKeepEveryAcknowledgedWrite(t *testing.T) {
	checkConcurrentTransitions(t, newFixture(t, concurrentOptions))
}

var concurrentOptions = Options{FreeClosedPR: true, ReleaseDeadClaims: true, HistoryLen: 1 << 20, MaxRetries: 64}

func checkConcurrentTransitions(t *testing.T, f *fixture) {
	const rows, workers, opsEach = 4, 50, 20
	for i := int64(1); i <= rows; i++ {
		body := accepted
		if i%2 == 0 {
			body = sentBack
		}
		f.upsert(t, repo, i, body)
	}
	var (
		mu        sync.Mutex
		acks      = []ack{}
		conflicts atomic.Int64
		dispatchN atomic.Int64
		wg        sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for op := 0; op < opsEach; op++ {
				issue := 1 + rng.Int64N(rows)
				var res Result
				var err error
				switch rng.IntN(9) {
				case 0, 1:
					res, err = f.l.RecordPRs(f.ctx, repo, issue, prs(0, 0, 1+rng.Uint32N(2)), audit.Webhook(fmt.Sprintf("close-%d-%d", seed, op)))
				case 2:
					res, err = f.l.RecordPRs(f.ctx, repo, issue, prs(1, 0, 1), audit.Webhook(fmt.Sprintf("reopen-%d-%d", seed, op)))
				case 3:
					res, err = f.l.RecordPRs(f.ctx, repo, issue, prs(0, 1, 0), audit.Webhook(fmt.Sprintf("merge-%d-%d", seed, op)))
				case 4:
					at := t0.Add(-3*time.Hour + time.Duration(dispatchN.Add(1))*time.Second).Format(time.RFC3339)
					word := []string{"accept", "sendBack"}[rng.IntN(2)]
					body := fmt.Sprintf(`{"dispatched_at": %q, "finished_at": "2026-10-10T19:50:00Z", "review_state": %q, "send_backs": %d}`, at, word, rng.IntN(3))
					res, err = f.l.Upsert(f.ctx, repo, issue, obj(body), audit.API("queen"))
				case 5:
					res, err = f.l.Upsert(f.ctx, repo, issue, obj(fmt.Sprintf(`{"send_backs": %d}`, rng.IntN(3))), audit.API("queen"))
				case 6:
					res, err = f.l.Free(f.ctx, repo, issue, audit.Manual("alice", "by hand"), 0)
				case 7:
					res, err = f.l.Keep(f.ctx, repo, issue, audit.Manual("bob", "wait for it"), 0)
				case 8:
					res, err = f.l.Evaluate(f.ctx, repo, issue, audit.Sweep(""))
				}
				if errors.Is(err, ErrConflict) {
					conflicts.Add(1)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if res.Wrote() {
					mu.Lock()
					acks = append(acks, ack{issue, res.Entry.Version, res.Entry.Action + "/" + res.Entry.Decision, res.Entry.Outcome.Digest})
					mu.Unlock()
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged writes, %d re-decided after a conflict, %d calls gave up", len(acks), f.l.Conflicts(), conflicts.Load())
	if f.l.Conflicts() == 0 {
		t.Fatal("no write ever raced another: the test exercised nothing")
	}
	if len(acks) < workers*opsEach/4 {
		t.Fatalf("only %d acknowledged writes of %d calls", len(acks), workers*opsEach)
	}

	byVersion := map[[2]int64]Entry{}
	total := 0
	for issue := int64(1); issue <= rows; issue++ {
		rec := f.get(t, repo, issue)
		h := f.history(t, repo, issue)
		total += len(h)
		if int64(len(h)) != rec.Version {
			t.Fatalf("#%d: %d history entries for version %d", issue, len(h), rec.Version)
		}
		for i, e := range h {
			if want := rec.Version - int64(i); e.Version != want {
				t.Fatalf("#%d: history entry %d has version %d; want %d (no gaps, no repeats)", issue, i, e.Version, want)
			}
			byVersion[[2]int64{issue, e.Version}] = e
		}
		last := h[0].Outcome
		if last.Digest != rec.Digest() || last.Live != (rec.Freed == nil) || last.Kept != (rec.Pin != nil) ||
			last.Freed != ruleOf(rec.Freed) || last.WouldFree != ruleOf(rec.WouldFree) {
			t.Fatalf("#%d: last entry %+v does not describe the row (digest %s, freed %+v, pin %+v)", issue, last, rec.Digest(), rec.Freed, rec.Pin)
		}
		replay(t, issue, h)
	}
	for _, a := range acks {
		e, ok := byVersion[[2]int64{a.issue, a.version}]
		if !ok || e.Action+"/"+e.Decision != a.action || e.Outcome.Digest != a.digest {
			t.Fatalf("acknowledged write %+v is not in the history (found %+v)", a, e)
		}
	}
	trail, err := f.l.Audit(f.ctx, int64(total+10))
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != total {
		t.Fatalf("audit stream has %d entries, histories %d", len(trail), total)
	}
	for _, e := range trail {
		h, ok := byVersion[[2]int64{e.Issue, e.Version}]
		if !ok || h.Outcome.Digest != e.Outcome.Digest || h.Action != e.Action {
			t.Fatalf("audit entry %+v differs from history %+v", e, h)
		}
	}
}

// replay walks a row's history oldest first and checks that every free by
// accept_claim stood on a recorded read of closed-unmerged PRs only, that a
// pin was never followed by a rule's free, and that live follows freed.
func replay(t *testing.T, issue int64, newestFirst []Entry) {
	t.Helper()
	var pr *dispatch.PRState
	kept := false
	for i := len(newestFirst) - 1; i >= 0; i-- {
		e := newestFirst[i]
		switch e.Action {
		case ActionUpsert:
			var in upsertInputs
			if err := json.Unmarshal(e.Inputs, &in); err != nil {
				t.Fatalf("#%d v%d: upsert inputs %s: %v", issue, e.Version, e.Inputs, err)
			}
			if in.NewDispatch {
				pr, kept = nil, false
			}
		case ActionPRs:
			var in prsInputs
			if err := json.Unmarshal(e.Inputs, &in); err != nil {
				t.Fatalf("#%d v%d: prs inputs: %v", issue, e.Version, err)
			}
			pr = &in.PRs
		case ActionKeep:
			kept = true
		case ActionFree:
			kept = false
		}
		if e.Outcome.Kept != kept {
			t.Fatalf("#%d v%d: outcome kept %t, the history says %t", issue, e.Version, e.Outcome.Kept, kept)
		}
		if e.Outcome.Live != (e.Outcome.Freed == "") {
			t.Fatalf("#%d v%d: live %t with freed %q", issue, e.Version, e.Outcome.Live, e.Outcome.Freed)
		}
		if e.Decision == DecisionFree && e.Rule != dispatch.RuleManual && kept {
			t.Fatalf("#%d v%d: a rule freed a kept row", issue, e.Version)
		}
		if e.Outcome.Freed == dispatch.RuleAccept {
			if pr == nil || !pr.Read || pr.Open > 0 || pr.Merged > 0 || pr.ClosedUnmerged == 0 {
				t.Fatalf("#%d v%d: freed by accept_claim while the recorded PRs were %+v", issue, e.Version, pr)
			}
		}
	}
}

func ruleOf(fr *dispatch.FreeRecord) string {
	if fr == nil {
		return ""
	}
	return fr.Rule
}

func obj(s string) map[string]json.RawMessage {
	o, err := dispatch.DecodeObject([]byte(s))
	if err != nil {
		panic(err)
	}
	return o
}
