package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// viewerToken is QUEEN_UI_TOKEN of the browser test.
const viewerToken = "e2e-ui-token-5b0c9"

// browser is Debian's chromium, headless, driven with chromedp (the
// DevTools protocol from Go: no Node, no second test runner). The machine
// has no network, so everything that would call out is off.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (apt-get install chromium; .ci/run installs it): the claims page is tested in a real browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.Headless,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// do runs one step's actions within limit (a bound for a broken run); on
// failure a screenshot of the page goes to a file named in the output.
func (b *browser) do(step string, limit time.Duration, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, limit)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.fail(step, err)
	}
}

func (b *browser) fail(step string, err error) {
	b.t.Helper()
	var shot []byte
	var url, text string
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	_ = chromedp.Run(ctx, chromedp.Location(&url), chromedp.FullScreenshot(&shot, 100),
		chromedp.Evaluate(`document.body ? document.body.innerText : ""`, &text))
	where := "no screenshot"
	if dir, derr := os.MkdirTemp("", "queen-ui-screenshot-"); derr == nil && len(shot) > 0 {
		where = filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+".png")
		_ = os.WriteFile(where, shot, 0o644)
	}
	b.t.Fatalf("%s: %v\npage %s, screenshot %s\n--- page text ---\n%s", step, err, url, where, text)
}

// check fails the step unless the JavaScript expression is true.
func (b *browser) check(step, expr string) {
	b.t.Helper()
	var ok bool
	b.do(step, 10*time.Second, chromedp.Evaluate(expr, &ok))
	if !ok {
		b.fail(step, fmt.Errorf("%s is false", expr))
	}
}

// A person opens the claims page of the built webhook in chromium: signs
// in, sees the rows (data-repo, data-issue, data-claim), sees a free
// arrive without a reload, opens a row's explain view and history, opens
// the queue UI, and signs out.
func TestClaimsPageInABrowser(t *testing.T) {
	s := newStack(t, map[string]string{"QUEEN_UI_TOKEN": viewerToken})
	waitHTTP(t, s.webhook(), s.apiURL+"/readyz")
	for _, issue := range []int64{1, 2} {
		body := map[string]any{"started": true, "owned_paths": []string{fmt.Sprintf("src/f%d.go", issue)}}
		if code := apiJSON(t, "PUT", s.apiURL+"/v1/repos/"+repo+"/dispatches/"+itoa(issue), apiToken, body, nil); code != 200 {
			t.Fatalf("PUT #%d: %d", issue, code)
		}
	}
	var want struct{ Claim string }
	apiJSON(t, "GET", s.apiURL+"/v1/repos/"+repo+"/claims/1", apiToken, nil, &want)

	b := newBrowser(t)
	row := func(issue int) string {
		return fmt.Sprintf(`tr.row[data-repo=%q][data-issue="%d"]`, repo, issue)
	}
	b.do("the sign-in form", 20*time.Second, chromedp.Navigate(s.apiURL+"/ui/"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	b.do("a wrong token", 20*time.Second, chromedp.SendKeys("#token", "wrong-token-0123456", chromedp.ByQuery),
		chromedp.Click("#sign-in-button", chromedp.ByQuery), chromedp.WaitVisible("#problem", chromedp.ByQuery))
	b.do("sign in", 20*time.Second, chromedp.SendKeys("#token", apiToken, chromedp.ByQuery),
		chromedp.Click("#sign-in-button", chromedp.ByQuery), chromedp.WaitVisible(row(1), chromedp.ByQuery),
		chromedp.WaitVisible(row(2), chromedp.ByQuery))
	b.check("the row's claim word", fmt.Sprintf(`document.querySelector(%q).dataset.claim === %q`, row(1), want.Claim))
	b.check("the overview", `document.querySelector("#ov-claims").textContent === "2" && document.querySelector("#ov-files").textContent === "2"`)

	// Live: the page follows the watch stream, and the free shows without
	// a reload (the marker set on this document survives).
	b.do("the stream connected", 20*time.Second, chromedp.Evaluate(`window.notReloaded = true`, nil),
		chromedp.WaitVisible(`#live[data-state="live"]`, chromedp.ByQuery))
	freed := time.Now()
	if code := apiJSON(t, "POST", s.apiURL+"/v1/repos/"+repo+"/claims/2/free", apiToken,
		map[string]any{"reason": "the bee will not come back"}, nil); code != 200 {
		t.Fatalf("free #2: %d", code)
	}
	b.do("the free arrives live", 20*time.Second, chromedp.WaitVisible(row(2)+`[data-live="false"]`, chromedp.ByQuery))
	t.Logf("the free showed %v after its write", time.Since(freed).Round(10*time.Millisecond))
	b.check("no reload", `window.notReloaded === true && document.querySelector("#ov-claims").textContent === "1"`)
	b.check("the free's rule in the row", fmt.Sprintf(`document.querySelector(%q).textContent.includes("manual")`, row(2)))

	b.do("the row page", 20*time.Second, chromedp.Click(row(1)+" a", chromedp.ByQuery),
		chromedp.WaitVisible(`#explain li`, chromedp.ByQuery), chromedp.WaitVisible(`#history tr.entry`, chromedp.ByQuery))
	b.check("the row page names its row", fmt.Sprintf(`document.querySelector("#row-title").dataset.issue === "1" && location.pathname === "/ui/rows/%s/1"`, repo))

	b.do("the queue UI", 30*time.Second, chromedp.Click("#queues-link", chromedp.ByQuery),
		chromedp.WaitVisible(`#root`, chromedp.ByQuery), chromedp.Poll(`document.title.includes("Asynq") && document.body.innerText.includes("Queues")`, nil))

	b.do("sign out", 20*time.Second, chromedp.Navigate(s.apiURL+"/ui/"), chromedp.WaitVisible("#sign-out-button", chromedp.ByQuery),
		chromedp.Click("#sign-out-button", chromedp.ByQuery), chromedp.WaitVisible("#token", chromedp.ByQuery))
	var status int
	b.do("signed out, the API refuses", 10*time.Second, chromedp.Evaluate(`fetch("/v1/claims").then(r => r.status)`, &status,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if status != 401 {
		b.fail("signed out, the API refuses", fmt.Errorf("GET /v1/claims answered %d, want 401", status))
	}
}
