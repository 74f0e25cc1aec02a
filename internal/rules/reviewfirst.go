package rules

import "fmt"

// CandidateKind is the review-first card's kind of a dispatch candidate.
// Order matters: an owner's assignment outranks a send-back, which outranks
// the backlog.
type CandidateKind uint8

const (
	KindAssigned          CandidateKind = iota // the owner assigned the issue
	KindSendBackCandidate                      // the review sent the last dispatch back
	KindBacklog                                // anything else
)

// ReviewQueueMax is how long the review queue may be while the backlog is
// admitted. Zero: on the live Queen (2026-10-18) about nine bees started per
// verdict, each holding files the bees in review needed when sent back.
const ReviewQueueMax = 0

// InReviewQueue implements in_review_queue: the row was started, finished,
// has no verdict or a wait, was not reaped, and its issue is open. An issue
// whose state is unknown counts as open: a failed read must not open the
// backlog.
func InReviewQueue(started, finished bool, reviewState string, reaped bool, issueOpen *bool) bool {
	open := issueOpen == nil || *issueOpen
	return started && finished && (reviewState == "" || reviewState == "wait") && !reaped && open
}

// KindOf implements kind_of(owner_assigned, sent_back).
func KindOf(ownerAssigned, sentBack bool) CandidateKind {
	switch {
	case ownerAssigned:
		return KindAssigned
	case sentBack:
		return KindSendBackCandidate
	default:
		return KindBacklog
	}
}

// Admits implements admits(kind, queue_len): assigned work and send-backs
// always; the backlog only while the review queue is at most ReviewQueueMax.
func Admits(k CandidateKind, queueLen uint32) bool {
	if k == KindBacklog {
		return queueLen <= ReviewQueueMax
	}
	return true
}

// RoundRefused implements round_refused(candidates, admitted): there was
// something to start and the rule held all of it.
func RoundRefused(candidates, admitted uint32) bool {
	return candidates > 0 && admitted == 0
}

// RefusalText is the text the dispatcher shows for a refused round.
func RefusalText(queueLen uint32) string {
	return fmt.Sprintf("%d dispatches wait in review; the backlog is closed until the review queue is empty", queueLen)
}
