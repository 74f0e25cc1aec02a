package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// Result says what Enqueue did with a task.
type Result int

const (
	// Enqueued: the task is new and durably stored in Redis.
	Enqueued Result = iota + 1
	// AlreadyEnqueued: a task with the same id (or unique lock) exists; it
	// counts as success, since that task does the same work.
	AlreadyEnqueued
)

// String is the result's metric label.
func (r Result) String() string {
	switch r {
	case Enqueued:
		return "enqueued"
	case AlreadyEnqueued:
		return "duplicate"
	}
	return "unknown"
}

// Enqueuer enqueues tasks, treating an existing task id as success.
type Enqueuer struct {
	client    *asynq.Client
	inspector *asynq.Inspector
}

// NewEnqueuer returns an Enqueuer over client; inspector (the same Redis) lets
// it remove an archived export:push that would block a new attempt.
func NewEnqueuer(client *asynq.Client, inspector *asynq.Inspector) *Enqueuer {
	return &Enqueuer{client: client, inspector: inspector}
}

// Enqueue stores t. asynq.ErrTaskIDConflict and asynq.ErrDuplicateTask are
// AlreadyEnqueued with a nil error. An archived task with the same id is
// deleted and t enqueued in its place: an archived attempt never blocks a
// later one (a redelivery of a delivery whose re-evaluation ran out of
// retries tries again). Any other error means t may not be stored.
func (e *Enqueuer) Enqueue(ctx context.Context, t *asynq.Task) (Result, error) {
	_, err := e.client.EnqueueContext(ctx, t)
	if err == nil {
		return Enqueued, nil
	}
	if !isDuplicate(err) {
		return 0, fmt.Errorf("enqueue %s: %w", t.Type(), err)
	}
	id, ok := TaskID(t)
	if !ok {
		return AlreadyEnqueued, nil
	}
	retry, err := e.deleteArchived(id)
	if err != nil {
		return 0, err
	}
	if !retry {
		return AlreadyEnqueued, nil
	}
	_, err = e.client.EnqueueContext(ctx, t)
	switch {
	case err == nil:
		return Enqueued, nil
	case isDuplicate(err): // another enqueuer won the race
		return AlreadyEnqueued, nil
	}
	return 0, fmt.Errorf("enqueue %s: %w", t.Type(), err)
}

// deleteArchived deletes task id when it is archived; retry reports that the
// id is now free.
func (e *Enqueuer) deleteArchived(id string) (retry bool, err error) {
	if e.inspector == nil {
		return false, fmt.Errorf("enqueue: no inspector to remove archived task %q", id)
	}
	info, err := e.inspector.GetTaskInfo(Queue, id)
	switch {
	case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		return true, nil // gone in between
	case err != nil:
		return false, fmt.Errorf("inspect task %q: %w", id, err)
	case info.State != asynq.TaskStateArchived:
		return false, nil
	}
	err = e.inspector.DeleteTask(Queue, id)
	if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
		return false, fmt.Errorf("delete archived task %q: %w", id, err)
	}
	return true, nil
}

func isDuplicate(err error) bool {
	return errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask)
}
