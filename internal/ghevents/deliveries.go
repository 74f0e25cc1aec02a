package ghevents

import (
	"context"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/tasks"
)

// A delivery whose effect succeeded is remembered for DeliveryWindow, so a
// replay of its signed bytes, or GitHub's redelivery of it, is answered 202
// duplicate and does nothing. Only a success is remembered: GitHub's
// redelivery reuses the delivery id, and one of a delivery that was refused
// or failed must still do its work. pull_request needs no mark of its own:
// its task id carries the delivery id and asynq keeps the task as long. A
// delivery that does nothing (ignored, a ping) does nothing again.

// DeliveryWindow is how long a delivery is remembered: GitHub's 3-day
// redelivery window, which the re-evaluation's retention keeps too.
const DeliveryWindow = tasks.ReevaluateRetention

// DeliveryKeyPrefix and the delivery id are the key of a delivery done:
// one key per delivery, so it is safe on a Redis Cluster.
const DeliveryKeyPrefix = "queen:delivery:"

// Deliveries remembers the deliveries done; *DeliveryLog is one.
type Deliveries interface {
	Seen(ctx context.Context, id string) (bool, error)
	Done(ctx context.Context, id string) error
}

// DeliveryLog keeps the deliveries done in Redis.
type DeliveryLog struct{ rdb redis.UniversalClient }

// NewDeliveryLog returns the DeliveryLog over rdb.
func NewDeliveryLog(rdb redis.UniversalClient) *DeliveryLog { return &DeliveryLog{rdb: rdb} }

// Seen reports whether delivery id was done in the last DeliveryWindow.
func (l *DeliveryLog) Seen(ctx context.Context, id string) (bool, error) {
	n, err := l.rdb.Exists(ctx, DeliveryKeyPrefix+id).Result()
	return n > 0, err
}

// Done remembers delivery id for DeliveryWindow.
func (l *DeliveryLog) Done(ctx context.Context, id string) error {
	return l.rdb.Set(ctx, DeliveryKeyPrefix+id, "1", DeliveryWindow).Err()
}

func duplicate(reason string) outcome {
	return outcome{code: http.StatusAccepted, status: "duplicate", reason: reason}
}

// once makes a registry write at most once per delivery: a delivery done
// already is a duplicate; one is marked done only after its write
// succeeded. A mark that fails after the write is a 503 like the write's
// own failure: GitHub's redelivery makes the same write again, which
// changes nothing.
func (h *handler) once(ctx context.Context, d *delivery, write func(context.Context) error) outcome {
	seen, err := h.deliveries.Seen(ctx, d.id)
	switch {
	case err != nil:
		return unavailable(err)
	case seen:
		return duplicate("delivery already done")
	}
	if err := write(ctx); err != nil {
		return unavailable(err)
	}
	if err := h.deliveries.Done(ctx, d.id); err != nil {
		return unavailable(err)
	}
	return outcome{code: http.StatusAccepted, status: "accepted", reason: "registry updated"}
}
