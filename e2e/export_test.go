package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
	"github.com/queen-app/queen-app/internal/tasks"
)

func exShort(sha string) string { return sha[:12] }

func exIssues(heads map[int64]string) []int64 {
	out := make([]int64, 0, len(heads))
	for n := range heads {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// The measured backlog: accepted rows whose head never reached GitHub.
// The worker drains it from the ledger alone.
func TestExportBacklogDrains(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.webhook()
	heads := map[int64]string{}
	for i := int64(101); i <= 130; i++ {
		heads[i] = x.branch(i, map[string]string{fmt.Sprintf("src/part%d.rs", i): fmt.Sprintf("fn part%d() {}\n", i)})
		x.accept(i, heads[i], map[string]any{"owned_paths": []string{"src/"}})
	}
	x.accept(131, "", map[string]any{"judged_head": nil}) // accepted at no head: nothing to push
	x.put(132, map[string]any{"started": true, "finished_at": "2026-10-11T12:20:00Z", "review_state": "sendBack"})
	pushes0 := x.remote.Pushes()

	x.startWorker()
	x.waitStates("pr_opened", exIssues(heads)...)
	x.checkPublished(heads)
	// Later sweeps find nothing to do.
	listings := x.exp.Requests("/queen/export")
	eventually(t, exLimit, "two more export sweeps", func() bool { return x.exp.Requests("/queen/export") >= listings+2 })
	if n := x.remote.Pushes() - pushes0; n != 30 {
		t.Errorf("%d pushes reached the remote, want one per branch (30)", n)
	}
	if n := len(x.gh.PRs(repo)); n != 30 {
		t.Errorf("%d PRs on GitHub, want 30", n)
	}
	for _, p := range x.gh.PRs(repo) {
		issue := strings.TrimPrefix(p.HeadRef, "queen-")
		if p.Base != "master" || p.Title != "Issue "+issue+": make the compiler faster" || !strings.HasPrefix(p.Body, "Closes #"+issue+"\n") {
			t.Errorf("PR #%d: base %q title %q body %q", p.Number, p.Base, p.Title, p.Body)
		}
	}
	if x.remote.Ref(t, "queen-131") != "" || x.remote.Ref(t, "queen-132") != "" {
		t.Error("a row without a judged head, or not accepted, was pushed")
	}

	lines, rows := x.status()
	if lines[""] != "31 rows: 1 not_tried, 30 pr_opened" {
		t.Errorf("status summary %q", lines[""])
	}
	for issue, head := range heads {
		key := fmt.Sprintf("%s#%d", repo, issue)
		st := rows[issue].Export
		if st == nil {
			t.Fatalf("%s: no export state in --json", key)
		}
		if want := fmt.Sprintf("%s pr_opened %s #%d 1 - -", key, exShort(head), st.PRNumber); lines[key] != want {
			t.Errorf("status line %q, want %q", lines[key], want)
		}
	}
	if lines[repo+"#131"] != repo+"#131 not_tried - - 0 - -" {
		t.Errorf("status of the row without a head: %q", lines[repo+"#131"])
	}
	if _, shown := lines[repo+"#132"]; shown {
		t.Error("status shows a row that is neither accepted nor tried")
	}
}

// The export times out, listing and bundles, for longer than the retry
// budget would last if outages spent it; then it recovers, except one
// bundle that still times out, which delays only its own branch.
func TestExportOutageThenRecovery(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{gateway: 150 * time.Millisecond, sweep: "2s"})
	t0 := time.Now()
	x.webhook()
	heads := map[int64]string{}
	for i := int64(1); i <= 2; i++ {
		heads[i] = x.branch(i, map[string]string{fmt.Sprintf("lib/m%d.go", i): "package lib\n"})
		x.accept(i, heads[i], nil)
	}
	slow := x.branch(3, map[string]string{"lib/m3.go": "package lib\n"})
	pushes0 := x.remote.Pushes()
	x.exp.Slow(time.Hour, -1) // every request outlasts the gateway: 504 Gateway Timeout
	x.startWorker()

	x.waitStates("retrying", 1, 2)
	versions := x.versions()
	budget := tasks.ExportPushMaxRetry + 2 // attempts that would have archived the task
	eventually(t, exLimit, "every push to outlast its retry budget", func() bool {
		x.runRetries()
		for i := range heads {
			if x.exp.Requests(fmt.Sprintf("/queen/export/%d", i)) < budget {
				return false
			}
		}
		return true
	})
	t.Logf("outage outlasted the budget after %s", time.Since(t0))
	// The waiting attempts wrote nothing: a person's --version holds.
	all := x.exports()
	for i := range heads {
		if st := all[i]; st.Attempts != 1 || x.versions()[i] != versions[i] {
			t.Errorf("#%d during the outage: %+v, version %d→%d; want the first attempt recorded only", i, st, versions[i], x.versions()[i])
		}
	}
	if code, out, errOut := x.ctl("claims", "keep", repo+"#1", "--reason", "wanted", "--version", itoa(versions[1])); code != 0 {
		t.Errorf("claims keep --version %d during the outage: exit %d, %s%s", versions[1], code, out, errOut)
	}
	if a := x.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived during the outage: %s", len(a), a[0].LastErr)
	}
	for i, head := range heads {
		id := tasks.ExportPushID(tasks.ExportPushPayload{Repo: repo, Issue: i, Head: head})
		if info, err := x.insp.GetTaskInfo(tasks.Queue, id); err != nil || info.Retried != 0 {
			t.Fatalf("task %s: %+v, %v; want it waiting with its retry budget untouched", id, info, err)
		}
	}
	if x.exp.Requests("/queen/export") == 0 {
		t.Fatal("the sweep never tried the listing")
	}
	if x.remote.Pushes() != pushes0 || len(x.gh.PRs(repo)) != 0 {
		t.Fatal("something was published while the export was down")
	}
	lines, _ := x.status()
	for i := range heads {
		key := fmt.Sprintf("%s#%d", repo, i)
		if l := lines[key]; !strings.HasPrefix(l, key+" retrying - - ") ||
			!strings.Contains(l, fmt.Sprintf(" - GET /queen/export/%d: status 504: ", i)) {
			t.Errorf("status during the outage: %q", l)
		}
	}

	// The export is back, but queen-3's bundle still times out.
	x.exp.SlowIssue(3, time.Hour)
	x.exp.Slow(0, 0)
	x.accept(3, slow, nil)
	eventually(t, exLimit, "the other branches to publish while queen-3 times out", func() bool {
		x.runRetries()
		all := x.exports()
		return all[1] != nil && all[1].State == "pr_opened" && all[2] != nil && all[2].State == "pr_opened" &&
			all[3] != nil && all[3].State == "retrying"
	})
	t.Logf("others published after %s", time.Since(t0))
	if x.remote.Ref(t, "queen-3") != "" || x.prs()["queen-3"] != 0 {
		t.Fatal("queen-3 was published although its bundle timed out")
	}
	x.exp.SlowIssue(3, 0)
	eventually(t, exLimit, "queen-3 to publish", func() bool {
		x.runRetries()
		return x.state(3) == "pr_opened"
	})
	heads[3] = slow
	x.checkPublished(heads)
	if n := x.remote.Pushes() - pushes0; n != 3 {
		t.Errorf("%d pushes, want one per branch", n)
	}
	if n := len(x.gh.PRs(repo)); n != 3 {
		t.Errorf("%d PRs, want 3", n)
	}
	if a := x.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived: %s", len(a), a[0].LastErr)
	}
	if lines, _ := x.status(); lines[""] != "3 rows: 3 pr_opened" {
		t.Errorf("status summary %q", lines[""])
	}
}

