package ghevents

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/tasks"
)

var (
	secret   = []byte("current-webhook-secret-5f1c")
	previous = []byte("previous-webhook-secret-9a0e")
)

const (
	repoName  = "Codertocat/Hello-World"
	repoID    = 186853002
	installID = 1
	delay     = 7 * time.Second
)

type fixture struct {
	h       http.Handler
	reg     *installs.Registry
	insp    *asynq.Inspector
	queue   *redistest.Server // asynq's Redis
	store   *redistest.Server // the registry's Redis (the same server unless split)
	logs    *bytes.Buffer
	metrics *Metrics
	secrets [][]byte
	t       testing.TB
}

// newFixture starts Redis, installs Codertocat/Hello-World under installation
// 1 and builds the handler over a real asynq client. split puts the queue on a
// second Redis so its failure can be told from the registry's.
func newFixture(t testing.TB, split bool) *fixture {
	t.Helper()
	f := &fixture{t: t, logs: &bytes.Buffer{}, secrets: [][]byte{secret, previous}}
	f.store = redistest.Start(t)
	f.queue = f.store
	if split {
		f.queue = redistest.Start(t)
	}
	f.reg = installs.New(f.store.Client())
	if err := f.reg.Replace(context.Background(), []installs.Installation{{ID: installID, Repos: []string{repoName}}}, true); err != nil {
		t.Fatal(err)
	}
	opt := asynq.RedisClientOpt{Addr: f.queue.Addr}
	client := asynq.NewClient(opt)
	f.insp = asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); f.insp.Close() })
	f.metrics = NewMetrics(prometheus.NewRegistry())
	h, err := NewHandler(Config{
		Secrets:         f.secrets,
		Enqueuer:        tasks.NewEnqueuer(client, f.insp),
		Installs:        f.reg,
		Deliveries:      NewDeliveryLog(f.store.Client()),
		ReevaluateDelay: delay,
		Logger:          slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics:         f.metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// post sends body as a signed delivery; edit may change the request.
func (f *fixture) post(event, delivery string, body []byte, edit func(*http.Request)) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(EventHeader, event)
	req.Header.Set(DeliveryHeader, delivery)
	req.Header.Set(SignatureHeader, sign(secret, body))
	if edit != nil {
		edit(req)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// queued lists every task in the queue, in any state.
func (f *fixture) queued() []*asynq.TaskInfo {
	f.t.Helper()
	var out []*asynq.TaskInfo
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		f.insp.ListPendingTasks, f.insp.ListScheduledTasks, f.insp.ListActiveTasks,
		f.insp.ListRetryTasks, f.insp.ListArchivedTasks, f.insp.ListCompletedTasks,
	} {
		infos, err := list(tasks.Queue, asynq.PageSize(1000))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return nil
		}
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, infos...)
	}
	return out
}

