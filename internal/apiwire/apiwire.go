// Package apiwire is the claims API's JSON on the wire: the answers, the
// error body, the header a writer names itself in, and the list limits.
// The server (internal/api) and its client (internal/apiclient, queenctl)
// both import it, so a client links no ledger, no Redis and no queue.
package apiwire

import (
	"regexp"
	"time"

	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/dispatch"
)

// SourceHeader optionally names the writer recorded in the audit (import
// tools, queenctl); absent, the writer is the API's unnamed caller.
const SourceHeader = "X-Queen-Source"

var sourcePattern = regexp.MustCompile(`^[A-Za-z0-9._:@/-]{1,64}$`)

// ValidSource reports whether s may name a writer in SourceHeader.
func ValidSource(s string) bool { return sourcePattern.MatchString(s) }

// List limits.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Answers of the API. The claim view's fields come first in each.
type (
	// Claim is a claim view with what the write did: created, updated,
	// unchanged, free, would_free, keep, already free, already kept.
	Claim struct {
		dispatch.View
		Outcome string `json:"outcome"`
		// Warnings (a write's answer only) name fields kept but not read
		// as their writer may mean; absent when there are none.
		Warnings []dispatch.Warning `json:"warnings,omitempty"`
	}

	// Detail is a claim view with its keep, the rule path in words and the
	// row's recent audit entries, newest first.
	Detail struct {
		dispatch.View
		Kept    *dispatch.Pin `json:"kept"`
		Explain []string      `json:"explain"`
		History []audit.Entry `json:"history"`
	}

	// ClaimList is one page of claim views; NextCursor is "" on the last.
	ClaimList struct {
		Claims     []dispatch.View `json:"claims"`
		NextCursor string          `json:"next_cursor"`
	}

	// HeldPath is one path held by one row; Until is nil while a bee works.
	HeldPath struct {
		Path  string     `json:"path"`
		Issue int64      `json:"issue"`
		Stage string     `json:"stage"`
		Until *time.Time `json:"until"`
	}

	// HeldPaths are the paths a repository's live rows hold, by path.
	HeldPaths struct {
		Held []HeldPath `json:"held"`
	}

	// Candidate is an issue the Queen would dispatch.
	Candidate struct {
		Issue         int64 `json:"issue"`
		OwnerAssigned bool  `json:"owner_assigned"`
	}

	// Admission is the review-first answer for a round of candidates.
	Admission struct {
		Queue    uint32  `json:"queue"`
		Admitted []int64 `json:"admitted"`
		Held     []int64 `json:"held"`
		Refusal  *string `json:"refusal"`
	}

	// Deleted answers a delete.
	Deleted struct {
		Repo    string `json:"repo"`
		Issue   int64  `json:"issue"`
		Outcome string `json:"outcome"`
		Version int64  `json:"version"`
	}

	// ExportPush answers POST .../exports/{issue}/push: the export:push
	// task enqueued for the row's judged head, or the one already waiting.
	ExportPush struct {
		Repo            string `json:"repo"`
		Issue           int64  `json:"issue"`
		Head            string `json:"head"`
		DryRun          bool   `json:"dry_run"`
		TaskID          string `json:"task_id"`
		AlreadyEnqueued bool   `json:"already_enqueued"`
	}

	// AuditList answers GET /v1/audit: matching entries newest last; More
	// says older matching entries were left out (the limit or the scan bound).
	AuditList struct {
		Entries []audit.Entry `json:"entries"`
		More    bool          `json:"more"`
	}

	// Error is the body of every error answer.
	Error struct {
		Error string `json:"error"`
		Field string `json:"field,omitempty"` // the bad field, parameter or header, when one is to blame
	}
)