// Each of the publisher's refusals is recorded with its reason, nothing is
// pushed, and the row is not tried again until it changes.
func TestExportRefusalsRecordedAndNothingPushed(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.webhook()
	master := x.work.Rev(t, "origin/master")

	h := x.branch(31, map[string]string{"src/a.rs": "fn a() {}\n"})
	x.accept(31, h, nil)
	x.gh.SetIssue(repo, 31, false, "closed meanwhile")

	judged := x.branch(32, map[string]string{"src/b.rs": "fn b() {}\n"})
	later := x.work.Commit(t, "queen-32", map[string]string{"src/b.rs": "fn b() { todo!() }\n"}, "more work after the review")
	x.accept(32, judged, nil)

	x.accept(33, master, nil) // the export has no queen-33

	x.work.Branch(t, "queen-34", "origin/master") // nothing ahead of the base
	x.accept(34, master, nil)

	x.accept(35, x.branch(35, map[string]string{".github/workflows/ci.yml": "on: push\n"}), nil)

	many := map[string]string{}
	for i := 0; i < 26; i++ {
		many[fmt.Sprintf("src/f%02d.rs", i)] = "fn f() {}\n"
	}
	x.accept(36, x.branch(36, many), nil)

	x.accept(37, x.branch(37, map[string]string{"README.md": "# t27, the bee's way\n"}), nil)
	x.remote.Work.Commit(t, "master", map[string]string{"README.md": "# t27, the maintainers' way\n"}, "Reword the README")
	x.remote.Work.Push(t, "master")

	outside := x.branch(38, map[string]string{"src/c.rs": "fn c() {}\n", "docs/notes.md": "notes\n"})
	x.accept(38, outside, map[string]any{"owned_paths": []string{"src/"}})

	// The attempt's own PR, at its judged head, was closed: not proposed
	// again. (An earlier attempt's closed PR, at another head, is no PR of
	// this one: TestAReDispatchIsPushedAndFreedOnItsOwnPR.)
	head39 := x.branch(39, map[string]string{"src/d.rs": "fn d() {}\n"})
	x.accept(39, head39, nil)
	closed := x.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-39", HeadRepo: repo, HeadSHA: head39, State: "closed", Title: "this attempt's PR, closed"})

	pushes0 := x.remote.Pushes()
	x.startWorker()
	refused := []int64{31, 32, 33, 34, 35, 36, 37, 38}
	x.waitStates("refused", refused...)
	x.waitStates("has_pr", 39)
	// Three more sweeps: a refusal stands until the row changes.
	listings := x.exp.Requests("/queen/export")
	eventually(t, exLimit, "three more export sweeps", func() bool { return x.exp.Requests("/queen/export") >= listings+3 })

	want := map[int64]string{
		31: "refused - - 1 issue-not-open: the issue is not open -",
		32: fmt.Sprintf("refused - - 1 not-accepted: accepted at %s, but the export has %s -", exShort(judged), exShort(later)),
		33: "refused - - 1 no-bundle: the export has no bundle for queen-33 -",
		34: "refused - - 1 no-commits: the export has nothing ahead of its base -",
		35: "refused - - 1 workflow: changes .github/workflows/ci.yml: workflows move the census and the gate ledger, so a person publishes them -",
		36: "refused - - 1 too-large: 1 commits and 26 files; at most 20 and 25 -",
		37: "refused - - 1 conflicts: conflicts with the base: README.md -",
		38: "refused - - 1 boundary: wrote outside its boundary: docs/notes.md (1 in all) -",
		39: fmt.Sprintf("has_pr - #%d 1 has-pr: the branch already has a pull request (0 open, 0 merged, 1 closed: #%d) -", closed, closed),
	}
	lines, _ := x.status()
	for issue, w := range want {
		key := fmt.Sprintf("%s#%d", repo, issue)
		if lines[key] != key+" "+w {
			t.Errorf("status line\n  %q\nwant\n  %q", lines[key], key+" "+w)
		}
	}
	if lines[""] != "9 rows: 1 has_pr, 8 refused" {
		t.Errorf("status summary %q", lines[""])
	}
	if x.remote.Pushes() != pushes0 || len(x.gh.PRs(repo)) != 1 {
		t.Fatalf("refused rows were pushed (%d pushes) or got PRs (%d)", x.remote.Pushes()-pushes0, len(x.gh.PRs(repo)))
	}
	for issue := range want {
		if x.remote.Ref(t, fmt.Sprintf("queen-%d", issue)) != "" {
			t.Errorf("queen-%d reached the remote", issue)
		}
	}

	// The Queen widens #38's Boundary: decided afresh, and published.
	x.put(38, map[string]any{"owned_paths": []string{"src/", "docs/"}})
	x.waitStates("pr_opened", 38)
	x.checkPublished(map[int64]string{38: outside})
	if n := x.remote.Pushes() - pushes0; n != 1 {
		t.Errorf("%d pushes, want only #38's", n)
	}
	all := x.exports()
	for _, issue := range append(refused[:7:7], 39) {
		if st := all[issue]; st == nil || st.Attempts != 1 {
			t.Errorf("#%d: %+v, want its one refused attempt, not retried", issue, st)
		}
	}
}

