package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/api"
	"github.com/queen-app/queen-app/internal/api/openapicheck"
	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/audit"
	"github.com/queen-app/queen-app/internal/export"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/testkit"
)

const token = "client-test-token-5be1"

var t0 = time.Date(2026, 10, 10, 20, 0, 0, 0, time.UTC)

func now() time.Time { return t0 }

// serve runs the API over a private Redis, mounted under prefix.
func serve(t *testing.T, prefix string, reviewFirst bool) (string, *ledger.Ledger) {
	t.Helper()
	l := ledger.New(redistest.Start(t).Client(), ledger.Options{Now: now})
	h, err := api.New(api.Config{Ledger: l, Token: token, ReviewFirst: reviewFirst, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	h = openapicheck.Handler(h, func(err error) { t.Errorf("openapi: %v", err) })
	if prefix != "" {
		h = http.StripPrefix(prefix, h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + prefix, l
}

func patch(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClientMirrorsTheAPI(t *testing.T) {
	base, _ := serve(t, "/queen", true)
	c, err := apiclient.New(base+"/", token, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Source = "client-test"
	ctx := context.Background()

	cl, err := c.Put(ctx, "hive/t27", 1, patch(t, `{"started": true, "owned_paths": ["src/a.go"]}`))
	if err != nil || cl.Outcome != "created" || cl.Claim != "running" || !cl.HoldsFiles || cl.Version != 1 {
		t.Fatalf("put: %+v %v", cl, err)
	}
	if _, err := c.Put(ctx, "hive/t27", 2, patch(t, `{"started": true, "finished_at": "2026-10-10T19:50:00Z", "review_state": "sendBack", "send_backs": 1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "hive/t27", 3, patch(t, `{"started": true, "finished_at": "2026-10-10T19:50:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "acme/web", 5, nil); err != nil {
		t.Fatal(err)
	}

	d, err := c.Get(ctx, "hive/t27", 2)
	if err != nil || d.Claim != "rejected" || d.WouldFree == nil || len(d.Explain) < 3 || len(d.History) != 1 || d.History[0].Source != audit.API("client-test") {
		t.Fatalf("get: %+v %v", d, err)
	}

	page, err := c.List(ctx, apiclient.ListOptions{Limit: 1})
	if err != nil || len(page.Claims) != 1 || page.Claims[0].Repo != "acme/web" || page.NextCursor == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	all, err := c.ListAll(ctx, apiclient.ListOptions{Limit: 1})
	if err != nil || len(all) != 4 {
		t.Fatalf("list all: %d %v", len(all), err)
	}
	yes := true
	running, err := c.ListAll(ctx, apiclient.ListOptions{Repo: "hive/t27", ClaimsIssue: &yes, Claim: "running"})
	if err != nil || len(running) != 1 || running[0].Issue != 1 {
		t.Fatalf("filtered: %+v %v", running, err)
	}

	held, err := c.HeldPaths(ctx, "hive/t27")
	if err != nil || len(held) != 1 || held[0].Path != "src/a.go" || held[0].Issue != 1 || held[0].Until != nil {
		t.Fatalf("held: %+v %v", held, err)
	}

	adm, err := c.Admission(ctx, "hive/t27", []apiwire.Candidate{{Issue: 9}, {Issue: 2}})
	if err != nil || adm.Queue != 1 || !reflect.DeepEqual(adm.Admitted, []int64{2}) || !reflect.DeepEqual(adm.Held, []int64{9}) || adm.Refusal != nil {
		t.Fatalf("admission: %+v %v", adm, err)
	}

	fr, err := c.Free(ctx, "hive/t27", 2, "gone", 0)
	if err != nil || fr.Outcome != "free" || fr.Live {
		t.Fatalf("free: %+v %v", fr, err)
	}
	kp, err := c.Keep(ctx, "hive/t27", 2, "keep it", 0)
	if err != nil || kp.Outcome != "keep" || !kp.Live {
		t.Fatalf("keep: %+v %v", kp, err)
	}
	del, err := c.Delete(ctx, "hive/t27", 2, "dup")
	if err != nil || del.Outcome != "deleted" || del.Issue != 2 {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if _, err := c.Get(ctx, "hive/t27", 2); !apiclient.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestClientErrorsCarryStatusAndTextNotTheToken(t *testing.T) {
	base, l := serve(t, "", false)
	ctx := context.Background()
	c, err := apiclient.New(base, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Put(ctx, "hive/t27", 1, patch(t, `{"send_backs": -2}`))
	var ae *apiclient.Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Field != "send_backs" || !strings.Contains(ae.Message, "must not be negative") {
		t.Fatalf("bad field: %#v", err)
	}
	if !strings.Contains(err.Error(), "PUT /v1/repos/hive/t27/dispatches/1: 400 Bad Request: send_backs: must not be negative") {
		t.Fatalf("error text: %v", err)
	}
	if _, err := l.Get(ctx, "hive/t27", 1); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a refused put wrote: %v", err)
	}
	_, err = c.List(ctx, apiclient.ListOptions{Claim: "done"})
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Field != "claim" {
		t.Fatalf("bad filter: %v", err)
	}
	if _, err := c.Free(ctx, "hive/t27", 1, "x", 0); !apiclient.IsNotFound(err) {
		t.Fatalf("free of a missing row: %v", err)
	}

	wrong, _ := apiclient.New(base, token+"-old", nil)
	_, err = wrong.List(ctx, apiclient.ListOptions{})
	if !errors.As(err, &ae) || ae.Status != 401 || strings.Contains(err.Error(), token) {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := c.Get(ctx, "not-a-repo", 1); err == nil || !strings.Contains(err.Error(), "not owner/name") {
		t.Fatalf("bad repo: %v", err)
	}

	down, _ := apiclient.New("http://127.0.0.1:1", token, nil)
	if _, err := down.List(ctx, apiclient.ListOptions{}); err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("unreachable API: %v", err)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ url, token string }{
		{"", token}, {"ftp://x", token}, {"http://", token}, {"http://u:p@host", token}, {"http://host?q=1", token},
		{"http://127.0.0.1:8081", ""},
	} {
		if _, err := apiclient.New(tc.url, tc.token, nil); err == nil {
			t.Errorf("New(%q, %q) accepted", tc.url, tc.token)
		} else if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("error names the token: %v", err)
		}
	}
}

func TestClientExportPush(t *testing.T) {
	srv := redistest.Start(t)
	l := ledger.New(srv.Client(), ledger.Options{Now: now})
	insp := asynq.NewInspectorFromRedisClient(srv.Client())
	workers := export.Workers{RDB: srv.Client()}
	if err := workers.Announce(context.Background(), "test-worker"); err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{Ledger: l, Token: token, Now: now,
		Enqueuer: tasks.NewEnqueuer(asynq.NewClientFromRedisClient(srv.Client()), insp), ExportWorkers: workers,
		ExportRepo: "hive/t27"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(openapicheck.Handler(h, func(err error) { t.Errorf("openapi: %v", err) }))
	t.Cleanup(ts.Close)
	c, err := apiclient.New(ts.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const head = "4f2a9c0e1b7d3a5f6e8c9b0a1d2e3f4a5b6c7d8e"
	if _, err := c.Put(ctx, "hive/t27", 7, patch(t, `{"started": true, "finished_at": "2026-10-10T19:00:00Z", "review_state": "accept", "judged_head": "`+head+`"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "hive/t27", 8, patch(t, `{"started": true}`)); err != nil {
		t.Fatal(err)
	}

	got, err := c.ExportPush(ctx, "hive/t27", 7, true)
	want := &apiwire.ExportPush{Repo: "hive/t27", Issue: 7, Head: head, DryRun: true, TaskID: "export:push:hive/t27:7:" + head + ":dry-run"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("dry run = %+v, %v; want %+v", got, err, want)
	}
	if got, err = c.ExportPush(ctx, "hive/t27", 7, false); err != nil || got.DryRun || got.AlreadyEnqueued || got.TaskID != "export:push:hive/t27:7:"+head {
		t.Fatalf("push = %+v, %v", got, err)
	}
	if info, err := insp.GetTaskInfo("default", "export:push:hive/t27:7:"+head); err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("task %+v, %v; want it pending", info, err)
	}
	_, err = c.ExportPush(ctx, "hive/t27", 8, false)
	var ae *apiclient.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Message, "not accepted") {
		t.Fatalf("push of a running row: %v, want 409 not accepted", err)
	}
	if _, err := c.ExportPush(ctx, "hive/t27", 99, false); !apiclient.IsNotFound(err) {
		t.Fatalf("push of an unknown row: %v, want 404", err)
	}
}

// A redirect to another port or scheme of the API's host is refused before
// anything is sent there: Go's client would have sent the token along
// (it drops Authorization only for another host).
func TestTheTokenNeverFollowsARedirectOffTheAPI(t *testing.T) {
	fronts, leaked := testkit.OffOriginRedirects(t, http.StatusTemporaryRedirect, `{"claims": [], "next_cursor": ""}`)
	for name, front := range fronts {
		for _, hc := range []*http.Client{nil, {Timeout: 5 * time.Second}} {
			c, err := apiclient.New(front, token, hc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.List(context.Background(), apiclient.ListOptions{})
			if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), token) {
				t.Errorf("%s: %v, want the redirect refused", name, err)
			}
		}
	}
	if n := leaked(); n != 0 {
		t.Fatalf("the token reached another port %d times", n)
	}
}
