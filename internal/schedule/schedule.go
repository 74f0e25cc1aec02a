// Package schedule runs queen-app's periodic tasks from exactly one worker
// replica. Every replica runs a Scheduler; they elect a leader through a
// Redis lease, and only the leader enqueues. Each periodic task also carries
// a task id naming its time slot, so even two leaders during a lease handover
// enqueue one task per slot: asynq refuses the second id.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// LeaderKey is the Redis key of the scheduler lease.
const LeaderKey = "queen:scheduler:leader"

// Entry is one periodic task.
type Entry struct {
	Type    string
	Every   time.Duration
	Payload []byte
	Options []asynq.Option
	Retain  time.Duration // how long the slot id blocks a second enqueue; default Every
}

// Enqueuer is asynq.Client's enqueue.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, t *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Scheduler elects a leader and, while leading, enqueues its entries.
type Scheduler struct {
	RDB      redis.UniversalClient
	Client   Enqueuer
	ID       string        // this replica's identity in the lease
	Lease    time.Duration // default 30s
	Tick     time.Duration // how often to renew and check entries; default 1s
	Entries  []Entry
	Log      *slog.Logger
	Now      func() time.Time
	OnLead   func(bool)                  // leadership changes, for metrics
	OnResult func(typ string, err error) // each enqueue, for metrics
}

// Run leads or waits until ctx ends, then gives up the lease.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.ID == "" {
		return errors.New("schedule: ID is required")
	}
	lease, tick := s.Lease, s.Tick
	if lease <= 0 {
		lease = 30 * time.Second
	}
	if tick <= 0 {
		tick = time.Second
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	leadLease := &Lease{RDB: s.RDB, Key: LeaderKey, Owner: s.ID, TTL: lease}
	leading := false
	last := map[string]time.Time{}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		held, err := hold(ctx, leadLease, leading)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("scheduler lease", "err", err)
			}
			// A failed round trip says nothing about the lease: a leader
			// keeps leading until a renewal answers that the lease is gone.
			held = leading
		}
		if held != leading {
			leading = held
			log.Info("scheduler leadership", "leading", leading, "replica", s.ID)
			if s.OnLead != nil {
				s.OnLead(leading)
			}
		}
		if leading {
			for _, e := range s.Entries {
				slot := now().Truncate(e.Every)
				if last[e.Type].Equal(slot) {
					continue
				}
				if err := s.enqueue(ctx, e, slot); err != nil {
					log.Warn("periodic enqueue", "type", e.Type, "err", err)
					continue
				}
				last[e.Type] = slot
			}
		}
		select {
		case <-ctx.Done():
			// Always: only a lease still ours is deleted, even when the
			// last renewal raced the shutdown.
			_ = leadLease.Release()
			return nil
		case <-t.C:
		}
	}
}

// hold renews the leader's lease, or tries to take it.
func hold(ctx context.Context, l *Lease, leading bool) (bool, error) {
	if leading {
		ok, err := l.Renew(ctx)
		if err != nil || ok {
			return ok, err
		}
	}
	return l.Acquire(ctx)
}

// SlotID is the task id of an entry's slot.
func SlotID(typ string, slot time.Time) string {
	return fmt.Sprintf("periodic:%s:%d", typ, slot.Unix())
}

func (s *Scheduler) enqueue(ctx context.Context, e Entry, slot time.Time) error {
	retain := e.Retain
	if retain <= 0 {
		retain = e.Every
	}
	opts := append([]asynq.Option{asynq.TaskID(SlotID(e.Type, slot)), asynq.Retention(retain)}, e.Options...)
	_, err := s.Client.EnqueueContext(ctx, asynq.NewTask(e.Type, e.Payload), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		err = nil // another leader enqueued this slot
	}
	if s.OnResult != nil {
		s.OnResult(e.Type, err)
	}
	return err
}