// An older attempt on the remote is replaced: tagged first, then replaced
// under a lease; a lease lost in between is retried, and the tip that
// moved in is kept too. A remote moved to a newer commit by someone else,
// or with an open PR, is left alone. queenctl export push --dry-run
// decides and records, and pushes nothing.
func TestExportSupersedeAndDryRun(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{sweep: "0s"}) // pushes come from queenctl only
	x.webhook()

	older := x.branch(21, map[string]string{"src/s21.rs": "fn old() {}\n"})
	x.work.Push(t, "queen-21")
	x.work.Branch(t, "other-21", "origin/master")
	moved := x.work.Commit(t, "other-21", map[string]string{"src/s21.rs": "fn other() {}\n"}, "someone's attempt")
	x.work.Push(t, "other-21:refs/scratch/21")
	judged := x.branch(21, map[string]string{"src/s21.rs": "fn new() {}\n"})
	x.accept(21, judged, nil)

	mine := x.branch(22, map[string]string{"src/s22.rs": "fn mine() {}\n"})
	x.work.Branch(t, "other-22", "origin/master")
	newer := x.work.Commit(t, "other-22", map[string]string{"src/s22.rs": "fn theirs() {}\n"}, "someone else's newer work")
	x.work.Push(t, "other-22:queen-22")
	x.accept(22, mine, nil)

	old23 := x.branch(23, map[string]string{"src/s23.rs": "fn old() {}\n"})
	x.work.Push(t, "queen-23")
	x.accept(23, x.branch(23, map[string]string{"src/s23.rs": "fn new() {}\n"}), nil)
	open := x.gh.AddPR(repo, githubtest.PR{HeadRef: "queen-23", HeadRepo: repo, HeadSHA: old23, State: "open"})

	dry := x.branch(24, map[string]string{"src/s24.rs": "fn d() {}\n"})
	x.accept(24, dry, nil)
	x.startWorker()

	// Someone moves queen-21 to another older attempt just as the lease
	// push arrives (the remote's second push: the first keeps the old tip).
	var n atomic.Int32
	x.remote.OnPush(func(int) {
		if n.Add(1) == 2 {
			_ = x.sb.Git.SetRef("queen-21", moved) // off the test goroutine: no t.Fatal
		}
	})
	pushes0 := x.remote.Pushes()
	code, out, errOut := x.ctl("export", "push", repo+"#21")
	if code != 0 || out != fmt.Sprintf("%s#21: export push enqueued at %s (task export:push:%s:21:%s)\n", repo, exShort(judged), repo, judged) {
		t.Fatalf("queenctl export push: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	x.waitStates("pr_opened", 21)
	x.remote.OnPush(nil)
	x.checkPublished(map[int64]string{21: judged})
	tags := x.remote.Refs(t, "refs/tags/")
	for _, kept := range []string{older, moved} {
		if tag := "refs/tags/queen-superseded/21/" + exShort(kept); tags[tag] != kept {
			t.Errorf("tag %s = %q, want the replaced tip %s kept; tags %v", tag, tags[tag], kept, tags)
		}
	}
	// The tag and the lease push; the lease refused; the tag and the lease push again.
	if p := x.remote.Pushes() - pushes0; p != 4 {
		t.Errorf("%d pushes, want 4", p)
	}
	if st := x.exports()[21]; st.Attempts != 2 {
		t.Errorf("#21 attempts %d, want 2 (the lost lease, then the retry)", st.Attempts)
	}

	pushes0 = x.remote.Pushes()
	for _, issue := range []int64{22, 23} {
		if code, _, errOut := x.ctl("export", "push", fmt.Sprintf("%s#%d", repo, issue)); code != 0 {
			t.Fatalf("queenctl export push #%d: exit %d, %s", issue, code, errOut)
		}
	}
	x.waitStates("refused", 22)
	x.waitStates("has_pr", 23)
	lines, _ := x.status()
	if l := lines[repo+"#22"]; !strings.HasPrefix(l, fmt.Sprintf("%s#22 refused - - 1 not-fast-forward: queen-22 is at %s, not an ancestor of %s: the remote tip (committed ",
		repo, exShort(newer), exShort(mine))) || !strings.Contains(l, "is not older than the export") {
		t.Errorf("status of #22: %q", l)
	}
	if l, w := lines[repo+"#23"], fmt.Sprintf("%s#23 has_pr - #%d 1 has-pr: the branch already has a pull request (1 open, 0 merged, 0 closed: #%d) -", repo, open, open); l != w {
		t.Errorf("status of #23:\n  %q\nwant\n  %q", l, w)
	}
	if x.remote.Ref(t, "queen-22") != newer || x.remote.Ref(t, "queen-23") != old23 || x.remote.Pushes() != pushes0 {
		t.Fatal("a branch someone else moved, or one with an open PR, was replaced")
	}
	for tag := range x.remote.Refs(t, "refs/tags/") {
		if !strings.HasPrefix(tag, "refs/tags/queen-superseded/21/") {
			t.Errorf("unexpected tag %s", tag)
		}
	}
	if prs := x.prs(); prs["queen-22"] != 0 || prs["queen-23"] != 1 {
		t.Fatalf("PRs %v: none may be opened for #22 or #23", prs)
	}

	// A dry run decides and records only its own audit entry, never the
	// row; a real push afterwards publishes.
	before, _ := x.status()
	code, out, _ = x.ctl("export", "push", "--dry-run", repo+"#24")
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("%s#24: export dry run enqueued at %s (task export:push:%s:24:%s:dry-run)", repo, exShort(dry), repo, dry)) {
		t.Fatalf("queenctl export push --dry-run: exit %d, %q", code, out)
	}
	eventually(t, exLimit, "the dry run's audit entry", func() bool {
		_, out, _ := x.ctl("audit", "--repo", repo, "--issue", "24", "--json")
		return strings.Contains(out, `"action": "export_dry_run"`) || strings.Contains(out, `"action":"export_dry_run"`)
	})
	if lines, _ := x.status(); lines[repo+"#24"] != before[repo+"#24"] {
		t.Errorf("the dry run changed the row's export status: %q, was %q", lines[repo+"#24"], before[repo+"#24"])
	}
	if x.remote.Ref(t, "queen-24") != "" || x.prs()["queen-24"] != 0 || x.remote.Pushes() != pushes0 {
		t.Fatal("a dry run pushed or opened a PR")
	}
	if code, _, _ := x.ctl("export", "push", repo+"#24"); code != 0 {
		t.Fatal("queenctl export push after the dry run failed")
	}
	x.waitStates("pr_opened", 24)
	x.checkPublished(map[int64]string{24: dry})
}

