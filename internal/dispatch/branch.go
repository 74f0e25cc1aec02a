package dispatch

import (
	"regexp"
	"strconv"
)

// A row's work lives on exactly one branch, queen-<issue>: the webhook finds
// the issue from it, the sweep reads it and the export publishes to it. When
// a row could name another branch, the export opened a PR there that
// accept_claim never watched, and the claim stayed live forever.
var branchPattern = regexp.MustCompile(`^queen-([1-9][0-9]{0,9})$`)

// BranchOf is the branch of issue's row: queen-<issue>.
func BranchOf(issue int64) string { return "queen-" + strconv.FormatInt(issue, 10) }

// IssueOfBranch returns N for a branch named queen-<N> (N from 1 to 10
// digits, no leading zero).
func IssueOfBranch(ref string) (int64, bool) {
	m := branchPattern.FindStringSubmatch(ref)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, err == nil
}

// A head is a full SHA-1 commit id in lower case, as the Queen's accepted-head
// gate compares it (reference/export.md §4.4: judgedHead is 40 lowercase hex).
var headPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ValidHead reports whether s names a commit the way judged_head must for
// the export to publish it.
func ValidHead(s string) bool { return headPattern.MatchString(s) }