func load(t testing.TB, rel string) map[string]any {
	t.Helper()
	data := githubtest.Payload(t, rel)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t testing.TB, m map[string]any) []byte {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// pr rewrites a real pull_request payload: action, head ref and merged; head
// repo is left as GitHub sent it (the base repository).
func pr(t testing.TB, file, ref string, merged bool) map[string]any {
	m := load(t, "pull_request/"+file)
	p := m["pull_request"].(map[string]any)
	p["head"].(map[string]any)["ref"] = ref
	p["merged"] = merged
	if merged {
		p["merged_at"] = "2019-05-15T15:20:40Z"
	}
	return m
}

func setHeadRepo(m map[string]any, repo any) map[string]any {
	m["pull_request"].(map[string]any)["head"].(map[string]any)["repo"] = repo
	return m
}

func forkRepo(m map[string]any) map[string]any {
	head := m["pull_request"].(map[string]any)["head"].(map[string]any)
	fork := map[string]any{}
	for k, v := range head["repo"].(map[string]any) {
		fork[k] = v
	}
	fork["id"] = float64(999999)
	fork["full_name"] = "forker/Hello-World"
	fork["fork"] = true
	head["repo"] = fork
	return m
}

func TestRequestMatrix(t *testing.T) {
	f := newFixture(t, false)
	closed := func(ref string) []byte { return encode(t, pr(t, "closed.payload.json", ref, false)) }
	accepted := closed("queen-77")
	big := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("a"), 26<<20)...), `"}`...)

	cases := []struct {
		name   string
		event  string
		body   []byte
		edit   func(*http.Request)
		code   int
		queued int
	}{
		{name: "no signature", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Header.Del(SignatureHeader) }, code: 401},
		{name: "wrong signature", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Header.Set(SignatureHeader, sign([]byte("not-the-secret"), accepted)) }, code: 401},
		{name: "signature of another body", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Header.Set(SignatureHeader, sign(secret, closed("queen-78"))) }, code: 401},
		{name: "malformed signature", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Header.Set(SignatureHeader, "sha256=zz") }, code: 401},
		{name: "SHA-1 only", event: "pull_request", body: accepted,
			edit: func(r *http.Request) {
				r.Header.Del(SignatureHeader)
				r.Header.Set("X-Hub-Signature", "sha1=0000000000000000000000000000000000000000")
			}, code: 401},
		{name: "empty body", event: "pull_request", body: []byte{}, code: 400},
		{name: "truncated JSON", event: "pull_request", body: accepted[:len(accepted)/2], code: 400},
		{name: "truncated JSON unknown event", event: "push", body: accepted[:100], code: 400},
		{name: "form-encoded", event: "pull_request", body: []byte("payload=" + string(accepted)),
			edit: func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, code: 415},
		{name: "no content type", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Header.Del("Content-Type") }, code: 415},
		{name: "JSON with charset", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Header.Set("Content-Type", "application/json; charset=utf-8") }, code: 202, queued: 1},
		{name: "26 MiB body", event: "pull_request", body: big, code: 413},
		{name: "26 MiB body without length", event: "pull_request", body: big,
			edit: func(r *http.Request) { r.ContentLength = -1 }, code: 413},
		{name: "missing event header", event: "", body: accepted, code: 400},
		{name: "missing delivery header", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Header.Del(DeliveryHeader) }, code: 400},
		{name: "GET", event: "pull_request", body: accepted,
			edit: func(r *http.Request) { r.Method = http.MethodGet }, code: 405},
		{name: "unknown event", event: "push", body: encode(t, load(t, "push/payload.json")), code: 202},
		{name: "opened", event: "pull_request", body: encode(t, pr(t, "opened.payload.json", "queen-77", false)), code: 202, queued: 1},
		{name: "event with digits", event: "projects_v2_item", body: []byte(`{"action":"edited"}`), code: 202},
		{name: "event with a capital", event: "Projects_v2_item", body: []byte(`{"action":"edited"}`), code: 400},
		{name: "event with a hyphen", event: "projects-v2-item", body: []byte(`{"action":"edited"}`), code: 400},
		{name: "synchronize", event: "pull_request", body: encode(t, pr(t, "synchronize.payload.json", "queen-77", false)), code: 202},
		{name: "queen-0", event: "pull_request", body: closed("queen-0"), code: 202},
		{name: "queen-01", event: "pull_request", body: closed("queen-01"), code: 202},
		{name: "queen-abc", event: "pull_request", body: closed("queen-abc"), code: 202},
		{name: "queen-99999999999", event: "pull_request", body: closed("queen-99999999999"), code: 202},
		{name: "refs/heads/queen-5", event: "pull_request", body: closed("refs/heads/queen-5"), code: 202},
		{name: "queen-9999999999", event: "pull_request", body: closed("queen-9999999999"), code: 202, queued: 1},
		{name: "fork head", event: "pull_request", body: encode(t, forkRepo(pr(t, "closed.payload.json", "queen-77", true))), code: 202},
		{name: "null head repo", event: "pull_request", body: encode(t, setHeadRepo(pr(t, "closed.payload.json", "queen-77", true), nil)), code: 202},
		{name: "previous secret", event: "pull_request", body: closed("queen-78"),
			edit: func(r *http.Request) { r.Header.Set(SignatureHeader, sign(previous, closed("queen-78"))) }, code: 202, queued: 1},
		{name: "ping", event: "ping", body: encode(t, load(t, "ping/with-app_id.payload.json")), code: 200},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(f.queued())
			rec := f.post(c.event, fmt.Sprintf("matrix-%d", i), c.body, c.edit)
			if rec.Code != c.code {
				t.Fatalf("code %d (%s), want %d", rec.Code, rec.Body, c.code)
			}
			if got := len(f.queued()) - before; got != c.queued {
				t.Fatalf("%d tasks enqueued, want %d", got, c.queued)
			}
			if rec.Body.Len() > 300 {
				t.Fatalf("response of %d bytes: the body must stay small", rec.Body.Len())
			}
			if c.code == 405 && rec.Header().Get("Allow") != "POST" {
				t.Fatalf("405 without Allow: POST")
			}
		})
	}
	if got := value(f.metrics.SignatureFailures.WithLabelValues("missing")); got != 2 {
		t.Errorf("missing-signature failures = %v, want 2", got)
	}
	if got := value(f.metrics.SignatureFailures.WithLabelValues("mismatch")); got != 3 {
		t.Errorf("mismatched-signature failures = %v, want 3", got)
	}
	if got := value(f.metrics.Requests.WithLabelValues("pull_request", "closed", "202")); got != 10 {
		t.Errorf("pull_request closed 202 = %v, want 10", got)
	}
	// Unverified requests carry no caller-chosen labels.
	if got := value(f.metrics.Requests.WithLabelValues("", "", "401")); got != 5 {
		t.Errorf("unlabelled 401 = %v, want 5", got)
	}
	if got := value(f.metrics.Requests.WithLabelValues("other", "", "202")); got != 2 {
		t.Errorf("push and projects_v2_item counted as event other = %v, want 2", got)
	}
}

