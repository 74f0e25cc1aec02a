package api_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// A stream trimmed to nothing holds no entry after any id: a resume is a
// reset whose oldest is "", "0-0" (from the beginning) too; both then
// follow the live changes.
func TestEventsResetWhenTheStreamWasEmptied(t *testing.T) {
	e := newWatchEnv(t, watchOpts{})
	for i := 1; i <= 3; i++ {
		e.put(t, "hive/t27", i, working)
	}
	_, ids := e.auditEntries(t)
	if err := e.redis.Client().XTrimMaxLen(t.Context(), "queen:audit", 0).Err(); err != nil {
		t.Fatal(err)
	}
	w := e.watch(t, "", "Last-Event-ID", ids[1])
	ev := w.next(t)
	if ev.Event != "reset" || ev.ID != "" {
		t.Fatalf("first event %+v, want a reset without id", ev)
	}
	var r map[string]string
	if err := json.Unmarshal([]byte(ev.Data), &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"after": ids[1], "oldest": "",
		"reason": "the audit stream no longer holds entries after this id; re-read GET /v1/claims"}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("reset %v, want %v", r, want)
	}
	w0 := e.watch(t, "", "Last-Event-ID", "0-0")
	if ev := w0.next(t); ev.Event != "reset" || ev.ID != "" {
		t.Fatalf("after 0-0 on an emptied stream: %+v, want a reset without id", ev)
	}
	w0.quiet(t, 100*time.Millisecond)
	e.put(t, "hive/t27", 4, working)
	for _, w := range []*watch{w, w0} {
		if d := w.nextChange(t).change(t); d.Entry["issue"] != 4.0 {
			t.Fatalf("after the emptied stream: issue %v, want 4", d.Entry["issue"])
		}
	}
}
