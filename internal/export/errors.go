package export

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
)

// Sentinels a caller can test with errors.Is.
var (
	// ErrNoBundle: the export has no branch and no stored bundle for the issue (404).
	ErrNoBundle = errors.New("the export has no bundle for this issue")
	// ErrNothingAhead: the export's branch has no commits beyond its base (409).
	ErrNothingAhead = errors.New("the export's branch has nothing ahead of its base")
	// ErrLeaseLost: the remote branch moved between reading its tip and
	// replacing it; re-read and retry.
	ErrLeaseLost = errors.New("the remote branch moved since its tip was read")
	// ErrPRExists is what a GitHub implementation returns from CreatePR when
	// GitHub answers that a pull request for the head already exists.
	ErrPRExists = errors.New("a pull request already exists for this head")
)

// Error is a failed call to the export, git or GitHub. It names the
// operation (for HTTP, the method and URL path), never a credential.
type Error struct {
	Op        string // "GET /queen/export/12", "git push", "github BranchPRs"
	Status    int    // HTTP status, 0 when none was received
	Retryable bool   // trying again later may succeed
	Err       error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Status != 0 {
		b.WriteString(": status ")
		b.WriteString(strconv.Itoa(e.Status))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is worth retrying later: a timeout, an
// outage (5xx, 429, a lost connection), a lease lost to a concurrent writer,
// or a read that failed and so decided nothing. Refusals, 4xx answers and
// malformed data are not.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrLeaseLost) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
