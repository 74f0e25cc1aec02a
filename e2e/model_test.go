package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"pgregory.net/rapid"

	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/githubapp"
	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/rules"
	"github.com/queen-app/queen-app/internal/tasks"
	"github.com/queen-app/queen-app/internal/worker"
)

// The model-based test drives the real system (the webhook and worker
// binaries, a private Redis with the append-only file, the sandbox's
// GitHub) through random sequences of steps, each sequence on rows of its
// own, and checks it against a model of GitHub and the rows:
//
//   - between steps, a free stands only on a read that showed the branch
//     as GitHub had it (closed unmerged PRs only, nothing open or merged,
//     the list read) while the read was in flight;
//   - once the faults are cleared and a sweep has read every branch, each
//     row's claim view is what internal/dispatch's Decide makes of the row
//     and the branch's final PRs (counted by githubapp.Summarize), under
//     the flag the worker runs with.
//
// make test runs modelChecks sequences of at most mMaxSteps steps from
// modelSeed; `make soak` runs more (-rapid.checks), and longer ones with
// -rapid.steps; -rapid.seed replays a failure's sequence.

const (
	modelChecks = 200
	modelSeed   = "20261201"
	mRows       = 3  // rows per sequence
	mMaxSteps   = 10 // steps per sequence, at most
	mLimit      = 60 * time.Second
	mSlack      = 50 * time.Millisecond // clock slack between the test and the binaries
)

// mT is what a sequence reports to: a *rapid.T while generating, a
// *testing.T when a regression test replays one.
type mT interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// mStep is one step of a sequence, as data, so a shrunk failure can be
// written down as a plain test.
type mStep struct {
	Kind      string // one of mKinds
	Row       int    // which of the sequence's rows
	Pick      int    // which PR or delivery, modulo the candidates
	Verdict   string // upsert: review_state ("" is a bee still running)
	SendBacks uint32 // upsert of a send-back
	Deliver   string // a PR change's delivery: send, hold (sent later by "late") or lose
	Fault     string // one of mFaults
	N         int    // how many requests a fault fails
}

func (s mStep) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s row=%d", s.Kind, s.Row)
	switch s.Kind {
	case "upsert":
		fmt.Fprintf(&b, " verdict=%q send_backs=%d", s.Verdict, s.SendBacks)
	case "close", "merge", "reopen", "open":
		fmt.Fprintf(&b, " pick=%d deliver=%s", s.Pick, s.Deliver)
	case "late", "duplicate", "twin":
		fmt.Fprintf(&b, " pick=%d", s.Pick)
	case "fault":
		fmt.Fprintf(&b, " fault=%s n=%d", s.Fault, s.N)
	}
	return b.String()
}

// mKinds are the step kinds, repeated to weigh them.
var mKinds = []string{
	"upsert", "upsert", "upsert", "touch", "delete",
	"open", "open", "close", "close", "close", "merge", "reopen", "reopen", "fork",
	"late", "late", "duplicate", "twin",
	"fault", "fault", "fault", "clear", "sweep", "sweep",
	"flag", "kill", "redis",
}

var mFaults = []string{"502", "504", "secondary", "429", "429-reset", "graphql-branch", "graphql-errors", "graphql-502", "down"}

func drawStep(t *rapid.T) mStep {
	s := mStep{Kind: rapid.SampledFrom(mKinds).Draw(t, "kind"), Row: rapid.IntRange(0, mRows-1).Draw(t, "row")}
	switch s.Kind {
	case "upsert":
		s.Verdict = rapid.SampledFrom([]string{"accept", "accept", "accept", "sendBack", "", "failed"}).Draw(t, "verdict")
		if s.Verdict == "sendBack" {
			s.SendBacks = rapid.Uint32Range(0, 3).Draw(t, "send_backs")
		}
	case "close", "merge", "reopen", "open":
		s.Pick = rapid.IntRange(0, 3).Draw(t, "pick")
		s.Deliver = rapid.SampledFrom([]string{"send", "send", "send", "hold", "lose"}).Draw(t, "deliver")
	case "late", "duplicate", "twin":
		s.Pick = rapid.IntRange(0, 7).Draw(t, "pick")
	case "fault":
		s.Fault = rapid.SampledFrom(mFaults).Draw(t, "fault")
		s.N = rapid.IntRange(1, 4).Draw(t, "n")
	}
	return s
}