// The worker is killed (SIGKILL) while its push is on the wire; a
// restarted worker converges on the state an undisturbed run reaches.
func TestExportWorkerKilledMidPushConverges(t *testing.T) {
	t.Parallel()
	x := newExStack(t, exOpts{})
	x.webhook()
	heads := map[int64]string{}
	for i := int64(41); i <= 42; i++ {
		heads[i] = x.branch(i, map[string]string{fmt.Sprintf("src/k%d.rs", i): "fn k() {}\n"})
		x.accept(i, heads[i], nil)
	}
	held, release := x.onPushBlock()
	defer release()
	w := x.startWorker()
	select {
	case <-held:
	case <-time.After(exLimit):
		t.Fatal("no push reached the remote")
	}
	w.kill()
	release() // the push the dead worker started may land or not
	var running int
	for _, id := range x.expireLeases() {
		if strings.HasPrefix(id, "export:push:") {
			running++
		}
	}
	if running == 0 {
		t.Fatal("no export:push was running when the worker was killed")
	}

	x.startWorker()
	x.waitStates("pr_opened", 41, 42)
	x.checkPublished(heads)
	if n := len(x.gh.PRs(repo)); n != 2 {
		t.Errorf("%d PRs, want 2", n)
	}
	if a := x.archived(); len(a) != 0 {
		t.Fatalf("%d tasks archived: %s", len(a), a[0].LastErr)
	}
}
