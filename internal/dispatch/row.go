// Package dispatch is the data model of a Queen dispatch row: the fields the
// Queen owns, what queen-app records on the row, strict decoding of rows from
// JSON (the API, import and replay share it), and the claim view computed by
// internal/rules from a row and the clock.
package dispatch

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/queen-app/queen-app/internal/rules"
)

// Row is one dispatch row: one per repository and issue.
type Row struct {
	Repo           string            `json:"repo"`
	Issue          int64             `json:"issue"`
	Branch         string            `json:"branch"` // "" or BranchOf(Issue): Apply takes no other
	Started        bool              `json:"started"`
	DispatchedAt   *time.Time        `json:"dispatched_at"`
	FinishedAt     *time.Time        `json:"finished_at"`
	ReviewState    *string           `json:"review_state"`
	SendBacks      uint32            `json:"send_backs"`
	Ceiling        uint32            `json:"ceiling"`
	CeilingRelease uint32            `json:"ceiling_releases"`
	Criteria       []json.RawMessage `json:"criteria"` // nil: not read
	FreeAttempts   uint32            `json:"free_attempts"`
	ReviewerMisses uint32            `json:"reviewer_misses"`
	OwnedPaths     []string          `json:"owned_paths"`
	JudgedHead     *string           `json:"judged_head"`
	Reaped         bool              `json:"reaped"`
	IssueOpen      *bool             `json:"issue_open"`
	OwnerAssigned  bool              `json:"owner_assigned"`

	// Recorded by queen-app.
	PRs       *PRState     `json:"prs,omitempty"`
	Freed     *FreeRecord  `json:"freed,omitempty"`
	WouldFree *FreeRecord  `json:"would_free,omitempty"`
	Export    *ExportState `json:"export,omitempty"`
	Version   int64        `json:"version"`
}

// PRState is what the last read of the branch's pull requests found,
// counted for the row's attempt (Attempt.Count): the counts and Numbers are
// the attempt's own PRs, Earlier the earlier attempts' ones, which no rule
// counts. A row recorded before attempts were told apart has no Earlier.
type PRState struct {
	Read           bool       `json:"read"`
	Open           uint32     `json:"open"`
	Merged         uint32     `json:"merged"`
	ClosedUnmerged uint32     `json:"closed_unmerged"`
	ReadAt         *time.Time `json:"read_at,omitempty"`
	Numbers        []int      `json:"numbers,omitempty"`
	Earlier        []int      `json:"earlier,omitempty"`
	// Listed is every PR the read listed, when it lists them (githubapp's
	// reads do): what an Attempt counts. Never stored: the ledger keeps
	// the counts and numbers only.
	Listed []PR `json:"-"`
}

// Any reports whether the branch has a pull request in any state.
func (p PRState) Any() bool { return p.Open+p.Merged+p.ClosedUnmerged > 0 || len(p.Numbers) > 0 }

// Pin is a person's keep: the rules free nothing until a new dispatch.
type Pin struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	Source string    `json:"source,omitempty"` // the writer who kept it
}

// FreeRecord says who freed a claim, when, and on what evidence.
type FreeRecord struct {
	At       time.Time `json:"at"`
	Rule     string    `json:"rule"` // send_back_claim, accept_claim, manual
	Evidence string    `json:"evidence"`
	Delivery string    `json:"delivery,omitempty"`
}

// ExportState is the export push's progress on the row.
type ExportState struct {
	State      string `json:"state"`
	PushedHead string `json:"pushed_head,omitempty"`
	PRNumber   int    `json:"pr_number,omitempty"`
	Refusal    string `json:"refusal,omitempty"`
	Attempts   int    `json:"attempts"`
	LastError  string `json:"last_error,omitempty"`
	// Version is the row version this state was written at: a refusal
	// stands, and is not tried again, until the row moves past it.
	Version int64 `json:"version,omitempty"`
	// At is when a failed attempt was recorded: the export sweep tries the
	// row again only after a backoff from it. Unset in every other state.
	At *time.Time `json:"at,omitempty"`
	// Until is when a waiting row's PR gets its turn: the installation's
	// PR creations are paced (GitHub's limits) or GitHub asked for a pause.
	// Set only in the waiting state.
	Until *time.Time `json:"until,omitempty"`
}

// Same reports whether o records the same outcome as s: the state, the
// head pushed, the PR and the refusal. The attempts, the last error, the
// version and the time are the bookkeeping of an attempt, not its outcome.
func (s ExportState) Same(o ExportState) bool {
	return s.State == o.State && s.PushedHead == o.PushedHead && s.PRNumber == o.PRNumber && s.Refusal == o.Refusal
}

// Rule names as recorded in FreeRecord.Rule and the audit.
const (
	RuleSendBack = "send_back_claim"
	RuleAccept   = "accept_claim"
	RuleManual   = "manual"
)

// New is an empty row for repo and issue with the defaults of the design:
// the runtime's ceiling and the queen-<issue> branch.
func New(repo string, issue int64) *Row {
	return &Row{Repo: repo, Issue: issue, Ceiling: rules.DefaultSendBackCeiling}
}

// Key names a row: "owner/name#N".
func (r *Row) Key() string { return r.Repo + "#" + strconv.FormatInt(r.Issue, 10) }

// BranchName is the row's branch: always queen-<issue> (see BranchOf).
func (r *Row) BranchName() string { return BranchOf(r.Issue) }

// ReviewWord is review_state with null read as "".
func (r *Row) ReviewWord() string {
	if r.ReviewState == nil {
		return ""
	}
	return *r.ReviewState
}

// SameDispatch reports whether o is the dispatch r is: a different
// dispatched_at is a new dispatch, which starts fresh (see ResetRecorded).
func (r *Row) SameDispatch(o *Row) bool {
	if r.DispatchedAt == nil || o.DispatchedAt == nil {
		return r.DispatchedAt == nil && o.DispatchedAt == nil
	}
	return r.DispatchedAt.Equal(*o.DispatchedAt)
}

// ResetRecorded drops what queen-app recorded for an earlier attempt: a new
// dispatch starts fresh.
func (r *Row) ResetRecorded() {
	r.PRs, r.Freed, r.WouldFree, r.Export = nil, nil, nil, nil
}
