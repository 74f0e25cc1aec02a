package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queen-app/queen-app/internal/githubtest"
)

// deliveriesGitHub is the fake GitHub with the App's key in the environment.
func deliveriesGitHub(t *testing.T) *githubtest.Server {
	t.Helper()
	gh := githubtest.New(t)
	t.Setenv("GITHUB_APP_ID", fmt.Sprint(gh.AppID()))
	t.Setenv("GITHUB_APP_PRIVATE_KEY", string(gh.Key()))
	t.Setenv("GITHUB_APP_PRIVATE_KEY_FILE", "")
	t.Setenv("GITHUB_API_URL", gh.URL())
	return gh
}

// someDeliveries records, relative to now: guid-a failed then succeeded on
// redelivery; guid-b failed twice; guid-c failed once; guid-old failed four
// days ago (out of GitHub's window); 105 successful ones (so the list pages).
func someDeliveries(gh *githubtest.Server, now time.Time) (bLatest, cOnly int64) {
	for i := 0; i < 105; i++ {
		gh.AddDelivery(githubtest.Delivery{GUID: fmt.Sprintf("ok-%03d", i), DeliveredAt: now.Add(-time.Duration(i+10) * time.Minute),
			StatusCode: 202, Event: "pull_request", Action: "closed"})
	}
	gh.AddDelivery(githubtest.Delivery{GUID: "guid-a", DeliveredAt: now.Add(-5 * time.Hour), StatusCode: 503, Event: "pull_request", Action: "closed"})
	gh.AddDelivery(githubtest.Delivery{GUID: "guid-a", DeliveredAt: now.Add(-4 * time.Hour), StatusCode: 202, Event: "pull_request", Action: "closed", Redelivery: true})
	gh.AddDelivery(githubtest.Delivery{GUID: "guid-b", DeliveredAt: now.Add(-50 * time.Hour), StatusCode: 502, Event: "pull_request", Action: "reopened"})
	bLatest = gh.AddDelivery(githubtest.Delivery{GUID: "guid-b", DeliveredAt: now.Add(-49 * time.Hour), StatusCode: 500, Event: "pull_request", Action: "reopened", Redelivery: true})
	cOnly = gh.AddDelivery(githubtest.Delivery{GUID: "guid-c", DeliveredAt: now.Add(-2 * time.Hour), StatusCode: 401, Event: "installation", Action: "created"})
	gh.AddDelivery(githubtest.Delivery{GUID: "guid-old", DeliveredAt: now.Add(-96 * time.Hour), StatusCode: 500, Event: "pull_request", Action: "closed"})
	return bLatest, cOnly
}