// TestModelSequences runs the random sequences against one stack.
func TestModelSequences(t *testing.T) {
	t.Parallel()
	setDefaultFlag("rapid.checks", "RAPID_CHECKS", fmt.Sprint(modelChecks))
	setDefaultFlag("rapid.seed", "RAPID_SEED", modelSeed)
	maxSteps := mMaxSteps
	if v, ok := flagSet("rapid.steps"); ok { // longer sequences for a soak
		fmt.Sscan(v, &maxSteps)
	}
	m := newModel(t)
	start := time.Now()
	rapid.Check(t, func(rt *rapid.T) {
		// Each row starts written (or not), so that the steps after meet rows.
		var steps []mStep
		for row := range mRows {
			if v := rapid.SampledFrom([]string{"accept", "accept", "accept", "sendBack", "", "none"}).Draw(rt, "first"); v != "none" {
				steps = append(steps, mStep{Kind: "upsert", Row: row, Verdict: v})
			}
		}
		for range rapid.IntRange(1, maxSteps).Draw(rt, "steps") {
			steps = append(steps, drawStep(rt))
		}
		m.run(rt, steps)
	})
	t.Logf("%d sequences in %s (%d worker starts, %d Redis restarts): steps %s, quiesce %s, check %s", m.seq, time.Since(start).Round(time.Millisecond),
		m.workerStarts, m.redisRestarts, m.inSteps.Round(time.Millisecond), m.inQuiesce.Round(time.Millisecond), m.inCheck.Round(time.Millisecond))
	t.Logf("steps run: %v", m.kinds)
	t.Logf("rows checked: %v", m.outcomes)
}

// setDefaultFlag gives a rapid flag this test's default unless the command
// line or its environment variable chose one.
func setDefaultFlag(name, env, value string) {
	_, set := flagSet(name)
	if _, ok := os.LookupEnv(env); set || ok {
		return
	}
	if err := flag.Set(name, value); err != nil {
		panic(err)
	}
}

// flagSet is the value of a flag given on the command line.
func flagSet(name string) (value string, ok bool) {
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			value, ok = f.Value.String(), true
		}
	})
	return value, ok
}

// model is the stack every sequence of a test shares, and what the test
// knows of it across sequences.
type model struct {
	t      *testing.T
	f      *fstack
	worker *proc
	flagOn bool
	seq    int
	sweeps int

	workerStarts, redisRestarts int
	inSteps, inQuiesce, inCheck time.Duration
	kinds, outcomes             map[string]int // steps run and rows checked, for the log
}

func newModel(t *testing.T) *model {
	f := newFreeStack(t, nil)
	m := &model{t: t, f: f, kinds: map[string]int{}, outcomes: map[string]int{}}
	f.webhook()
	m.startWorker(true)
	return m
}

func (m *model) startWorker(on bool) {
	flag := "off"
	if on {
		flag = "on"
	}
	m.worker = m.f.startWorker(map[string]string{frFlag: flag})
	m.flagOn = on
	m.workerStarts++
}

// mPR is a pull request on the model's GitHub.
type mPR struct {
	number int
	open   bool
	merged bool
	fork   bool
}

// mRow is what the sequence last wrote of a row.
type mRow struct {
	exists     bool
	verdict    string
	sendBacks  uint32
	dispatched time.Time
	paths      []string
	// mayFree: since this dispatch, the worker ran with the flag on while
	// the branch's PRs answered free, so a free may have been recorded
	// that a worker with the flag off keeps.
	mayFree bool
}