func TestAcceptedEnqueuesOneTaskWithPayload(t *testing.T) {
	cases := []struct {
		name, file, action string
		merged             bool
	}{
		{"closed merged", "closed.payload.json", "closed", true},
		{"closed unmerged", "closed.payload.json", "closed", false},
		{"reopened", "reopened.payload.json", "reopened", false},
		{"opened", "opened.payload.json", "opened", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, false)
			delivery := "72d3162e-cc78-11e3-81ab-4c9367dc0958"
			before := time.Now()
			rec := f.post("pull_request", delivery, encode(t, pr(t, c.file, "queen-4242", c.merged)), nil)
			after := time.Now()
			if rec.Code != http.StatusAccepted {
				t.Fatalf("code %d (%s), want 202", rec.Code, rec.Body)
			}
			id := "reevaluate:" + ghrepo.Key(repoName) + ":4242:" + delivery
			var resp map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp["status"] != "accepted" || resp["task_id"] != id {
				t.Fatalf("response %s, want accepted with task_id %s", rec.Body, id)
			}
			all := f.queued()
			if len(all) != 1 {
				t.Fatalf("%d tasks, want 1", len(all))
			}
			info := all[0]
			if info.ID != id || info.Type != tasks.TypeReevaluate || info.State != asynq.TaskStateScheduled {
				t.Fatalf("task %s %s %v, want %s scheduled", info.ID, info.Type, info.State, id)
			}
			if info.NextProcessAt.Before(before.Add(delay).Truncate(time.Second)) || info.NextProcessAt.After(after.Add(delay)) {
				t.Fatalf("runs at %v, want %v after the delivery (%v)", info.NextProcessAt, delay, before)
			}
			if info.Retention != 72*time.Hour {
				t.Fatalf("retention %v, want 72h", info.Retention)
			}
			got, err := tasks.ParseReevaluate(asynq.NewTask(info.Type, info.Payload))
			// The receipt time travels with the task (queen_webhook_to_free_seconds).
			if got.ReceivedAt < before.UnixMilli() || got.ReceivedAt > after.UnixMilli() {
				t.Fatalf("received_at %d, want the delivery's time, %d to %d", got.ReceivedAt, before.UnixMilli(), after.UnixMilli())
			}
			got.ReceivedAt = 0
			want := tasks.ReevaluatePayload{Repo: repoName, Issue: 4242, Delivery: delivery, Event: "pull_request",
				Action: c.action, InstallationID: installID, PRNumber: 2, Merged: c.merged}
			if err != nil || got != want {
				t.Fatalf("payload %+v (%v)\nwant    %+v", got, err, want)
			}
			if n := value(f.metrics.Enqueues.WithLabelValues(tasks.TypeReevaluate, "enqueued")); n != 1 {
				t.Fatalf("enqueued metric %v, want 1", n)
			}
		})
	}
}

