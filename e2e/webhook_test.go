package e2e

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/redistest"
	"github.com/queen-app/queen-app/internal/sandbox"
)

const (
	secret   = "e2e-webhook-secret-3b9d"
	apiToken = "e2e-api-token-77c1"
	repo     = "hive/t27"
	instID   = 42
)

// stack is one Redis (a private node unless another form is asked for),
// the sandbox (GitHub with the App installed on hive/t27, its git, the
// export) and the binaries' env.
type stack struct {
	t       *testing.T
	redis   *redistest.Server // the single node; nil on another form
	form    *redisForm
	sb      *sandbox.Sandbox
	gh      *githubtest.Server
	env     map[string]string
	hookURL string
	apiURL  string
}

// mergedEnv is a new environment holding each of envs in turn, a later
// one's value winning: a binary's env from the stack's and a test's own.
func mergedEnv(envs ...map[string]string) map[string]string {
	env := map[string]string{}
	for _, e := range envs {
		maps.Copy(env, e)
	}
	return env
}

func newStack(t *testing.T, extra map[string]string) *stack {
	t.Helper()
	return newStackOn(t, nil, extra)
}

// newStackOn is newStack on the Redis of form; nil is one private node
// with the append-only file (stack.redis).
func newStackOn(t *testing.T, form *redisForm, extra map[string]string) *stack {
	t.Helper()
	sb, err := sandbox.Start(sandbox.Options{Dir: t.TempDir(), Repo: repo, Installation: instID, ExportToken: exToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	s := &stack{t: t, form: form, sb: sb, gh: sb.GitHub}
	if form == nil {
		s.redis = redistest.StartWith(t, redistest.Options{AppendOnly: true})
		s.form = &redisForm{env: map[string]string{"QUEEN_REDIS_URL": s.redis.URL()},
			open: func() redis.UniversalClient { return s.redis.Client() }}
	}
	hook, api := freeAddr(t), freeAddr(t)
	s.hookURL, s.apiURL = "http://"+hook+"/webhook", "http://"+api
	s.env = mergedEnv(sb.GitHubEnv(), map[string]string{
		"GITHUB_WEBHOOK_SECRET":  secret,
		"QUEEN_API_TOKEN":        apiToken,
		"QUEEN_LISTEN":           hook,
		"QUEEN_API_LISTEN":       api,
		"QUEEN_REEVALUATE_DELAY": "0s",
	}, s.form.env, extra)
	return s
}

func (s *stack) webhook() *proc {
	p := start(s.t, "webhook", s.env)
	waitHTTP(s.t, p, s.apiURL+"/healthz")
	// The installation sync runs in the background at start: wait until a
	// delivery for the installed repository is taken.
	return p
}

// worker starts the worker with its health server on a free address of
// its own, once /healthz answers, and returns it with that base URL.
func (s *stack) worker() (*proc, string) {
	addr := freeAddr(s.t)
	p := start(s.t, "worker", mergedEnv(s.env, map[string]string{"QUEEN_API_LISTEN": addr}))
	waitHTTP(s.t, p, "http://"+addr+"/healthz")
	return p, "http://" + addr
}

func (s *stack) queued() []*asynq.TaskInfo {
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: s.redis.Addr})
	defer insp.Close()
	var all []*asynq.TaskInfo
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		insp.ListPendingTasks, insp.ListScheduledTasks, insp.ListActiveTasks, insp.ListCompletedTasks, insp.ListRetryTasks,
	} {
		ts, _ := list("default")
		all = append(all, ts...)
	}
	return all
}