// mState is one state of a branch's PRs on GitHub and when it held.
type mState struct {
	from, to time.Time // to is zero while it holds
	prs      dispatch.PRState
}

func (h mState) String() string {
	to := "now"
	if !h.to.IsZero() {
		to = h.to.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("{open %d merged %d closed_unmerged %d %v from %s to %s}",
		h.prs.Open, h.prs.Merged, h.prs.ClosedUnmerged, h.prs.Numbers, h.from.Format(time.RFC3339Nano), to)
}

// mDelivery is one webhook delivery of a PR change.
type mDelivery struct {
	id     string
	issue  int64
	number int
	action string
	merged bool
}

// mSeq is one sequence's rows, GitHub and deliveries.
type mSeq struct {
	m        *model
	t        mT
	base     int64 // the sequence's rows are base..base+mRows-1
	finished time.Time
	rows     [mRows]*mRow
	prs      [mRows][]*mPR
	history  [mRows][]mState
	held     []mDelivery // sent later, out of order, by "late"
	sent     []mDelivery
	n        int  // deliveries and dispatches made
	faulty   bool // a fault was set since the last clear
}

// run plays steps as one sequence, then quiesces and checks the ledger.
func (m *model) run(t mT, steps []mStep) {
	t.Helper()
	m.seq++
	s := &mSeq{m: m, t: t, base: int64(100000 + 10*m.seq), finished: time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)}
	for i := range s.rows {
		s.rows[i] = &mRow{}
		s.history[i] = []mState{{from: time.Time{}, prs: s.summary(i)}}
	}
	if !m.flagOn {
		m.worker.stop()
		m.startWorker(true)
	}
	t0 := time.Now()
	for i, st := range steps {
		t.Logf("step %d: %s", i+1, st)
		s.step(st)
		m.kinds[st.Kind+" "+st.Fault]++
		s.noteMayFree()
		s.sample()
	}
	if s.faulty {
		// A sweep that meets the faults still set must decide nothing
		// on what they hid.
		s.m.waitSweep(t, s.m.enqueueSweep(t))
		s.sample()
	}
	t1 := time.Now()
	s.quiesce()
	t2 := time.Now()
	s.check()
	s.cleanup()
	m.inSteps += t1.Sub(t0)
	m.inQuiesce += t2.Sub(t1)
	m.inCheck += time.Since(t2)
}

func (s *mSeq) issue(row int) int64 { return s.base + int64(row) }

func (s *mSeq) branch(row int) string { return dispatch.BranchOf(s.issue(row)) }

// summary is the branch's PRs as the worker should count them: the base
// repository's own, read now.
func (s *mSeq) summary(row int) dispatch.PRState {
	var prs []githubapp.PR
	for _, p := range s.prs[row] {
		if p.fork {
			continue
		}
		st := "closed"
		if p.open {
			st = "open"
		}
		prs = append(prs, githubapp.PR{Number: p.number, State: st, Merged: p.merged, HeadRepo: repo})
	}
	return githubapp.Summarize(prs, time.Time{})
}

