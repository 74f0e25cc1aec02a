package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/rules"
)

// Upsert writes the Queen-owned fields in patch onto the row, creating it
// when missing (an absent field keeps its value, null clears it, an unknown
// field is refused with a *dispatch.FieldError). A dispatched_at different
// from the stored one starts a fresh attempt: what queen-app recorded for
// the earlier one, and any keep, is dropped. send_back_claim is then decided
// in the same write. src names the writer for the audit.
func (l *Ledger) Upsert(ctx context.Context, repo string, issue int64, patch map[string]json.RawMessage, src audit.Source) (Result, error) {
	return l.update(ctx, "upsert", repo, issue, updateOpts{create: true, expect: -1, display: true}, func(rec *Record, now time.Time) (Change, error) {
		old := rec.DispatchedAt
		unknown, err := rec.Apply(patch)
		if err != nil {
			return Change{}, err
		}
		if len(unknown) > 0 {
			return Change{}, &dispatch.FieldError{Field: unknown[0], Problem: "unknown field"}
		}
		fresh := !sameTime(old, rec.DispatchedAt)
		if fresh {
			rec.ResetRecorded()
			rec.Pin = nil
		}
		ch := Change{Action: ActionUpsert, Source: src, Inputs: upsertInputs{Patch: patch, NewDispatch: fresh}}
		l.decide(rec, now, true, false, "", &ch)
		return ch, nil
	})
}