func TestWebhookBinaryRefusesBadConfigInOneLine(t *testing.T) {
	s := newStack(t, nil)
	cases := []struct{ variable, value string }{
		{"GITHUB_WEBHOOK_SECRET", ""},
		{"GITHUB_WEBHOOK_SECRET", "short-secret"}, // under 16 characters
		{"QUEEN_REDIS_URL", ""},
		{"QUEEN_API_TOKEN", ""},
		{"QUEEN_API_TOKEN", "short-token"},
		{"QUEEN_FREE_CLOSED_PR", "maybe"},
		{"GITHUB_APP_ID", "x"},
		{"GITHUB_APP_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"},
		{"QUEEN_LISTEN", ":abc"},
		{"QUEEN_BASE_BRANCH", "main..x"},
		{"GITHUB_API_URL", "http://ghe.example.com/api/v3/"},
	}
	for _, tc := range cases {
		variable, value := tc.variable, tc.value
		p := start(t, "webhook", mergedEnv(s.env, map[string]string{variable: value}))
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			p.kill()
			t.Errorf("%s=%q: the webhook started, want it refused at start", variable, value)
			continue
		}
		out := strings.TrimSpace(p.out.String())
		if code := p.cmd.ProcessState.ExitCode(); code != 2 || strings.Count(out, "\n") != 0 ||
			!strings.HasPrefix(out, "webhook: "+variable+":") {
			t.Errorf("%s=%q: exit %d, output %q; want exit 2 and one line naming %s", variable, value, code, out, variable)
		}
		secretVar := variable == "GITHUB_WEBHOOK_SECRET" || variable == "QUEEN_API_TOKEN"
		if strings.Contains(out, secret) || strings.Contains(out, apiToken) || strings.Contains(out, "PRIVATE KEY") ||
			(secretVar && value != "" && strings.Contains(out, value)) {
			t.Errorf("%s: output leaks a secret: %q", variable, out)
		}
	}
}

func TestWebhookBinaryEnqueuesAndAnswers503WhileRedisIsDown(t *testing.T) {
	s := newStack(t, nil)
	s.webhook()
	body := prPayload(t, repo, 9111, 501, "closed", false, instID)
	eventually(t, 20*time.Second, "the installed repository is accepted", func() bool {
		return deliver(t, s.hookURL, secret, "pull_request", "d-1", body) == http.StatusAccepted && len(s.queued()) == 1
	})
	if code := deliver(t, s.hookURL, secret, "pull_request", "d-1", body); code != http.StatusAccepted || len(s.queued()) != 1 {
		t.Fatalf("a redelivery of d-1: %d, %d tasks; want 202 and still one task", code, len(s.queued()))
	}
	if code := deliver(t, s.hookURL, "wrong-secret", "pull_request", "d-2", body); code != http.StatusUnauthorized {
		t.Fatalf("wrong signature: %d, want 401", code)
	}
	s.redis.Kill()
	if code := deliver(t, s.hookURL, secret, "pull_request", "d-3", body); code != http.StatusServiceUnavailable {
		t.Fatalf("Redis down: %d, want 503 so GitHub marks the delivery failed", code)
	}
	var ready map[string]any
	if code := apiJSON(t, "GET", s.apiURL+"/readyz", "", nil, &ready); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with Redis down: %d, want 503", code)
	}
	s.redis.Restart()
	// GitHub's redelivery of d-3 now lands; nothing was lost.
	eventually(t, 20*time.Second, "d-3 accepted after Redis is back", func() bool {
		return deliver(t, s.hookURL, secret, "pull_request", "d-3", body) == http.StatusAccepted
	})
	if n := len(s.queued()); n != 2 {
		t.Fatalf("after the redelivery: %d tasks, want 2 (d-1 and d-3)", n)
	}
}

// Go's ServeMux once answered this PUT with a 307 to the cleaned path before
// the token check, and a client following it wrote hive/t27#905.
func TestAPIRefusesDotDotPathsBeforeAnything(t *testing.T) {
	s := newStack(t, nil)
	s.webhook()
	path := s.apiURL + "/v1/repos/x/../" + repo + "/dispatches/905"
	body := map[string]any{"started": true}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("PUT", path, strings.NewReader(`{"started": true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("PUT %s without a token: %d (Location %q), want 401", path, resp.StatusCode, resp.Header.Get("Location"))
	}
	var e map[string]any
	if code := apiJSON(t, "PUT", path, apiToken, body, &e); code != http.StatusBadRequest || e["field"] != "path" {
		t.Fatalf("PUT %s with the token, following redirects: %d %v, want 400 naming path", path, code, e)
	}
	if code := apiJSON(t, "GET", s.apiURL+"/v1/repos/"+repo+"/claims/905", apiToken, nil, nil); code != http.StatusNotFound {
		t.Fatalf("%s#905 after the refused PUTs: %d, want 404 (no row written)", repo, code)
	}
}
