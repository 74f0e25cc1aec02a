package main

const (
	coalesce   = "internal/redisconn/coalesce.go"
	clientFile = "internal/redisconn/client.go"
)

// redisconnMutants break the coalescing of delivery writes and the
// replica acknowledgement of a pipeline. None makes a command wait forever:
// such a mutant would spend the whole -timeout.
var redisconnMutants = withTests("^TestCoalesce", []Mutant{
	{ID: "K01", File: coalesce, Old: "if p.ack == ack && len(batch) < MaxBatch {", New: "if p.ack == ack && len(batch) < 1 {", Desc: "the commands that waited go out one round trip each"},
	{ID: "K02", File: coalesce, Old: "if p.ack == ack && len(batch) < MaxBatch {", New: "if (p.ack == ack || true) && len(batch) < MaxBatch {", Desc: "a batch mixes acknowledged and plain writes"},
	{ID: "K03", File: coalesce, Old: "if c.inflight < MaxPipelines {", New: "if c.inflight < 1 {", Desc: "one coalesced round trip at a time: two callers serialize"},
	{ID: "K04", File: coalesce, Old: "if err := next(context.WithValue(p.ctx, coalesceKey{}, false), p.cmd); err != nil {", New: "if err := next(context.WithValue(p.ctx, coalesceKey{}, false), p.cmd); err != nil && false {", Desc: "a lone command's error is lost"},
	{ID: "K05", File: clientFile, Old: "if ackErr != nil && (e == nil || errors.Is(e, redis.Nil)) {", New: "if ackErr != nil && (e == nil || errors.Is(e, redis.Nil)) && len(cmds) == 1 {", Desc: "a pipeline of several commands is never refused for want of a replica"},
})