func (s *mSeq) step(st mStep) {
	s.t.Helper()
	r := s.rows[st.Row]
	switch st.Kind {
	case "upsert":
		s.n++
		*r = mRow{exists: true, verdict: st.Verdict, sendBacks: st.SendBacks,
			dispatched: s.finished.Add(-time.Hour + time.Duration(s.n)*time.Second),
			paths:      []string{fmt.Sprintf("src/m%d.rs", s.n)}}
		s.put(st.Row, true)
	case "touch": // same dispatch, other paths: decides nothing new
		if !r.exists {
			return
		}
		s.n++
		r.paths = []string{fmt.Sprintf("src/t%d.rs", s.n)}
		s.put(st.Row, false)
	case "delete":
		code := s.api("DELETE", "/dispatches/"+itoa(s.issue(st.Row)), nil, nil)
		if code != http.StatusOK && code != http.StatusNotFound {
			s.t.Fatalf("DELETE #%d: %d", s.issue(st.Row), code)
		}
		r.exists = false
	case "open":
		s.change(st.Row, &mPR{open: true}, "", st.Deliver)
	case "fork": // a fork's PR on a branch of the same name counts for nothing
		n := s.m.f.gh.AddPR(repo, githubtest.PR{HeadRef: s.branch(st.Row), HeadRepo: "bee/t27", State: "open"})
		s.prs[st.Row] = append(s.prs[st.Row], &mPR{number: n, open: true, fork: true})
	case "close", "merge":
		p := s.pickPR(st.Row, st.Pick, func(p *mPR) bool { return p.open })
		if p == nil { // a PR opened and closed between two looks
			p = &mPR{open: true}
			s.change(st.Row, p, "", "")
		}
		p.open, p.merged = false, st.Kind == "merge"
		s.change(st.Row, p, "closed", st.Deliver)
	case "reopen":
		p := s.pickPR(st.Row, st.Pick, func(p *mPR) bool { return !p.open && !p.merged })
		if p == nil {
			return
		}
		p.open = true
		s.change(st.Row, p, "reopened", st.Deliver)
	case "late":
		if len(s.held) == 0 {
			return
		}
		i := st.Pick % len(s.held)
		d := s.held[i]
		s.held = slices.Delete(s.held, i, i+1)
		s.send(d)
	case "duplicate": // GitHub's redelivery: the same delivery id
		if len(s.sent) > 0 {
			s.send(s.sent[st.Pick%len(s.sent)])
		}
	case "twin": // a second hook: the same event under another id
		if len(s.sent) > 0 {
			d := s.sent[st.Pick%len(s.sent)]
			s.n++
			d.id = fmt.Sprintf("m%d-%d", s.m.seq, s.n)
			s.send(d)
		}
	case "fault":
		s.fault(st)
		s.faulty = true
	case "clear":
		s.m.f.gh.ClearFaults()
		s.faulty = false
	case "sweep":
		s.m.enqueueSweep(s.t)
	case "flag":
		s.m.worker.stop()
		s.m.startWorker(!s.m.flagOn)
	case "kill":
		s.m.worker.kill()
		// Its periodic lease would keep sweeps out for its TTL: the lease
		// is the killed worker's alone, and that wait is not under test.
		s.m.f.rdb.Del(context.Background(), worker.PeriodicLeaseKey(tasks.TypeSweep))
		s.m.startWorker(s.m.flagOn)
	case "redis":
		s.m.f.redis.Kill()
		s.m.f.redis.Restart()
		s.m.redisRestarts++
	default:
		s.t.Fatalf("unknown step kind %q", st.Kind)
	}
}