func TestDuplicateDelivery(t *testing.T) {
	f := newFixture(t, false)
	body := encode(t, pr(t, "closed.payload.json", "queen-12", true))
	for i, want := range []string{"accepted", "duplicate"} {
		rec := f.post("pull_request", "same-delivery", body, nil)
		if rec.Code != http.StatusAccepted || status(t, rec) != want {
			t.Fatalf("attempt %d: %d %s, want 202 %s", i, rec.Code, rec.Body, want)
		}
	}
	if n := len(f.queued()); n != 1 {
		t.Fatalf("a redelivery enqueued %d tasks, want 1", n)
	}
	if n := value(f.metrics.Enqueues.WithLabelValues(tasks.TypeReevaluate, "duplicate")); n != 1 {
		t.Fatalf("duplicate metric %v, want 1", n)
	}
	// Two hooks delivering one event under two ids: two tasks, the worker's
	// re-read makes the second harmless.
	if rec := f.post("pull_request", "other-delivery", body, nil); rec.Code != http.StatusAccepted {
		t.Fatalf("second delivery id: code %d", rec.Code)
	}
	if n := len(f.queued()); n != 2 {
		t.Fatalf("two delivery ids enqueued %d tasks, want 2", n)
	}
}

// status is the "status" of a 2xx answer.
func status(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var resp struct{ Status string }
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("answer %q: %v", rec.Body, err)
	}
	return resp.Status
}

// flakyInstalls fails its next write as an unreachable Redis would.
type flakyInstalls struct {
	Installs
	fail bool
}

func (f *flakyInstalls) Remove(ctx context.Context, id int64) error {
	if f.fail {
		f.fail = false
		return fmt.Errorf("remove: %w", context.DeadlineExceeded)
	}
	return f.Installs.Remove(ctx, id)
}

// A signed installation delivery replayed byte for byte, or redelivered by
// GitHub, after it was done is a 202 duplicate that writes nothing; one
// that failed is not remembered, so its redelivery still does its work.
func TestReplayedDeliveryDoesNothing(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	flaky := &flakyInstalls{Installs: f.reg}
	h, err := NewHandler(Config{Secrets: f.secrets, Enqueuer: EnqueuerFunc(func(context.Context, *asynq.Task) (tasks.Result, error) {
		t.Fatal("an installation delivery enqueued a task")
		return 0, nil
	}), Installs: flaky, Deliveries: NewDeliveryLog(f.store.Client())})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	installed := func(repo string) bool {
		t.Helper()
		_, _, ok, err := f.reg.Lookup(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// deleted names installation 2 and octocat/Hello-World.
	if err := f.reg.AddRepos(ctx, 2, "octocat/Hello-World"); err != nil {
		t.Fatal(err)
	}
	deleted := githubtest.Payload(t, "installation/deleted.payload.json")
	const id = "2b2e5c84-0f1a-11f1-8a3f-0d7e1c9b4a10"

	flaky.fail = true
	if rec := f.post("installation", id, deleted, nil); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("write failed: %d %s, want 503", rec.Code, rec.Body)
	}
	if n, err := f.store.Client().Exists(ctx, DeliveryKeyPrefix+id).Result(); err != nil || n != 0 {
		t.Fatalf("a delivery answered 503 is remembered (%d, %v): its redelivery would be dropped", n, err)
	}
	// GitHub's redelivery, same id: done now.
	if rec := f.post("installation", id, deleted, nil); rec.Code != http.StatusAccepted || status(t, rec) != "accepted" {
		t.Fatalf("redelivery: %d %s, want 202 accepted", rec.Code, rec.Body)
	}
	if installed("octocat/Hello-World") {
		t.Fatal("after deleted: octocat/Hello-World still installed")
	}
	if ttl, err := f.store.Client().TTL(ctx, DeliveryKeyPrefix+id).Result(); err != nil || ttl <= 71*time.Hour || ttl > 72*time.Hour {
		t.Fatalf("delivery remembered for %v (%v), want 72h", ttl, err)
	}
	// The next sync installs it again; a replay of the captured bytes
	// must not empty the registry again.
	if err := f.reg.AddRepos(ctx, 2, "octocat/Hello-World"); err != nil {
		t.Fatal(err)
	}
	if rec := f.post("installation", id, deleted, nil); rec.Code != http.StatusAccepted || status(t, rec) != "duplicate" {
		t.Fatalf("replay: %d %s, want 202 duplicate", rec.Code, rec.Body)
	}
	if !installed("octocat/Hello-World") {
		t.Fatal("the replay removed octocat/Hello-World again")
	}

	// installation_repositories too.
	removed := load(t, "installation_repositories/added.payload.json")
	removed["action"] = "removed"
	removed["repositories_removed"] = removed["repositories_added"]
	removed["repositories_added"] = []any{}
	body := encode(t, removed)
	if err := f.reg.AddRepos(ctx, 957387, "Codertocat/Space"); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"accepted", "duplicate"} {
		if i == 1 {
			if err := f.reg.AddRepos(ctx, 957387, "Codertocat/Space"); err != nil {
				t.Fatal(err)
			}
		}
		if rec := f.post("installation_repositories", "repos-1", body, nil); rec.Code != http.StatusAccepted || status(t, rec) != want {
			t.Fatalf("removed, attempt %d: %d %s, want 202 %s", i, rec.Code, rec.Body, want)
		}
	}
	if !installed("Codertocat/Space") {
		t.Fatal("the replayed removal removed Codertocat/Space again")
	}
}

