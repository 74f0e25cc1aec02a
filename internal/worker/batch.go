package worker

import (
	"context"
	"time"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubapp"
)

// A burst of closes (a bulk close of a repository's PRs) used to cost one
// GitHub read each. The claim:reevaluate tasks of one repository running at
// the same moment now share reads: a task's read waits up to ReadWindow for
// others to join, and the branches that joined are read with one GraphQL
// query per 100 (BatchPRStates); a task alone in its window reads with REST
// as before. Each task still records its own branch under its own delivery,
// and a branch whose part of the answer failed fails only its own task,
// which retries alone. asynq's task aggregation (asynq.Group) was not used:
// its grace period is at least a second, which a lone close would wait on
// top of QUEEN_REEVALUATE_DELAY.

// DefaultReadWindow is how long a reevaluation's read waits for another to
// join it, again after each join, up to four times that in all.
const DefaultReadWindow = 20 * time.Millisecond

// branchRead is one branch's read, as old as sent.
type branchRead struct {
	prs  []githubapp.PR
	sent time.Time
	err  error
}

type batchKey struct {
	inst int64
	repo string // ghrepo.Key
}

// readBatch is the reads of one repository waiting to be sent.
type readBatch struct {
	owner, name string
	waiters     map[string][]chan branchRead // by branch
	branches    []string                     // in the order they joined
	timer       *time.Timer
	deadline    time.Time // the window's end, however many join
	sent        bool
}

// maxBatch is GitHub's limit of aliases in one GraphQL query.
const maxBatch = 100

// readBranch reads the PRs of branch, in a batch with the others of its
// repository that ask meanwhile.
func (w *Worker) readBranch(ctx context.Context, inst int64, owner, name, branch string) ([]githubapp.PR, time.Time, error) {
	if w.d.ReadWindow == 0 {
		sent := time.Now().UTC()
		prs, err := w.d.GitHub.ListBranchPRs(ctx, inst, owner, name, branch)
		return prs, sent, err
	}
	ch := make(chan branchRead, 1)
	key := batchKey{inst, ghrepo.Key(owner + "/" + name)}
	w.mu.Lock()
	b := w.batches[key]
	if b == nil {
		b = &readBatch{owner: owner, name: name, waiters: map[string][]chan branchRead{},
			deadline: time.Now().Add(4 * w.d.ReadWindow)}
		w.batches[key] = b
		b.timer = time.AfterFunc(w.d.ReadWindow, func() { w.sendBatch(key, b) })
	}
	if _, ok := b.waiters[branch]; !ok {
		b.branches = append(b.branches, branch)
	}
	b.waiters[branch] = append(b.waiters[branch], ch)
	full := len(b.branches) >= maxBatch
	if full {
		// Closed to joiners before the lock is let go: one joining between
		// here and sendBatch would make the query 101 branches, two requests.
		delete(w.batches, key)
	} else {
		b.timer.Reset(min(w.d.ReadWindow, time.Until(b.deadline)))
	}
	w.mu.Unlock()
	if full {
		w.sendBatch(key, b)
	}
	select {
	case r := <-ch:
		return r.prs, r.sent, r.err
	case <-ctx.Done():
		return nil, time.Time{}, ctx.Err()
	}
}

// sendBatch sends b's reads once and answers every waiter.
func (w *Worker) sendBatch(key batchKey, b *readBatch) {
	w.mu.Lock()
	if b.sent {
		w.mu.Unlock()
		return
	}
	b.sent = true
	b.timer.Stop()
	if w.batches[key] == b {
		delete(w.batches, key)
	}
	w.mu.Unlock()

	// The waiters' contexts may end; the read is bounded on its own.
	ctx, cancel := context.WithTimeout(context.Background(), batchReadTimeout)
	defer cancel()
	answer := func(branch string, r branchRead) {
		for _, ch := range b.waiters[branch] {
			ch <- r
		}
	}
	if len(b.branches) == 1 {
		sent := time.Now().UTC()
		prs, err := w.d.GitHub.ListBranchPRs(ctx, key.inst, b.owner, b.name, b.branches[0])
		answer(b.branches[0], branchRead{prs: prs, sent: sent, err: err})
		return
	}
	res := w.d.GitHub.BatchPRStates(ctx, key.inst, b.owner, b.name, b.branches)
	for _, branch := range b.branches {
		r, ok := res[branch]
		switch {
		case !ok:
			answer(branch, branchRead{err: errNoAnswer})
		case r.Err != nil:
			answer(branch, branchRead{err: r.Err})
		default:
			answer(branch, branchRead{prs: r.PRs, sent: *r.State.ReadAt})
		}
	}
}

// batchReadTimeout bounds one batch's reads: claim:reevaluate's own timeout.
const batchReadTimeout = 2 * time.Minute

var errNoAnswer = errorString("github batch read: no answer for the branch")

type errorString string

func (e errorString) Error() string { return string(e) }