func TestDeliveriesListAndRedeliver(t *testing.T) {
	gh := deliveriesGitHub(t)
	bLatest, cOnly := someDeliveries(gh, time.Now())

	code, out, errOut := ctl("deliveries", "list")
	if code != 0 || errOut != "" {
		t.Fatalf("list: exit %d, stderr %q", code, errOut)
	}
	rows := lines(out)
	if f := strings.Join(strings.Fields(rows[0]), " "); f != "ID GUID EVENT ACTION STATUS DELIVERED_AT REDELIVERY" {
		t.Fatalf("header %q", rows[0])
	}
	if len(rows) != 1+110+1 || strings.Contains(out, "guid-old") {
		t.Fatalf("want the 110 attempts of the last 3 days (all pages, none older):\n%s", out)
	}
	if !strings.HasPrefix(rows[len(rows)-1], "110 attempts since ") || !strings.HasSuffix(rows[len(rows)-1], "; 2 GUIDs with no successful attempt") {
		t.Fatalf("summary %q", rows[len(rows)-1])
	}
	var bLine string
	for _, r := range rows {
		if strings.HasPrefix(r, fmt.Sprint(bLatest)+" ") {
			bLine = strings.Join(strings.Fields(r), " ")
		}
	}
	if !strings.HasPrefix(bLine, fmt.Sprintf("%d guid-b pull_request reopened 500 Invalid HTTP Response: 500 ", bLatest)) || !strings.HasSuffix(bLine, " true") {
		t.Fatalf("guid-b's latest attempt: %q", bLine)
	}

	// A dry run names what it would do and asks nothing of GitHub.
	code, out, _ = ctl("deliveries", "redeliver", "--dry-run")
	if code != 0 || len(gh.Redelivered()) != 0 || strings.Count(out, "would redeliver ") != 2 ||
		!strings.Contains(out, "2 GUIDs with no successful attempt: 2 would redeliver, 0 failed") {
		t.Fatalf("dry run: exit %d, redelivered %v\n%s", code, gh.Redelivered(), out)
	}

	code, out, errOut = ctl("deliveries", "redeliver")
	if code != 0 || errOut != "" {
		t.Fatalf("redeliver: exit %d, stderr %q\n%s", code, errOut, out)
	}
	// Oldest first: guid-b's latest attempt, then guid-c; never guid-a (it
	// succeeded on redelivery) nor guid-old (out of the window).
	if got, want := gh.Redelivered(), []int64{bLatest, cOnly}; !reflect.DeepEqual(got, want) {
		t.Fatalf("redelivered %v, want %v", got, want)
	}
	for _, w := range []string{
		fmt.Sprintf("redelivered %d (guid guid-b, pull_request reopened, last attempt 500 Invalid HTTP Response: 500 at ", bLatest),
		fmt.Sprintf("redelivered %d (guid guid-c, installation created, last attempt 401 ", cOnly),
		"110 attempts read, 2 GUIDs with no successful attempt: 2 redelivered, 0 failed",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("redeliver output lacks %q:\n%s", w, out)
		}
	}

	// The redeliveries succeeded: nothing is left to redeliver.
	code, out, _ = ctl("deliveries", "redeliver")
	if code != 0 || len(gh.Redelivered()) != 2 || !strings.Contains(out, "0 redelivered, 0 failed") {
		t.Fatalf("second run: exit %d, redelivered %v\n%s", code, gh.Redelivered(), out)
	}
	code, out, _ = ctl("deliveries", "list", "--json")
	var got struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Deliveries) != 112 {
		t.Fatalf("list --json: exit %d, %v, %d attempts, want 112", code, err, len(got.Deliveries))
	}
	if d := got.Deliveries[0]; !d.Redelivery || d.StatusCode != 200 || (d.GUID != "guid-b" && d.GUID != "guid-c") {
		t.Fatalf("newest attempt %+v, want a successful redelivery", d)
	}
}

func TestDeliveriesRedeliverFailureExitsOne(t *testing.T) {
	gh := deliveriesGitHub(t)
	_, cOnly := someDeliveries(gh, time.Now())
	gh.FailAfter(0, "/app/hook/deliveries/"+fmt.Sprint(cOnly)+"/attempts", http.StatusInternalServerError, nil, 10)
	code, out, errOut := ctl("deliveries", "redeliver")
	if code != 1 || !strings.Contains(out, fmt.Sprintf("failed %d (guid guid-c", cOnly)) ||
		!strings.Contains(out, "1 redelivered, 1 failed") || errOut != "queenctl: deliveries redeliver: 1 redeliveries failed\n" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
}

func TestDeliveriesNeedTheApp(t *testing.T) {
	t.Setenv("GITHUB_APP_ID", "")
	code, _, errOut := ctl("deliveries", "list")
	if code != 2 || errOut != "queenctl: deliveries list: GITHUB_APP_ID: is required\n"+
		"queenctl: deliveries list: GITHUB_APP_PRIVATE_KEY_FILE: is required (or GITHUB_APP_PRIVATE_KEY with the PEM)\n" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	t.Setenv("GITHUB_APP_ID", "7")
	t.Setenv("GITHUB_APP_PRIVATE_KEY", "")
	t.Setenv("GITHUB_APP_PRIVATE_KEY_FILE", "/nonexistent/key.pem")
	code, _, errOut = ctl("deliveries", "redeliver")
	if code != 2 || !strings.HasPrefix(errOut, "queenctl: deliveries redeliver: GITHUB_APP_PRIVATE_KEY_FILE: cannot be read") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut = ctl("deliveries", "resend"); code != 2 || !strings.Contains(errOut, `unknown subcommand "resend"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
