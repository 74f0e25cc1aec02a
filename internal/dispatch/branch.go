package dispatch

import (
	"strconv"
	"strings"

	"github.com/queen-app/queen-app/internal/charclass"
)

// A row's work lives on exactly one branch, queen-<issue>: the webhook finds
// the issue from it, the sweep reads it and the export publishes to it. When
// a row could name another branch, the export opened a PR there that
// accept_claim never watched, and the claim stayed live forever.
const branchPrefix = "queen-"

var digits = charclass.New("0-9")

// BranchOf is the branch of issue's row: queen-<issue>.
func BranchOf(issue int64) string { return branchPrefix + strconv.FormatInt(issue, 10) }

// IssueOfBranch returns N for a branch named queen-<N> (N from 1 to 10
// digits, no leading zero). The webhook asks on every pull_request
// delivery (charclass says why not regexp).
func IssueOfBranch(ref string) (int64, bool) {
	n, ok := strings.CutPrefix(ref, branchPrefix)
	if !ok || !digits.Match(n, 1, 10) || n[0] == '0' {
		return 0, false
	}
	issue, err := strconv.ParseInt(n, 10, 64)
	return issue, err == nil
}

// A head is a full SHA-1 commit id in lower case, as the Queen's accepted-head
// gate compares it (docs/export.md: judged_head is 40 lowercase hex).
var headChars = charclass.New("0-9a-f")

// ValidHead reports whether s names a commit the way judged_head must for
// the export to publish it.
func ValidHead(s string) bool { return headChars.Match(s, 40, 40) }