func (s *mSeq) pickPR(row, pick int, ok func(*mPR) bool) *mPR {
	var c []*mPR
	for _, p := range s.prs[row] {
		if !p.fork && ok(p) {
			c = append(c, p)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[pick%len(c)]
}

// change puts p on GitHub as the model now has it (a new PR when it has no
// number yet), notes the branch's new state, and delivers its event as
// deliver says (an "opened" has none the app acts on).
func (s *mSeq) change(row int, p *mPR, action, deliver string) {
	if !slices.Contains(s.prs[row], p) {
		s.prs[row] = append(s.prs[row], p)
	}
	pr := githubtest.PR{Number: p.number, HeadRef: s.branch(row), HeadRepo: repo, State: "closed"}
	if p.open {
		pr.State = "open"
	}
	if p.merged {
		at := time.Now().UTC().Truncate(time.Second)
		pr.MergedAt = &at
	}
	before := time.Now()
	p.number = s.m.f.gh.AddPR(repo, pr)
	after := time.Now()
	h := s.history[row]
	h[len(h)-1].to = after
	s.history[row] = append(h, mState{from: before, prs: s.summary(row)})
	if action == "" {
		return
	}
	s.n++
	d := mDelivery{id: fmt.Sprintf("m%d-%d", s.m.seq, s.n), issue: s.issue(row), number: p.number, action: action, merged: p.merged}
	switch deliver {
	case "send":
		s.send(d)
	case "hold":
		s.held = append(s.held, d)
	case "lose": // never sent: the sweep is left to find it
	}
}

// send delivers d, signed; a 503 (Redis coming back) is sent again, as
// GitHub's redelivery would.
func (s *mSeq) send(d mDelivery) {
	s.t.Helper()
	body := prPayload(s.m.t, repo, d.issue, d.number, d.action, d.merged, instID)
	deadline := time.Now().Add(mLimit)
	for {
		code, err := post(s.m.f.hookURL, secret, "pull_request", d.id, body)
		if err == nil && code == http.StatusAccepted {
			break
		}
		if (err == nil && code != http.StatusServiceUnavailable) || time.Now().After(deadline) {
			s.t.Fatalf("delivery %s: %d %v, want 202", d.id, code, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !slices.ContainsFunc(s.sent, func(o mDelivery) bool { return o.id == d.id }) {
		s.sent = append(s.sent, d)
	}
}

func (s *mSeq) fault(st mStep) {
	gh := s.m.f.gh
	pulls := "/repos/" + repo + "/pulls"
	switch st.Fault {
	case "502", "504":
		code := http.StatusBadGateway
		if st.Fault == "504" {
			code = http.StatusGatewayTimeout
		}
		gh.FailNext(pulls, code, http.Header{}, st.N)
	case "secondary":
		gh.SecondaryRateLimit(st.N, time.Second)
	case "429":
		gh.FailNext("/", http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}, st.N)
	case "429-reset": // the primary limit spent, with its reset
		gh.FailNext("/repos/", http.StatusTooManyRequests, http.Header{
			"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Limit": {"5000"},
			"X-Ratelimit-Reset": {fmt.Sprint(time.Now().Add(time.Second).Unix())},
		}, st.N)
	case "graphql-branch": // HTTP 200, the branch's alias null, an entry in errors
		gh.GraphQLError(s.branch(st.Row))
	case "graphql-errors": // HTTP 200 with only errors
		gh.AnswerNext("/graphql", http.StatusOK, []byte(`{"errors":[{"message":"Something went wrong while executing your query."}]}`), st.N)
	case "graphql-502":
		gh.FailNext("/graphql", http.StatusBadGateway, http.Header{}, st.N)
	case "down":
		gh.Down(true)
	default:
		s.t.Fatalf("unknown fault %q", st.Fault)
	}
}

// put writes the row through the claims API; fresh starts a new dispatch.
func (s *mSeq) put(row int, fresh bool) {
	s.t.Helper()
	r := s.rows[row]
	body := map[string]any{"owned_paths": r.paths}
	if fresh {
		body["started"] = true
		body["dispatched_at"] = r.dispatched.Format(time.RFC3339)
		body["send_backs"] = r.sendBacks
		body["finished_at"] = nil
		body["review_state"] = nil
		if r.verdict != "" {
			body["finished_at"] = s.finished.Format(time.RFC3339)
			body["review_state"] = r.verdict
		}
	}
	if code := s.api("PUT", "/dispatches/"+itoa(s.issue(row)), body, nil); code != http.StatusOK {
		s.t.Fatalf("PUT #%d: %d", s.issue(row), code)
	}
	if fresh {
		r.mayFree = false
	}
}

// api calls the claims API for a row of hive/t27, sending again while it
// answers 503 (Redis coming back, or too slow to answer within the API's
// budget). A 503 does not say the write was not made: a DELETE sent again
// after one finds the row gone, and that 404 is its 200.
func (s *mSeq) api(method, path string, body, out any) int {
	s.t.Helper()
	url := s.m.f.apiURL + "/v1/repos/" + repo + path
	deadline := time.Now().Add(mLimit)
	unavailable := false
	for {
		code, err := apiCall(method, url, body, out)
		if err != nil {
			s.t.Fatalf("%s %s: %v", method, url, err)
		}
		if method == http.MethodDelete && unavailable && code == http.StatusNotFound {
			return http.StatusOK
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return code
		}
		unavailable = true
		time.Sleep(25 * time.Millisecond)
	}
}

// apiCall is apiJSON returning its error instead of failing the
// *testing.T, for the sequence's own T.
func apiCall(method, url string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode: %w", err)
		}
	}
	return resp.StatusCode, nil
}

// noteMayFree marks the accepted rows a flag-on worker may have freed.
func (s *mSeq) noteMayFree() {
	if !s.m.flagOn {
		return
	}
	for i, r := range s.rows {
		p := s.summary(i)
		if r.exists && r.verdict == "accept" && rules.AcceptLiveness(true, p.Open, p.Merged, p.ClosedUnmerged) == rules.Free {
			r.mayFree = true
		}
	}
}

// mView is the claim view with the history entries the checks read.
type mView struct {
	dispatch.View
	History []struct {
		At       time.Time `json:"at"`
		Action   string    `json:"action"`
		Decision string    `json:"decision"`
		Inputs   struct {
			PRs         *dispatch.PRState `json:"prs"`
			NewDispatch bool              `json:"new_dispatch"`
		} `json:"inputs"`
	} `json:"history"`
}

func (s *mSeq) view(row int) (mView, bool) {
	s.t.Helper()
	var v mView
	switch code := s.api("GET", "/claims/"+itoa(s.issue(row))+"?history=50", nil, &v); code {
	case http.StatusOK:
		return v, true
	case http.StatusNotFound:
		return v, false
	default:
		s.t.Fatalf("GET claim #%d: %d", s.issue(row), code)
		return v, false
	}
}

// sample checks what must hold between any two steps.
func (s *mSeq) sample() {
	s.t.Helper()
	for i, r := range s.rows {
		v, found := s.view(i)
		if found != r.exists {
			s.t.Fatalf("#%d: found %v, but the row exists: %v", s.issue(i), found, r.exists)
		}
		if !found {
			continue
		}
		s.checkDecisions(i, v)
		if v.Freed != nil {
			if v.Freed.Rule != dispatch.RuleAccept || r.verdict != "accept" {
				s.t.Fatalf("#%d (review_state %q) freed by %s: only accept_claim frees here", s.issue(i), r.verdict, v.Freed.Rule)
			}
			s.checkRead(i, v, "free", v.Freed.At)
		}
		if w := v.WouldFree; w != nil {
			switch {
			case w.Rule == dispatch.RuleAccept && r.verdict == "accept":
				s.checkRead(i, v, "would_free", w.At)
			case w.Rule == dispatch.RuleSendBack && r.verdict == "sendBack" && r.sendBacks < rules.DefaultSendBackCeiling:
			default:
				s.t.Fatalf("#%d (review_state %q, send_backs %d) would be freed by %s", s.issue(i), r.verdict, r.sendBacks, w.Rule)
			}
		}
	}
}

// checkDecisions asserts the row's history never decides what already
// holds: a free of a freed row, an unfree of a live one, a second would_free
// (each delivery and sweep that finds the same state is a no-op).
func (s *mSeq) checkDecisions(row int, v mView) {
	s.t.Helper()
	if len(v.History) >= 50 { // cut: its start is not known
		return
	}
	freed, would := false, false
	for i := len(v.History) - 1; i >= 0; i-- { // oldest first
		h := v.History[i]
		bad := false
		switch {
		case h.Action == "delete" || (h.Action == "upsert" && h.Inputs.NewDispatch):
			freed, would = false, false
		case h.Decision == "free":
			bad, freed, would = freed, true, false
		case h.Decision == "unfree":
			bad, freed = !freed, false
		case h.Decision == "would_free":
			bad, would = would || freed, true
		case h.Decision == "would_unfree":
			bad, would = !would, false
		}
		if bad {
			s.t.Fatalf("#%d: %s %q at %s repeats or contradicts the row's state (freed %v, would_free %v)",
				s.issue(row), h.Action, h.Decision, h.At.Format(time.RFC3339Nano), freed, would)
		}
	}
}

// checkRead asserts the newest decision of the row (free or would_free,
// made at) stands on a read of its branch that showed only closed
// unmerged PRs, and that GitHub had the branch in that state while the
// read was in flight.
func (s *mSeq) checkRead(row int, v mView, decision string, at time.Time) {
	s.t.Helper()
	var read *dispatch.PRState
	for _, h := range v.History { // newest first
		if h.Decision == decision {
			read = h.Inputs.PRs
			break
		}
	}
	if read == nil || !read.Read || read.ReadAt == nil {
		s.t.Fatalf("#%d: %s without a recorded read: %+v", s.issue(row), decision, read)
	}
	if read.Open != 0 || read.Merged != 0 || read.ClosedUnmerged == 0 {
		s.t.Fatalf("#%d: %s on a read of open=%d merged=%d closed_unmerged=%d", s.issue(row), decision, read.Open, read.Merged, read.ClosedUnmerged)
	}
	from, to := read.ReadAt.Add(-mSlack), at.Add(mSlack)
	for _, h := range s.history[row] {
		if h.from.After(to) || (!h.to.IsZero() && h.to.Before(from)) {
			continue
		}
		if h.prs.Open == read.Open && h.prs.Merged == read.Merged && h.prs.ClosedUnmerged == read.ClosedUnmerged && slices.Equal(h.prs.Numbers, read.Numbers) {
			return
		}
	}
	s.t.Fatalf("#%d: %s on a read (open %d merged %d closed_unmerged %d %v, sent %s) that matches no state GitHub had from then to the decision at %s: %v",
		s.issue(row), decision, read.Open, read.Merged, read.ClosedUnmerged, read.Numbers, read.ReadAt.Format(time.RFC3339Nano),
		at.Format(time.RFC3339Nano), s.history[row])
}

// enqueueSweep asks for a claim sweep now and returns its task id.
func (m *model) enqueueSweep(t mT) string {
	t.Helper()
	m.sweeps++
	id := fmt.Sprintf("model-sweep-%d", m.sweeps)
	c := asynq.NewClientFromRedisClient(m.f.rdb)
	defer c.Close()
	deadline := time.Now().Add(mLimit)
	for {
		_, err := c.Enqueue(tasks.NewSweep(), asynq.TaskID(id), asynq.Retention(time.Hour))
		if err == nil || errors.Is(err, asynq.ErrTaskIDConflict) {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("enqueue sweep: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitSweep waits until sweep id has run, whatever its outcome.
func (m *model) waitSweep(t mT, id string) {
	t.Helper()
	deadline := time.Now().Add(mLimit)
	for time.Now().Before(deadline) {
		info, err := m.f.insp.GetTaskInfo(tasks.Queue, id)
		if err == nil && (info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived || info.State == asynq.TaskStateRetry) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("sweep %s did not run within %s", id, mLimit)
}

// quiesce ends the faults and waits for a sweep that read every branch,
// started after the sequence's last change.
func (s *mSeq) quiesce() {
	s.t.Helper()
	s.m.f.gh.ClearFaults()
	deadline := time.Now().Add(mLimit)
	for time.Now().Before(deadline) {
		ok := s.m.f.metric("queen_sweep_runs_total", `sweep="claim"`, `result="ok"`)
		s.m.waitSweep(s.t, s.m.enqueueSweep(s.t))
		if s.m.f.metric("queen_sweep_runs_total", `sweep="claim"`, `result="ok"`) > ok {
			return
		}
	}
	s.t.Fatalf("no complete claim sweep within %s of the faults' end", mLimit)
}

// check compares every row's claim view with the oracle.
func (s *mSeq) check() {
	s.t.Helper()
	now := time.Now().UTC()
	for i, r := range s.rows {
		v, found := s.view(i)
		if found != r.exists {
			s.t.Fatalf("#%d: found %v after the sweep, but the row exists: %v", s.issue(i), found, r.exists)
		}
		if !found {
			continue
		}
		want, alt := s.oracle(i, now)
		got := mOutcome(v.View)
		s.m.outcomes[fmt.Sprintf("freed=%q would_free=%q claim=%s", got.Freed, got.WouldFree, got.Claim)]++
		if got != want && (alt == nil || got != *alt) {
			s.t.Fatalf("#%d after the sweep (flag %v, PRs %+v):\n got  %+v\n want %+v (or %+v)", s.issue(i), s.m.flagOn, s.summary(i), got, want, alt)
		}
		s.checkDecisions(i, v)
		if v.Freed != nil {
			s.checkRead(i, v, "free", v.Freed.At)
		}
	}
}

// mResult is the part of a claim view the oracle decides.
type mResult struct {
	Claim, Stage, SendBack, Accept, Freed, WouldFree string
	ClaimsIssue, Live, Holds                         bool
	Held                                             string
}

func mOutcome(v dispatch.View) mResult {
	o := mResult{Claim: v.Claim, Stage: v.Stage, ClaimsIssue: v.ClaimsIssue, Live: v.Live, Holds: v.HoldsFiles,
		Held: strings.Join(v.HeldPaths, ",")}
	if v.SendBackClaim != nil {
		o.SendBack = *v.SendBackClaim
	}
	if v.AcceptClaim != nil {
		o.Accept = *v.AcceptClaim
	}
	if v.Freed != nil {
		o.Freed = v.Freed.Rule
	}
	if v.WouldFree != nil {
		o.WouldFree = v.WouldFree.Rule
	}
	return o
}

// oracle is the claim view of row after the sweep, from the row as written,
// the branch's final PRs and the flag: what Decide answers, applied under
// the flag (QUEEN_RELEASE_DEAD_CLAIMS stays off: a send-back is only ever
// would_free). With the flag off, a free recorded while it was on stands:
// alt is that outcome when the row may have one.
func (s *mSeq) oracle(row int, now time.Time) (want mResult, alt *mResult) {
	r := s.rows[row]
	d := &dispatch.Row{Repo: repo, Issue: s.issue(row), Started: true, Ceiling: rules.DefaultSendBackCeiling,
		SendBacks: r.sendBacks, OwnedPaths: r.paths}
	at := r.dispatched
	d.DispatchedAt = &at
	if r.verdict != "" {
		fin, verdict := s.finished, r.verdict
		d.FinishedAt, d.ReviewState = &fin, &verdict
	}
	p := s.summary(row)
	d.PRs = &p
	dec := dispatch.Decide(d, now)
	outcome := func(freed, would string) mResult {
		if freed != "" {
			d.Freed = &dispatch.FreeRecord{Rule: freed}
		}
		if would != "" {
			d.WouldFree = &dispatch.FreeRecord{Rule: would}
		}
		v := dec.View(d, freed == "")
		d.Freed, d.WouldFree = nil, nil
		return mOutcome(v)
	}
	switch dec.RuleFrees() {
	case dispatch.RuleAccept:
		if s.m.flagOn {
			return outcome(dispatch.RuleAccept, ""), nil
		}
		want = outcome("", dispatch.RuleAccept)
		if r.mayFree {
			a := outcome(dispatch.RuleAccept, "")
			alt = &a
		}
		return want, alt
	case dispatch.RuleSendBack:
		return outcome("", dispatch.RuleSendBack), nil
	}
	return outcome("", ""), nil
}

// cleanup deletes the sequence's rows, so that the sweeps of the next
// sequences read only their own.
func (s *mSeq) cleanup() {
	s.t.Helper()
	for i, r := range s.rows {
		if !r.exists {
			continue
		}
		if code := s.api("DELETE", "/dispatches/"+itoa(s.issue(i)), nil, nil); code != http.StatusOK {
			s.t.Fatalf("DELETE #%d: %d", s.issue(i), code)
		}
	}
}
