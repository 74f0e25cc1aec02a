package ghevents_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/queen-app/queen-app/internal/ghevents"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/installs"
	"github.com/queen-app/queen-app/internal/tasks"
)

// The receiver is fuzzed as GitHub sees it, over HTTP: its parser may change
// and these targets must not.

var (
	fuzzSecret   = []byte("current-webhook-secret-5f1c")
	fuzzPrevious = []byte("previous-webhook-secret-9a0e")
)

const (
	fuzzRepo    = "Codertocat/Hello-World" // the payloads' repository, installed
	fuzzInstall = 1
)

// mac is HMAC-SHA256, the definition VerifySignature is held to.
func mac(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// FuzzVerifySignature: VerifySignature accepts a header exactly when it is
// "sha256=" and the hex of the HMAC of the body under a non-empty secret.
func FuzzVerifySignature(f *testing.F) {
	for i, name := range []string{"ping/with-app_id.payload.json", "installation/created.payload.json"} {
		f.Add(fuzzSecret, fuzzPrevious, githubtest.Payload(f, name), "", uint8(i))
	}
	f.Add([]byte("It's a Secret to Everybody"), []byte{}, []byte("Hello, World!"),
		"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", uint8(0))
	f.Add([]byte{}, []byte{}, []byte(`{"zen":"x"}`), "", uint8(1))
	f.Add(fuzzSecret, []byte{}, []byte(`{}`), "sha1=0000000000000000000000000000000000000000", uint8(0))
	f.Fuzz(func(t *testing.T, a, b, body []byte, header string, mode uint8) {
		switch mode % 4 {
		case 1:
			header = "sha256=" + hex.EncodeToString(mac(a, body))
		case 2:
			header = "sha256=" + hex.EncodeToString(mac(b, body))
		case 3:
			header = "sha256=" + strings.ToUpper(hex.EncodeToString(mac(a, body)))
		}
		got := ghevents.VerifySignature([][]byte{a, b}, header, body)
		want := false
		if sum, ok := strings.CutPrefix(header, "sha256="); ok && len(sum) == 2*sha256.Size {
			if d, err := hex.DecodeString(sum); err == nil {
				for _, k := range [][]byte{a, b} {
					want = want || (len(k) > 0 && hmac.Equal(d, mac(k, body)))
				}
			}
		}
		if got != want {
			t.Fatalf("VerifySignature(%q, %q, %d bytes) = %t, want %t", [][]byte{a, b}, header, len(body), got, want)
		}
		if got && ghevents.Sign(a, body) != strings.ToLower(header) && ghevents.Sign(b, body) != strings.ToLower(header) {
			t.Fatalf("accepted %q, which Sign gives for neither secret", header)
		}
	})
}

// errDown is how Redis being down reaches the handler.
var errDown = fmt.Errorf("dial tcp 127.0.0.1:6379: %w", syscall.ECONNREFUSED)

// Store states of a delivery.
const (
	storeUp        = iota // fuzzRepo installed, registry synced
	storeDown             // every Redis call fails
	storeUnsynced         // nothing installed yet, first sync not done
	storeSuspended        // fuzzRepo installed, its installation suspended
	storeStates
)

// fakeStore is the registry and the queue: it records every call.
type fakeStore struct {
	state int
	calls []string
	tasks []*asynq.Task
}

func (s *fakeStore) call(name string) error {
	s.calls = append(s.calls, name)
	if s.state == storeDown {
		return errDown
	}
	return nil
}

func (s *fakeStore) Enqueue(_ context.Context, t *asynq.Task) (tasks.Result, error) {
	if err := s.call("Enqueue"); err != nil {
		return 0, err
	}
	s.tasks = append(s.tasks, t)
	return tasks.Enqueued, nil
}

func (s *fakeStore) Lookup(_ context.Context, repo string) (int64, bool, bool, error) {
	if err := s.call("Lookup"); err != nil {
		return 0, false, false, err
	}
	if s.state == storeUnsynced || !ghrepo.Same(repo, fuzzRepo) {
		return 0, false, false, nil
	}
	return fuzzInstall, s.state == storeSuspended, true, nil
}

func (s *fakeStore) Synced(context.Context) (bool, error) {
	return s.state != storeUnsynced, s.call("Synced")
}
func (s *fakeStore) Set(context.Context, installs.Installation) error { return s.call("Set") }
func (s *fakeStore) Seen(context.Context, string) (bool, error)       { return false, s.call("Seen") }
func (s *fakeStore) Done(context.Context, string) error               { return s.call("Done") }
func (s *fakeStore) Remove(context.Context, int64) error              { return s.call("Remove") }
func (s *fakeStore) Suspend(context.Context, int64) error             { return s.call("Suspend") }
func (s *fakeStore) Unsuspend(context.Context, int64) error           { return s.call("Unsuspend") }
func (s *fakeStore) AddRepos(context.Context, int64, ...string) error { return s.call("AddRepos") }
func (s *fakeStore) RemoveRepos(context.Context, int64, ...string) error {
	return s.call("RemoveRepos")
}
func (s *fakeStore) Moved(context.Context, int64, string, string) (bool, error) {
	return true, s.call("Moved")
}

// Signatures of a delivery.
const (
	sigCurrent  = iota // signed with the current secret
	sigPrevious        // signed with the previous secret
	sigWrong           // signed with another key
	sigNone            // no signature header
	sigTooBig          // signed, announcing more than 25 MiB
	sigModes
)

// delivery is one fuzzed request.
type delivery struct {
	body                   []byte
	event, id, contentType string
	sig, store             int
}

type answer struct {
	code     int
	resp     map[string]any
	verified bool
	store    *fakeStore
}

func deliver(t *testing.T, d delivery) answer {
	t.Helper()
	store := &fakeStore{state: d.store}
	h, err := ghevents.NewHandler(ghevents.Config{
		Secrets: [][]byte{fuzzSecret, fuzzPrevious}, Enqueuer: store, Installs: store, Deliveries: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(d.body))
	req.Header.Set("Content-Type", d.contentType)
	req.Header.Set(ghevents.EventHeader, d.event)
	req.Header.Set(ghevents.DeliveryHeader, d.id)
	key := map[int][]byte{sigCurrent: fuzzSecret, sigTooBig: fuzzSecret, sigPrevious: fuzzPrevious, sigWrong: []byte("not-the-webhook-secret")}[d.sig]
	if key != nil {
		req.Header.Set(ghevents.SignatureHeader, "sha256="+hex.EncodeToString(mac(key, d.body)))
	}
	if d.sig == sigTooBig {
		req.ContentLength = ghevents.MaxBodyBytes + 1
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	a := answer{code: rec.Code, store: store, verified: d.sig == sigCurrent || d.sig == sigPrevious}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("answer %d with Content-Type %q", rec.Code, ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.resp); err != nil {
		t.Fatalf("answer %d is not a JSON object: %q", rec.Code, rec.Body)
	}
	return a
}

// documented are the answers of POST /webhook (docs: the HTTP interface)
// to a request whose body is there at once; a body slower than BodyTimeout
// is a 408 besides (TestSlowBodyIsDroppedAndFreesItsPlace).
var documented = map[int]bool{200: true, 202: true, 400: true, 401: true, 413: true, 415: true, 503: true}

// check holds one delivery's answer to the receiver's promises.
func check(t *testing.T, d delivery, a answer) {
	t.Helper()
	if !documented[a.code] {
		t.Fatalf("answered %d %v: not a documented code", a.code, a.resp)
	}
	if key := map[bool]string{true: "status", false: "error"}[a.code < 300]; a.resp[key] == nil || a.resp[key] == "" {
		t.Fatalf("answered %d without %q: %v", a.code, key, a.resp)
	}
	if !a.verified {
		if a.code < 400 || a.code == 503 {
			t.Fatalf("an unverified delivery answered %d %v", a.code, a.resp)
		}
		if len(a.store.calls) > 0 {
			t.Fatalf("an unverified delivery reached the store: %q", a.store.calls)
		}
		return
	}
	if a.code == 401 {
		t.Fatalf("a signed delivery answered 401 %v", a.resp)
	}
	if n := strings.Count(strings.Join(a.store.calls, " "), "Enqueue"); n > 1 {
		t.Fatalf("one delivery enqueued %d times", n)
	}
	if len(a.store.tasks) == 0 {
		return
	}
	if d.event != "pull_request" {
		t.Fatalf("a %q delivery enqueued a task", d.event)
	}
	if a.code != 202 || a.resp["task_id"] == nil {
		t.Fatalf("enqueued, yet answered %d %v", a.code, a.resp)
	}
	task := a.store.tasks[0]
	p, err := tasks.ParseReevaluate(task)
	if task.Type() != tasks.TypeReevaluate || err != nil {
		t.Fatalf("enqueued %s %s: %v", task.Type(), task.Payload(), err)
	}
	if p.Delivery != d.id || p.Event != "pull_request" || p.InstallationID != fuzzInstall || !ghrepo.Same(p.Repo, fuzzRepo) {
		t.Fatalf("enqueued %+v for delivery %q", p, d.id)
	}
	pr, ok := queenPR(d.body)
	if !ok {
		return // a body a parser may read in two ways: the checks above hold still
	}
	if pr == nil {
		t.Fatalf("enqueued %+v for a body that is no opened, closed or reopened pull_request on a queen-<N> branch of its repository", p)
	}
	if p.Action != pr.action || p.Issue != pr.issue || p.Repo != pr.repo {
		t.Fatalf("enqueued %+v for %s of %s, issue %d", p, pr.action, pr.repo, pr.issue)
	}
}

// queenBranch is the design's pattern of the branches that count.
var queenBranch = regexp.MustCompile(`^queen-([1-9][0-9]{0,9})$`)

type queenEvent struct {
	action, repo string
	issue        int64
}

// queenPR reads body as a pull_request payload, independently of the
// handler's parser: nil unless the action is opened, closed or reopened, the head
// ref queen-<N> and the head repository the base repository. ok is false when
// an object of body has two keys a parser may take for one (GitHub never
// sends such a body).
func queenPR(body []byte) (ev *queenEvent, ok bool) {
	v, ok := strictJSON(body)
	if !ok {
		return nil, !json.Valid(body) // the handler must refuse invalid JSON
	}
	str := func(v any) string { s, _ := v.(string); return s }
	id := func(v any) int64 {
		n, _ := v.(json.Number)
		i, _ := strconv.ParseInt(n.String(), 10, 64)
		return i
	}
	action := str(field(v, "action"))
	if action != "opened" && action != "closed" && action != "reopened" {
		return nil, true
	}
	pr := field(v, "pull_request")
	head, repo := field(pr, "head"), field(v, "repository")
	m := queenBranch.FindStringSubmatch(str(field(head, "ref")))
	headID, baseID := id(field(field(head, "repo"), "id")), id(field(repo, "id"))
	if m == nil || baseID == 0 || headID != baseID {
		return nil, true
	}
	issue, _ := strconv.ParseInt(m[1], 10, 64)
	return &queenEvent{action: action, repo: str(field(repo, "full_name")), issue: issue}, true
}

// field is the member of object v whose name is name in any case.
func field(v any, name string) any {
	obj, _ := v.(map[string]any)
	for k, x := range obj {
		if strings.EqualFold(k, name) {
			return x
		}
	}
	return nil
}

// strictJSON decodes one JSON value, numbers as json.Number; ok is false
// when it is not valid JSON or an object has two keys equal in any case.
func strictJSON(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := strictValue(dec)
	if err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

var errTwoKeys = errors.New("two keys equal in any case")

func strictValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			for other := range obj {
				if strings.EqualFold(other, k) {
					return nil, errTwoKeys
				}
			}
			if obj[k], err = strictValue(dec); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		var arr []any
		for dec.More() {
			v, err := strictValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return tok, nil
}

// webhookSeeds are GitHub's payloads of testdata/github-payloads, each as
// its event, and a repository rename and transfer; the pull_request ones slimmed to what the receiver reads (one
// kept whole), on a queen-<N> branch, signed and stored every way.
func webhookSeeds(tb testing.TB) []delivery {
	var out []delivery
	for _, name := range []string{
		"ping/with-app_id.payload.json", "installation/created.payload.json", "installation/deleted.payload.json",
		"installation_repositories/added.payload.json", "push/payload.json",
	} {
		event, _, _ := strings.Cut(name, "/")
		out = append(out, delivery{body: githubtest.Payload(tb, name), event: event, id: "seed-" + event, contentType: "application/json"})
	}
	out = append(out, delivery{body: out[0].body, event: "ping", id: "seed-form", contentType: "application/x-www-form-urlencoded"})
	for _, body := range []string{
		`{"action":"renamed","changes":{"repository":{"name":{"from":"Hello-World"}}},"repository":{"id":186853002,"full_name":"Codertocat/Hello-Bees"},"installation":{"id":1}}`,
		`{"action":"transferred","changes":{"owner":{"from":{"user":{"login":"Codertocat","id":21031067}}}},"repository":{"id":186853002,"full_name":"hive/Hello-World"},"installation":{"id":1}}`,
	} {
		out = append(out, delivery{body: []byte(body), event: "repository", id: "seed-repository", contentType: "application/json"})
	}
	pr := func(name string) delivery {
		return delivery{body: githubtest.Payload(tb, "pull_request/"+name), event: "pull_request", id: "seed-pr", contentType: "application/json"}
	}
	whole := pr("closed.payload.json")
	whole.body = bytes.Replace(whole.body, []byte(`"ref": "changes"`), []byte(`"ref": "queen-42"`), 1)
	if bytes.Equal(whole.body, pr("closed.payload.json").body) {
		tb.Fatal("closed.payload.json: no head ref \"changes\" to rewrite")
	}
	out = append(out, whole)
	for i, name := range []string{"closed.payload.json", "reopened.payload.json", "opened.payload.json"} {
		d := pr(name)
		d.body = slim(tb, d.body)
		out = append(out, d) // on the branch "changes"
		d.body = bytes.Replace(d.body, []byte(`"ref":"changes"`), []byte(`"ref":"queen-42"`), 1)
		for sig := range sigModes {
			d.sig, d.store = sig, (i+sig)%storeStates
			out = append(out, d)
		}
		d.sig, d.store, d.body = sigCurrent, storeUp, d.body[:len(d.body)/2]
		out = append(out, d)
	}
	return out
}

// slim keeps of a pull_request payload only what the receiver reads, so
// the fuzzer's changes land there more often than in 28 KB of payload.
func slim(tb testing.TB, body []byte) []byte {
	var ev struct {
		Action      string `json:"action"`
		Number      int    `json:"number"`
		PullRequest struct {
			Number   int     `json:"number"`
			Merged   bool    `json:"merged"`
			MergedAt *string `json:"merged_at"`
			Head     struct {
				Ref  string `json:"ref"`
				Repo struct {
					ID       int64  `json:"id"`
					FullName string `json:"full_name"`
				} `json:"repo"`
			} `json:"head"`
		} `json:"pull_request"`
		Repository struct {
			ID       int64  `json:"id"`
			FullName string `json:"full_name"`
		} `json:"repository"`
		Installation struct {
			ID int64 `json:"id"`
		} `json:"installation"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		tb.Fatal(err)
	}
	out, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// The seeds reach an enqueue and each refusal, so the target's properties
// are not vacuous.
func TestWebhookSeedsReachEveryAnswer(t *testing.T) {
	codes := map[int]int{}
	enqueued := 0
	for _, d := range webhookSeeds(t) {
		a := deliver(t, d)
		check(t, d, a)
		codes[a.code]++
		enqueued += len(a.store.tasks)
	}
	if enqueued == 0 {
		t.Error("no seed enqueued a task")
	}
	for code := range documented {
		if codes[code] == 0 {
			t.Errorf("no seed answered %d (answers %v)", code, codes)
		}
	}
}

// FuzzWebhook: for any body and headers the receiver answers a documented
// code with a JSON body, never panics, never touches the store for an
// unverified delivery, and enqueues at most one task, only for an opened,
// closed or reopened pull_request on a queen-<N> branch of an installed base
// repository, naming that issue.
func FuzzWebhook(f *testing.F) {
	for _, d := range webhookSeeds(f) {
		f.Add(d.body, d.event+"\n"+d.id+"\n"+d.contentType, uint8(d.sig+sigModes*d.store))
	}
	f.Add([]byte(`{"action":"closed","ACTION":"opened"}`), "pull_request\nx\napplication/json", uint8(0))
	// Few arguments, so the fuzzer changes the body more often: headers is
	// "event\ndelivery\ncontent-type", mode the signature and the store.
	f.Fuzz(func(t *testing.T, body []byte, headers string, mode uint8) {
		h := strings.SplitN(headers, "\n", 3)
		h = append(h, "", "", "")
		d := delivery{body: body, event: h[0], id: h[1], contentType: h[2],
			sig: int(mode) % sigModes, store: int(mode) / sigModes % storeStates}
		check(t, d, deliver(t, d))
	})
}