func TestIgnoredRepositories(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	body := func() []byte { return encode(t, pr(t, "closed.payload.json", "queen-12", true)) }

	if err := f.reg.Suspend(ctx, installID); err != nil {
		t.Fatal(err)
	}
	if rec := f.post("pull_request", "d-suspended", body(), nil); rec.Code != http.StatusAccepted {
		t.Fatalf("suspended: code %d", rec.Code)
	}
	if err := f.reg.Remove(ctx, installID); err != nil {
		t.Fatal(err)
	}
	rec := f.post("pull_request", "d-uninstalled", body(), nil)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), "ignored") {
		t.Fatalf("uninstalled: code %d %s, want 202 ignored", rec.Code, rec.Body)
	}
	if n := len(f.queued()); n != 0 {
		t.Fatalf("%d tasks for a suspended or uninstalled repository, want 0", n)
	}
	if !strings.Contains(f.logs.String(), "repository not installed") {
		t.Fatalf("uninstalled repository not logged:\n%s", f.logs)
	}
}

// Before the registry's first complete sync a repository it does not know
// may well be installed: the delivery is refused with a 503, so GitHub keeps
// it as failed for the redelivery job, never answered 202 and dropped.
func TestUnknownRepositoryBeforeTheFirstSyncIs503(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	if err := f.store.Client().Del(ctx, installs.KeySynced).Err(); err != nil {
		t.Fatal(err)
	}
	body := encode(t, pr(t, "closed.payload.json", "queen-12", true))
	if err := f.reg.Remove(ctx, installID); err != nil {
		t.Fatal(err)
	}
	if rec := f.post("pull_request", "d-early", body, nil); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("before the first sync: code %d %s; want 503", rec.Code, rec.Body)
	}
	if err := f.reg.Replace(ctx, []installs.Installation{{ID: installID, Repos: []string{repoName}}}, true); err != nil {
		t.Fatal(err)
	}
	if rec := f.post("pull_request", "d-early", body, nil); rec.Code != http.StatusAccepted || len(f.queued()) != 1 {
		t.Fatalf("after the sync: code %d, %d tasks; want the redelivery enqueued", rec.Code, len(f.queued()))
	}
}

func TestRedisDownAnswers503(t *testing.T) {
	body := encode(t, pr(t, "closed.payload.json", "queen-12", true))
	t.Run("shared Redis", func(t *testing.T) {
		f := newFixture(t, false)
		f.store.Kill()
		if rec := f.post("pull_request", "d1", body, nil); rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("code %d (%s), want 503", rec.Code, rec.Body)
		}
	})
	t.Run("queue Redis", func(t *testing.T) {
		f := newFixture(t, true)
		f.queue.Kill()
		rec := f.post("pull_request", "d1", body, nil)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("code %d (%s), want 503", rec.Code, rec.Body)
		}
		if n := value(f.metrics.Enqueues.WithLabelValues(tasks.TypeReevaluate, "error")); n != 1 {
			t.Fatalf("error metric %v, want 1", n)
		}
		// The delivery is retried by GitHub's redelivery once Redis is back.
		f.queue.Restart()
		if rec := f.post("pull_request", "d1", body, nil); rec.Code != http.StatusAccepted {
			t.Fatalf("after restart: code %d, want 202", rec.Code)
		}
		if n := len(f.queued()); n != 1 {
			t.Fatalf("after restart: %d tasks, want 1", n)
		}
	})
	t.Run("installation event", func(t *testing.T) {
		f := newFixture(t, false)
		f.store.Kill()
		rec := f.post("installation", "d2", encode(t, load(t, "installation/created.payload.json")), nil)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("code %d, want 503", rec.Code)
		}
	})
}

