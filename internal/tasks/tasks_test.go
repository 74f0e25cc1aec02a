package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/redistest"
)

const head = "0123456789abcdef0123456789abcdef01234567"

func newQueue(t *testing.T) (*Enqueuer, *asynq.Inspector, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	opt := asynq.RedisClientOpt{Addr: srv.Addr}
	client := asynq.NewClient(opt)
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); insp.Close() })
	return NewEnqueuer(client, insp), insp, srv
}

// all lists every task of Queue in every state.
func all(t *testing.T, insp *asynq.Inspector) []*asynq.TaskInfo {
	t.Helper()
	var out []*asynq.TaskInfo
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		insp.ListPendingTasks, insp.ListScheduledTasks, insp.ListActiveTasks,
		insp.ListRetryTasks, insp.ListArchivedTasks, insp.ListCompletedTasks,
	} {
		infos, err := list(Queue, asynq.PageSize(1000))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, infos...)
	}
	return out
}

func TestReevaluateTaskOptions(t *testing.T) {
	e, insp, _ := newQueue(t)
	p := ReevaluatePayload{Repo: "hive/t27", Issue: 9111, Delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		Event: "pull_request", Action: "closed", InstallationID: 7, PRNumber: 12, Merged: true}
	task, err := NewReevaluate(p, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	res, err := e.Enqueue(context.Background(), task)
	after := time.Now()
	if err != nil || res != Enqueued {
		t.Fatalf("Enqueue = %v, %v; want enqueued", res, err)
	}
	wantID := "reevaluate:hive/t27:9111:72d3162e-cc78-11e3-81ab-4c9367dc0958"
	info, err := insp.GetTaskInfo(Queue, wantID)
	if err != nil {
		t.Fatalf("task %q not found: %v", wantID, err)
	}
	if info.Type != TypeReevaluate || info.State != asynq.TaskStateScheduled {
		t.Errorf("type %s state %v; want %s scheduled", info.Type, info.State, TypeReevaluate)
	}
	if info.Retention != 72*time.Hour || info.MaxRetry != ReevaluateMaxRetry || info.Timeout != ReevaluateTimeout {
		t.Errorf("retention %v maxretry %d timeout %v", info.Retention, info.MaxRetry, info.Timeout)
	}
	// ProcessIn(1h) counts from the enqueue, which happened between before and after.
	if info.NextProcessAt.Before(before.Add(time.Hour).Truncate(time.Second)) || info.NextProcessAt.After(after.Add(time.Hour)) {
		t.Errorf("next process at %v, want one hour after %v", info.NextProcessAt, before)
	}
	got, err := ParseReevaluate(asynq.NewTask(info.Type, info.Payload))
	if err != nil || got != p {
		t.Errorf("payload round trip = %+v, %v; want %+v", got, err, p)
	}
	var raw map[string]any
	if err := json.Unmarshal(info.Payload, &raw); err != nil || raw["installation_id"] != float64(7) || raw["pr_number"] != float64(12) {
		t.Errorf("payload JSON %s lacks snake_case fields", info.Payload)
	}

	// The same delivery again is success without a second task.
	res, err = e.Enqueue(context.Background(), task)
	if err != nil || res != AlreadyEnqueued {
		t.Fatalf("second Enqueue = %v, %v; want duplicate", res, err)
	}
	if n := len(all(t, insp)); n != 1 {
		t.Fatalf("%d tasks after duplicate, want 1", n)
	}
	// An archived reevaluate (retries spent) never blocks a later attempt:
	// the redelivery of its delivery runs it again.
	if err := insp.ArchiveTask(Queue, wantID); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Enqueue(context.Background(), task); err != nil || res != Enqueued {
		t.Fatalf("Enqueue over archived reevaluate = %v, %v; want enqueued", res, err)
	}
	if info, err := insp.GetTaskInfo(Queue, wantID); err != nil || info.State == asynq.TaskStateArchived {
		t.Fatalf("after the redelivery: %+v %v; want the task queued again", info, err)
	}
}

func TestReevaluateWithoutDelayIsPending(t *testing.T) {
	e, insp, _ := newQueue(t)
	task, err := NewReevaluate(ReevaluatePayload{Repo: "a/b", Issue: 1, Delivery: "d1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Enqueue(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	info, err := insp.GetTaskInfo(Queue, "reevaluate:a/b:1:d1")
	if err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("info %+v, %v; want pending", info, err)
	}
}

func TestExportPushArchivedNeverBlocks(t *testing.T) {
	e, insp, _ := newQueue(t)
	ctx := context.Background()
	p := ExportPushPayload{Repo: "hive/t27", Issue: 42, Head: head}
	task, err := NewExportPush(p)
	if err != nil {
		t.Fatal(err)
	}
	id := "export:push:hive/t27:42:" + head
	if got, _ := TaskID(task); got != id {
		t.Fatalf("TaskID = %q, want %q", got, id)
	}
	if res, err := e.Enqueue(ctx, task); err != nil || res != Enqueued {
		t.Fatalf("Enqueue = %v, %v", res, err)
	}
	// Pending: a second push of the same head is the same work.
	if res, err := e.Enqueue(ctx, task); err != nil || res != AlreadyEnqueued {
		t.Fatalf("Enqueue over pending = %v, %v; want duplicate", res, err)
	}
	info, err := insp.GetTaskInfo(Queue, id)
	if err != nil || info.MaxRetry != ExportPushMaxRetry || info.Timeout != ExportPushTimeout {
		t.Fatalf("info %+v, %v", info, err)
	}
	// Archived (retries exhausted): the next attempt replaces it.
	if err := insp.ArchiveTask(Queue, id); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Enqueue(ctx, task); err != nil || res != Enqueued {
		t.Fatalf("Enqueue over archived = %v, %v; want enqueued", res, err)
	}
	tasks := all(t, insp)
	if len(tasks) != 1 || tasks[0].ID != id || tasks[0].State != asynq.TaskStatePending {
		t.Fatalf("queue after re-enqueue: %d tasks %+v; want the one pending %s", len(tasks), tasks, id)
	}
	got, err := ParseExportPush(asynq.NewTask(tasks[0].Type, tasks[0].Payload))
	if err != nil || got != p {
		t.Fatalf("payload = %+v, %v", got, err)
	}
}

func TestEnqueueRedisDown(t *testing.T) {
	e, _, srv := newQueue(t)
	srv.Kill()
	task, _ := NewReevaluate(ReevaluatePayload{Repo: "a/b", Issue: 1, Delivery: "d1"}, time.Second)
	if _, err := e.Enqueue(context.Background(), task); err == nil {
		t.Fatal("Enqueue with Redis down succeeded")
	}
}

func TestConstructorsRefuseBadPayloads(t *testing.T) {
	for _, p := range []ReevaluatePayload{
		{Repo: "nobody", Issue: 1, Delivery: "d"},
		{Repo: "a/b", Issue: 0, Delivery: "d"},
		{Repo: "a/b", Issue: 1, Delivery: ""},
		{Repo: "a/b", Issue: 1, Delivery: "a:b"},
		{Repo: "a/b", Issue: 1, Delivery: strings.Repeat("d", 129)},
	} {
		if _, err := NewReevaluate(p, 0); err == nil {
			t.Errorf("NewReevaluate(%+v) accepted", p)
		}
	}
	for _, p := range []ExportPushPayload{
		{Repo: "a/b", Issue: 1, Head: "main"},
		{Repo: "a/b", Issue: 1, Head: strings.ToUpper(head)},
		{Repo: "a/b", Issue: -1, Head: head},
		{Repo: "a/../b", Issue: 1, Head: head},
	} {
		if _, err := NewExportPush(p); err == nil {
			t.Errorf("NewExportPush(%+v) accepted", p)
		}
	}
	if _, err := ParseReevaluate(NewSweep()); err == nil {
		t.Error("ParseReevaluate accepted a claim:sweep task")
	}
	if _, ok := TaskID(NewExportSweep()); ok {
		t.Error("TaskID named a periodic task")
	}
}

func TestPeriodicTasks(t *testing.T) {
	e, insp, _ := newQueue(t)
	for _, task := range []*asynq.Task{NewSweep(), NewExportSweep(), NewRedeliver()} {
		if res, err := e.Enqueue(context.Background(), task); err != nil || res != Enqueued {
			t.Fatalf("Enqueue %s = %v, %v", task.Type(), res, err)
		}
	}
	got := map[string]*asynq.TaskInfo{}
	for _, info := range all(t, insp) {
		got[info.Type] = info
	}
	for typ, want := range map[string][2]any{
		TypeSweep:       {SweepMaxRetry, SweepTimeout},
		TypeExportSweep: {ExportSweepMaxRetry, ExportSweepTimeout},
		TypeRedeliver:   {RedeliverMaxRetry, RedeliverTimeout},
	} {
		info := got[typ]
		if info == nil || info.MaxRetry != want[0] || info.Timeout != want[1] {
			t.Errorf("%s: %+v; want MaxRetry %v Timeout %v", typ, info, want[0], want[1])
		}
	}
}

func TestExportPushDryRunHasItsOwnID(t *testing.T) {
	e, insp, _ := newQueue(t)
	ctx := context.Background()
	real := ExportPushPayload{Repo: "hive/t27", Issue: 42, Head: head}
	dry := real
	dry.DryRun = true
	dryTask, err := NewExportPush(dry)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Enqueue(ctx, dryTask); err != nil || res != Enqueued {
		t.Fatalf("Enqueue dry run = %v, %v", res, err)
	}
	// A pending dry run does not stand in for the real push of the head.
	realTask, err := NewExportPush(real)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Enqueue(ctx, realTask); err != nil || res != Enqueued {
		t.Fatalf("Enqueue real push over a pending dry run = %v, %v; want enqueued", res, err)
	}
	if res, err := e.Enqueue(ctx, dryTask); err != nil || res != AlreadyEnqueued {
		t.Fatalf("second dry run = %v, %v; want duplicate", res, err)
	}
	ids := map[string]bool{}
	for _, info := range all(t, insp) {
		p, err := ParseExportPush(asynq.NewTask(info.Type, info.Payload))
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := TaskID(asynq.NewTask(info.Type, info.Payload)); info.ID != want {
			t.Errorf("task %s: TaskID from its payload is %s", info.ID, want)
		}
		if p.DryRun != strings.HasSuffix(info.ID, ":dry-run") {
			t.Errorf("task %s has dry_run %t", info.ID, p.DryRun)
		}
		ids[info.ID] = true
	}
	if len(ids) != 2 || !ids["export:push:hive/t27:42:"+head] || !ids["export:push:hive/t27:42:"+head+":dry-run"] {
		t.Fatalf("task ids %v; want the real push and the dry run", ids)
	}
	// A sweep's push carries neither key; a person's request keeps its id.
	data, _ := json.Marshal(real)
	if strings.Contains(string(data), "dry_run") || strings.Contains(string(data), "manual") {
		t.Fatalf("real payload %s names dry_run or manual", data)
	}
	manual := real
	manual.Manual = true
	mt, err := NewExportPush(manual)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Enqueue(ctx, mt); err != nil || res != AlreadyEnqueued {
		t.Fatalf("a person's push of a head already queued = %v, %v; want duplicate (never twice at once)", res, err)
	}
	if got, err := ParseExportPush(mt); err != nil || got != manual {
		t.Fatalf("manual payload = %+v, %v", got, err)
	}
}
