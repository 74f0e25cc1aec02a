package apiwire

import "github.com/queen-app/queen-app/internal/audit"

// The watch stream (GET /v1/events): Server-Sent Events whose data is JSON.
const (
	// EventChange is one audit entry of a watched repository.
	EventChange = "change"
	// EventReset says the stream no longer holds the entries after the
	// resume id asked for: re-read the claims, then follow the changes.
	EventReset = "reset"
	// LastEventIDHeader resumes a stream after an audit id.
	LastEventIDHeader = "Last-Event-ID"
)

type (
	// Change is a change event's data: the audit entry as GET /v1/audit
	// serves it, and the row's claim view as GET .../claims/{issue} serves
	// it when the event was sent (nil once the row is deleted, or when it
	// could not be read: ClaimError then says so).
	Change struct {
		Entry      audit.Entry `json:"entry"`
		Claim      *Detail     `json:"claim"`
		ClaimError string      `json:"claim_error,omitempty"`
	}

	// Reset is a reset event's data: the id asked for and the oldest the
	// audit stream still holds ("" when it holds none).
	Reset struct {
		After  string `json:"after"`
		Oldest string `json:"oldest"`
		Reason string `json:"reason"`
	}
)

// ResetReason is the reason a reset event gives.
const ResetReason = "the audit stream no longer holds entries after this id; re-read GET /v1/claims"