type upsertInputs struct {
	Patch       map[string]json.RawMessage `json:"patch"`
	NewDispatch bool                       `json:"new_dispatch,omitempty"`
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// RecordPRs records what a read of the row's branch found and applies
// accept_claim in the same write: a free (FreeClosedPR on) or a would_free,
// or, on a row freed by accept_claim whose PRs now show open or merged
// work, an unfree. The read's listed PRs are counted for the attempt the
// row is on as it is written (dispatch.Attempt.Count): earlier attempts'
// PRs are recorded apart and decide nothing. A read that failed (prs.Read
// false), or one sent before any read seen so far, writes and decides
// nothing. A state equal to the stored one (read_at aside) writes no
// version, but counts as seen.
// src is the webhook's delivery or the sweep's slot; a free records the
// delivery it was decided on.
func (l *Ledger) RecordPRs(ctx context.Context, repo string, issue int64, prs dispatch.PRState, src audit.Source) (Result, error) {
	return l.recordPRs(ctx, repo, issue, nil, prs, src)
}

// RecordPRsOn is RecordPRs on the row as the caller last read it (Get):
// the write is a compare-and-set on seen's version, so a row that moved
// since is read again first. It saves a re-evaluation its second read of
// the row (BenchmarkWebhookToFree).
func (l *Ledger) RecordPRsOn(ctx context.Context, repo string, issue int64, seen *Record, prs dispatch.PRState, src audit.Source) (Result, error) {
	return l.recordPRs(ctx, repo, issue, seen, prs, src)
}

func (l *Ledger) recordPRs(ctx context.Context, repo string, issue int64, seen *Record, prs dispatch.PRState, src audit.Source) (Result, error) {
	if !prs.Read {
		return Result{Outcome: OutcomeUnread}, checkKey(repo, issue)
	}
	p := prs
	p.Numbers, p.Earlier = slices.Clone(prs.Numbers), slices.Clone(prs.Earlier)
	if p.ReadAt == nil {
		t := l.opts.Now().UTC()
		p.ReadAt = &t
	}
	return l.update(ctx, "record prs", repo, issue, updateOpts{expect: -1, readAt: p.ReadAt, seen: seen}, func(rec *Record, now time.Time) (Change, error) {
		// Counted on the row being written, not the one the read was sent
		// for: a re-dispatch landing in between must not be decided on the
		// earlier attempt's PRs.
		p := rec.Attempt().Count(p)
		// A slow read (a sweep's batch, say) can land after a newer one: it
		// must not undo what the newer read recorded, least of all by a free.
		if rec.PRs != nil && rec.PRs.ReadAt != nil && p.ReadAt.Before(*rec.PRs.ReadAt) {
			return Change{None: true, Note: OutcomeStaleRead}, nil
		}
		if rec.PRs != nil && samePRs(*rec.PRs, p) {
			p.ReadAt = rec.PRs.ReadAt
		}
		rec.PRs = &p
		ch := Change{Action: ActionPRs, Source: src, Inputs: prsInputs{PRs: p}}
		l.decide(rec, now, false, true, src.Delivery, &ch)
		return ch, nil
	})
}

type prsInputs struct {
	PRs dispatch.PRState `json:"prs"`
}

func samePRs(a, b dispatch.PRState) bool {
	return a.Read == b.Read && a.Open == b.Open && a.Merged == b.Merged &&
		a.ClosedUnmerged == b.ClosedUnmerged && slices.Equal(a.Numbers, b.Numbers) && slices.Equal(a.Earlier, b.Earlier)
}

// Evaluate decides send_back_claim on the stored row, as the sweep does.
func (l *Ledger) Evaluate(ctx context.Context, repo string, issue int64, src audit.Source) (Result, error) {
	return l.update(ctx, "evaluate", repo, issue, updateOpts{expect: -1}, func(rec *Record, now time.Time) (Change, error) {
		ch := Change{Action: ActionEvaluate, Source: src}
		l.decide(rec, now, true, false, "", &ch)
		if ch.Decision == "" {
			return Change{None: true, Note: OutcomeUnchanged}, nil
		}
		return ch, nil
	})
}

// decide applies the rules named by sendBack and accept to rec and records
// the decision on ch. A kept row is left alone; a freed row is only ever
// unfreed (accept_claim, open or merged work); freeing is behind its flag.
func (l *Ledger) decide(rec *Record, now time.Time, sendBack, accept bool, delivery string, ch *Change) {
	if rec.Pin != nil {
		return
	}
	if accept && rec.PRs != nil && rec.PRs.Read && (rec.PRs.Open > 0 || rec.PRs.Merged > 0) {
		switch {
		case rec.Freed != nil && rec.Freed.Rule == dispatch.RuleAccept:
			rec.Freed = nil
			ch.Decision, ch.Rule, ch.Evidence = DecisionUnfree, dispatch.RuleAccept, prsEvidence(rec.PRs)
			return
		case rec.Freed == nil && rec.WouldFree != nil && rec.WouldFree.Rule == dispatch.RuleAccept:
			rec.WouldFree = nil
			ch.Decision, ch.Rule, ch.Evidence = DecisionWouldUnfree, dispatch.RuleAccept, prsEvidence(rec.PRs)
			return
		}
	}
	if rec.Freed != nil {
		return
	}
	d := dispatch.Decide(&rec.Row, now)
	var rule, evidence string
	var on bool
	switch {
	case sendBack && d.SendBack != nil && *d.SendBack == rules.Free:
		rule, on = dispatch.RuleSendBack, l.opts.ReleaseDeadClaims
		evidence = fmt.Sprintf("send_backs %d < ceiling %d", rec.SendBacks, rec.Ceiling)
	case accept && d.Accept != nil && *d.Accept == rules.Free:
		rule, on = dispatch.RuleAccept, l.opts.FreeClosedPR
		evidence = prsEvidence(rec.PRs)
	default:
		return
	}
	fr := &dispatch.FreeRecord{At: now, Rule: rule, Evidence: evidence, Delivery: delivery}
	if on {
		rec.Freed, rec.WouldFree = fr, nil
		ch.Decision = DecisionFree
	} else {
		if rec.WouldFree != nil {
			return // recorded when first decided
		}
		rec.WouldFree = fr
		ch.Decision = DecisionWouldFree
	}
	ch.Rule, ch.Evidence = rule, evidence
}

func prsEvidence(p *dispatch.PRState) string {
	if p == nil {
		return "pull requests not read"
	}
	s := fmt.Sprintf("open %d, merged %d, closed unmerged %d", p.Open, p.Merged, p.ClosedUnmerged)
	if len(p.Numbers) > 0 {
		s += " (" + prNumbers(p.Numbers) + ")"
	}
	if len(p.Earlier) > 0 {
		s += "; earlier attempts' " + prNumbers(p.Earlier) + " not counted"
	}
	if p.ReadAt != nil {
		s += " read " + p.ReadAt.UTC().Format(time.RFC3339)
	}
	return s
}

func prNumbers(ns []int) string {
	nums := make([]string, len(ns))
	for i, n := range ns {
		nums[i] = fmt.Sprintf("#%d", n)
	}
	return strings.Join(nums, ", ")
}

// Free is a person's free: it applies whatever the flags and drops a keep.
// Freeing a freed row writes nothing and reports OutcomeAlreadyFree. A
// positive version is the one the person looked at: if the row moved on (a
// new dispatch, say) the free is refused with ErrConflict.
// src is the person's (audit.Manual), its Reason the free's evidence.
func (l *Ledger) Free(ctx context.Context, repo string, issue int64, src audit.Source, version int64) (Result, error) {
	return l.update(ctx, "free", repo, issue, updateOpts{expect: expectOf(version)}, func(rec *Record, now time.Time) (Change, error) {
		if rec.Freed != nil {
			return Change{None: true, Note: OutcomeAlreadyFree}, nil
		}
		rec.Freed = &dispatch.FreeRecord{At: now, Rule: dispatch.RuleManual, Evidence: src.Reason}
		rec.WouldFree, rec.Pin = nil, nil
		return Change{Action: ActionFree, Decision: DecisionFree, Rule: dispatch.RuleManual, Source: src}, nil
	})
}

// Keep is a person's keep: it clears freed and would_free and pins the row,
// so the rules free nothing until a new dispatch. version is as for Free.
func (l *Ledger) Keep(ctx context.Context, repo string, issue int64, src audit.Source, version int64) (Result, error) {
	return l.update(ctx, "keep", repo, issue, updateOpts{expect: expectOf(version)}, func(rec *Record, now time.Time) (Change, error) {
		if rec.Pin != nil && rec.Freed == nil && rec.WouldFree == nil {
			return Change{None: true, Note: OutcomeAlreadyKept}, nil
		}
		rec.Freed, rec.WouldFree = nil, nil
		rec.Pin = &dispatch.Pin{At: now, Reason: src.Reason, Source: src.Writer}
		return Change{Action: ActionKeep, Decision: DecisionKeep, Rule: dispatch.RuleManual, Source: src}, nil
	})
}

// Delete removes the row; its history and audit entries stay.
func (l *Ledger) Delete(ctx context.Context, repo string, issue int64, src audit.Source) (Result, error) {
	return l.update(ctx, "delete", repo, issue, updateOpts{expect: -1}, func(rec *Record, now time.Time) (Change, error) {
		return Change{Action: ActionDelete, Source: src, Delete: true}, nil
	})
}

// RecordExport records the export push's progress on the row, only if the
// row is still at expectVersion (the version the push was decided on);
// otherwise ErrConflict, and the caller re-reads. src is the export:push task.
func (l *Ledger) RecordExport(ctx context.Context, repo string, issue int64, st dispatch.ExportState, expectVersion int64, src audit.Source) (Result, error) {
	if expectVersion < 1 {
		return Result{}, fmt.Errorf("ledger: record export %s#%d: expectVersion %d is not a row version", repo, issue, expectVersion)
	}
	return l.update(ctx, "record export", repo, issue, updateOpts{expect: expectVersion}, func(rec *Record, now time.Time) (Change, error) {
		s := st
		rec.Export = &s
		return Change{Action: ActionExport, Decision: st.State, Source: src, Evidence: st.Refusal, Inputs: struct {
			Export dispatch.ExportState `json:"export"`
		}{st}}, nil
	})
}

// expectOf maps a caller's version (0: whichever is current) to updateOpts.
func expectOf(version int64) int64 {
	if version > 0 {
		return version
	}
	return -1
}