func TestInstallationEvents(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	lookup := func(repo string) (int64, bool, bool) {
		t.Helper()
		id, susp, ok, err := f.reg.Lookup(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		return id, susp, ok
	}
	send := func(event, delivery string, m map[string]any) {
		t.Helper()
		if rec := f.post(event, delivery, encode(t, m), nil); rec.Code != http.StatusAccepted {
			t.Fatalf("%s %s: code %d (%s), want 202", event, m["action"], rec.Code, rec.Body)
		}
	}

	// created lists Codertocat/Hello-World under 957387 (it moves from 1).
	send("installation", "i1", load(t, "installation/created.payload.json"))
	if id, susp, ok := lookup(repoName); !ok || susp || id != 957387 {
		t.Fatalf("after created: %d %v %v", id, susp, ok)
	}
	// A pull_request now enqueues with the registry's installation id.
	if rec := f.post("pull_request", "p1", encode(t, pr(t, "closed.payload.json", "queen-3", false)), nil); rec.Code != 202 {
		t.Fatalf("pull_request after created: %d", rec.Code)
	}
	all := f.queued()
	if len(all) != 1 || !strings.Contains(string(all[0].Payload), `"installation_id":957387`) {
		t.Fatalf("tasks %v, want one for installation 957387", all)
	}

	send("installation_repositories", "i2", load(t, "installation_repositories/added.payload.json"))
	if id, _, ok := lookup("Codertocat/Space"); !ok || id != 957387 {
		t.Fatalf("after added: Codertocat/Space %d %v", id, ok)
	}

	removed := load(t, "installation_repositories/added.payload.json")
	removed["action"] = "removed"
	removed["repositories_removed"] = removed["repositories_added"]
	removed["repositories_added"] = []any{}
	send("installation_repositories", "i3", removed)
	if _, _, ok := lookup("Codertocat/Space"); ok {
		t.Fatal("after removed: Codertocat/Space still installed")
	}

	suspend := load(t, "installation/created.payload.json")
	suspend["action"] = "suspend"
	suspend["installation"].(map[string]any)["suspended_at"] = "2019-05-16T10:00:00Z"
	delete(suspend, "repositories")
	send("installation", "i4", suspend)
	if _, susp, ok := lookup(repoName); !ok || !susp {
		t.Fatal("after suspend: not suspended")
	}
	if rec := f.post("pull_request", "p2", encode(t, pr(t, "closed.payload.json", "queen-3", false)), nil); rec.Code != 202 || len(f.queued()) != 1 {
		t.Fatalf("pull_request while suspended: code %d, %d tasks; want 202 and still 1", rec.Code, len(f.queued()))
	}

	unsuspend := load(t, "installation/created.payload.json")
	unsuspend["action"] = "unsuspend"
	send("installation", "i5", unsuspend)
	if _, susp, ok := lookup(repoName); !ok || susp {
		t.Fatal("after unsuspend: still suspended or gone")
	}

	// deleted names installation 2 and octocat/Hello-World.
	if err := f.reg.AddRepos(ctx, 2, "octocat/Hello-World"); err != nil {
		t.Fatal(err)
	}
	send("installation", "i6", load(t, "installation/deleted.payload.json"))
	if _, _, ok := lookup("octocat/Hello-World"); ok {
		t.Fatal("after deleted: octocat/Hello-World still installed")
	}
	if _, _, ok := lookup(repoName); !ok {
		t.Fatal("deleting installation 2 removed installation 957387's repository")
	}

	other := load(t, "installation/created.payload.json")
	other["action"] = "something_new"
	send("installation", "i7", other)
	if n := len(f.queued()); n != 1 {
		t.Fatalf("installation events enqueued tasks: %d, want 1 (the pull_request)", n)
	}
}

func TestLogsNeverCarryBodyOrSecret(t *testing.T) {
	f := newFixture(t, false)
	m := pr(t, "closed.payload.json", "queen-31", true)
	m["pull_request"].(map[string]any)["body"] = "BODY-MARKER-do-not-log"
	body := encode(t, m)
	f.post("pull_request", "log-delivery", body, nil)
	f.post("pull_request", "log-bad", body, func(r *http.Request) { r.Header.Set(SignatureHeader, sign([]byte("x"), body)) })
	logs := f.logs.String()
	for _, banned := range []string{"BODY-MARKER", string(secret), string(previous), sign(secret, body)} {
		if strings.Contains(logs, banned) {
			t.Fatalf("logs contain %q:\n%s", banned, logs)
		}
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(logs, "\n", 2)[0]), &line); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"delivery_id": "log-delivery", "event": "pull_request", "action": "closed",
		"installation_id": float64(installID), "repo": repoName, "issue": float64(31),
		"task_id": "reevaluate:" + ghrepo.Key(repoName) + ":31:log-delivery"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log %s = %v, want %v", k, line[k], v)
		}
	}
}

