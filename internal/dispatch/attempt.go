package dispatch

import (
	"slices"
	"time"
)

// A re-dispatched issue works on the same branch, queen-<N>, so the branch's
// PR list holds the PRs of every attempt. Counting them all froze a
// re-dispatch: the first attempt's PR, closed unmerged, freed the new
// attempt at once and made the export refuse its head. An Attempt tells the
// row's own PRs from earlier attempts' ones.

// PR is one pull request of a row's branch as a read lists it: the base
// repository's own (fork PRs are dropped before).
type PR struct {
	Number    int
	State     string // "open" or "closed"
	Merged    bool
	HeadSHA   string    // the PR's head commit
	CreatedAt time.Time // when GitHub opened it
}

// Open reports whether p is open.
func (p PR) Open() bool { return p.State == "open" }

// Attempt is one dispatch of a row: its dispatch time and the head the
// Queen judged. The zero Attempt knows no dispatch, so every PR is its own.
type Attempt struct {
	DispatchedAt *time.Time // nil: no dispatch time, every PR is the attempt's
	JudgedHead   string     // "": none judged, no PR is matched by its head
}

// Attempt is the attempt r is on.
func (r *Row) Attempt() Attempt {
	a := Attempt{DispatchedAt: r.DispatchedAt}
	if r.JudgedHead != nil {
		a.JudgedHead = *r.JudgedHead
	}
	return a
}

// PRRole is how a pull request of the branch stands to an attempt.
type PRRole uint8

const (
	// PREarlier: an earlier attempt's PR, closed or merged at another head
	// before the dispatch. No rule counts it.
	PREarlier PRRole = iota
	// PRDispatched: the attempt's by its time, created at or after the
	// dispatch (closed or merged, at another head).
	PRDispatched
	// PRCurrent: the attempt's whatever its time: open (GitHub lets one
	// be open per branch, and a push would move it), or at the judged head.
	PRCurrent
)

// Role says whose p is: the attempt's when it is open, at the judged head,
// or created at or after the dispatch; an earlier attempt's otherwise.
func (a Attempt) Role(p PR) PRRole {
	switch {
	case p.Open() || (a.JudgedHead != "" && p.HeadSHA == a.JudgedHead):
		return PRCurrent
	// GitHub stamps created_at in whole seconds: a PR opened in the
	// dispatch's own second is the dispatch's, not an earlier one.
	case a.DispatchedAt == nil || !p.CreatedAt.Before(a.DispatchedAt.Truncate(time.Second)):
		return PRDispatched
	}
	return PREarlier
}

// Mine reports whether p is the attempt's own PR.
func (a Attempt) Mine(p PR) bool { return a.Role(p) >= PRDispatched }

// Count is read counted for a, as accept_claim reads it: the open, merged
// and closed-unmerged PRs and the Numbers of the attempt's own PRs, the
// numbers of earlier attempts' ones in Earlier. A read that lists no PRs
// (Listed nil: it says nothing of heads or times) counts as given.
func (a Attempt) Count(read PRState) PRState {
	return count(read, a.Mine)
}

// Publishing is read counted as the export's PR refusal reads it: the PRs
// that already stand for the attempt's work, an open one or one at the
// judged head, whatever its time. A PR of the attempt at another head,
// closed or merged, neither blocks the push nor is proposed again; it is
// listed in Earlier with the earlier attempts' ones. A read that lists no
// PRs counts as given.
func (a Attempt) Publishing(read PRState) PRState {
	return count(read, func(p PR) bool { return a.Role(p) == PRCurrent })
}

func count(read PRState, keep func(PR) bool) PRState {
	if read.Listed == nil {
		return read
	}
	out := PRState{Read: read.Read, ReadAt: read.ReadAt, Numbers: []int{}, Listed: read.Listed}
	for _, p := range read.Listed {
		if !keep(p) {
			out.Earlier = append(out.Earlier, p.Number)
			continue
		}
		switch {
		case p.Merged:
			out.Merged++
		case p.Open():
			out.Open++
		default:
			out.ClosedUnmerged++
		}
		out.Numbers = append(out.Numbers, p.Number)
	}
	slices.Sort(out.Numbers)
	slices.Sort(out.Earlier)
	return out
}