// A wrong secret is found from the log alone: the refusal's line names the
// variable to fix, counts its reason, and the response tells a caller nothing.
func TestWrongSecretRefusalNamesTheVariable(t *testing.T) {
	f := newFixture(t, false)
	body := encode(t, pr(t, "closed.payload.json", "queen-32", true))
	recs := map[string]*httptest.ResponseRecorder{
		"mismatch": f.post("pull_request", "wrong-secret", body, func(r *http.Request) {
			r.Header.Set(SignatureHeader, sign([]byte("not the App's secret"), body))
		}),
		"missing": f.post("pull_request", "unsigned", body, func(r *http.Request) { r.Header.Del(SignatureHeader) }),
	}
	lines := strings.Split(strings.TrimSpace(f.logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), f.logs)
	}
	for i, reason := range []string{"mismatch", "missing"} {
		rec := recs[reason]
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s: code %d, want 401", reason, rec.Code)
		}
		if strings.Contains(rec.Body.String(), "GITHUB_") {
			t.Errorf("%s: the response names a variable: %s", reason, rec.Body)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &line); err != nil {
			t.Fatal(err)
		}
		if line["level"] != "WARN" || !strings.Contains(fmt.Sprint(line["reason"]), "GITHUB_WEBHOOK_SECRET") {
			t.Errorf("%s: the refusal's log line does not name GITHUB_WEBHOOK_SECRET: %s", reason, lines[i])
		}
		if got := value(f.metrics.SignatureFailures.WithLabelValues(reason)); got != 1 {
			t.Errorf("queen_webhook_signature_failures_total{reason=%q} = %v, want 1", reason, got)
		}
	}
}

func TestNewHandlerRefusesBadConfig(t *testing.T) {
	enq := EnqueuerFunc(func(context.Context, *asynq.Task) (tasks.Result, error) { return tasks.Enqueued, nil })
	reg := installs.New(nil)
	seen := NewDeliveryLog(nil)
	for name, cfg := range map[string]Config{
		"no secrets":     {Enqueuer: enq, Installs: reg, Deliveries: seen},
		"empty secrets":  {Secrets: [][]byte{{}, nil}, Enqueuer: enq, Installs: reg, Deliveries: seen},
		"no enqueuer":    {Secrets: [][]byte{secret}, Installs: reg, Deliveries: seen},
		"no registry":    {Secrets: [][]byte{secret}, Enqueuer: enq, Deliveries: seen},
		"no deliveries":  {Secrets: [][]byte{secret}, Enqueuer: enq, Installs: reg},
		"negative delay": {Secrets: [][]byte{secret}, Enqueuer: enq, Installs: reg, Deliveries: seen, ReevaluateDelay: -time.Second},
	} {
		if _, err := NewHandler(cfg); err == nil {
			t.Errorf("%s: NewHandler accepted", name)
		}
	}
	if _, err := NewHandler(Config{Secrets: [][]byte{nil, previous}, Enqueuer: enq, Installs: reg, Deliveries: seen}); err != nil {
		t.Errorf("only the previous secret set: %v", err)
	}
}

func TestVerifySignatureIgnoresEmptySecret(t *testing.T) {
	body := []byte(`{"zen":"x"}`)
	if VerifySignature([][]byte{nil, {}}, sign(nil, body), body) {
		t.Fatal("an empty secret verified a signature made with an empty key")
	}
	if !VerifySignature([][]byte{previous, secret}, sign(secret, body), body) {
		t.Fatal("second secret not tried")
	}
}

// value reads a counter.
func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// sign is GitHub's X-Hub-Signature-256, computed here independently of Sign.
func sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestSignMatchesGitHub(t *testing.T) {
	// GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!".
	want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := Sign([]byte("It's a Secret to Everybody"), []byte("Hello, World!")); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}
