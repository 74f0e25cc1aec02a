package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/githubapp"
)

var deliveriesVerbs = []verb{
	{"list", "[--json]"},
	{"redeliver", "[--dry-run]"},
}

// deliveriesTimeout bounds one run: listing three days of deliveries and
// redelivering the failed ones.
const deliveriesTimeout = 5 * time.Minute

func runDeliveries(args []string, stdout, stderr io.Writer) int {
	return runGroup("deliveries", deliveriesVerbs, map[string]func([]string, io.Writer, io.Writer) int{
		"list": deliveriesList, "redeliver": deliveriesRedeliver,
	}, "Both read the App's webhook deliveries of the last 3 days with GITHUB_APP_ID,\n"+
		"GITHUB_APP_PRIVATE_KEY_FILE (or GITHUB_APP_PRIVATE_KEY) and GITHUB_API_URL.", args, stdout, stderr)
}

// deliveriesApp is the App from GITHUB_APP_ID, its key and GITHUB_API_URL;
// on bad or missing values it prints a line naming each variable.
func deliveriesApp(name string, stderr io.Writer) (*githubapp.App, bool) {
	cfg, err := config.LoadApp(os.Getenv)
	if err == nil {
		var app *githubapp.App
		if app, err = githubapp.New(githubapp.Config{AppID: cfg.AppID, PrivateKey: cfg.PrivateKey, APIURL: cfg.APIURL,
			UserAgent: "queen-app-queenctl"}); err == nil {
			return app, true
		}
	}
	printErr(stderr, name, err)
	return nil, false
}

// recentDeliveries reads the attempts of the last RedeliverWindow, newest first.
// readDeliveries parses a deliveries verb's flags (it takes no arguments),
// builds the App from the environment and reads the deliveries of the last
// 3 days. A code of 0 or more means the verb ends with that exit status.
func readDeliveries(ctx context.Context, name, verb string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (
	app *githubapp.App, ds []githubapp.Delivery, now time.Time, code int) {
	if err := parseFlags(fs, args, nil); err != nil {
		return nil, nil, now, usageError(err, name, synopsisOf(deliveriesVerbs, verb), fs, stdout, stderr)
	}
	app, ok := deliveriesApp(name, stderr)
	if !ok {
		return nil, nil, now, 2
	}
	now = time.Now()
	var err error
	if ds, err = app.ListDeliveries(ctx, now.Add(-githubapp.RedeliverWindow)); err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return nil, nil, now, 1
	}
	return app, ds, now, -1
}

// deliveryJSON is one attempt in deliveries list --json.
type deliveryJSON struct {
	ID          int64     `json:"id"`
	GUID        string    `json:"guid"`
	Event       string    `json:"event"`
	Action      string    `json:"action"`
	Status      string    `json:"status"`
	StatusCode  int       `json:"status_code"`
	DeliveredAt time.Time `json:"delivered_at"`
	Redelivery  bool      `json:"redelivery"`
}

func deliveriesList(args []string, stdout, stderr io.Writer) int {
	const name = "deliveries list"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	asJSON := fs.Bool("json", false, `print {"deliveries": [...]} instead of the table`)
	ctx, cancel := context.WithTimeout(context.Background(), deliveriesTimeout)
	defer cancel()
	_, ds, now, code := readDeliveries(ctx, name, "list", fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if *asJSON {
		out := make([]deliveryJSON, 0, len(ds))
		for _, d := range ds {
			out = append(out, deliveryJSON{ID: d.ID, GUID: d.GUID, Event: d.Event, Action: d.Action, Status: d.Status,
				StatusCode: d.StatusCode, DeliveredAt: d.DeliveredAt.UTC(), Redelivery: d.Redelivery})
		}
		if err := writeJSON(stdout, struct {
			Deliveries []deliveryJSON `json:"deliveries"`
		}{out}); err != nil {
			fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tGUID\tEVENT\tACTION\tSTATUS\tDELIVERED_AT\tREDELIVERY")
	for _, d := range ds {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%t\n", d.ID, d.GUID, orNone(d.Event), orNone(d.Action),
			deliveryStatus(d), d.DeliveredAt.UTC().Format(time.RFC3339), d.Redelivery)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	failed := len(githubapp.ToRedeliver(ds, now))
	fmt.Fprintf(stdout, "%d attempts since %s; %d GUIDs with no successful attempt\n",
		len(ds), now.Add(-githubapp.RedeliverWindow).UTC().Format(time.RFC3339), failed)
	return 0
}

// deliveryStatus is GitHub's status text with its code.
func deliveryStatus(d githubapp.Delivery) string {
	s := orNone(d.Status)
	if d.StatusCode != 0 {
		s = fmt.Sprintf("%d %s", d.StatusCode, s)
	}
	return s
}

func deliveriesRedeliver(args []string, stdout, stderr io.Writer) int {
	const name = "deliveries redeliver"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dryRun := fs.Bool("dry-run", false, "print what would be redelivered and redeliver nothing")
	ctx, cancel := context.WithTimeout(context.Background(), deliveriesTimeout)
	defer cancel()
	app, ds, now, code := readDeliveries(ctx, name, "redeliver", fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	pick := githubapp.ToRedeliver(ds, now)
	verb := "redelivered"
	if *dryRun {
		verb = "would redeliver"
	}
	done, failed := 0, 0
	for _, d := range pick {
		what := fmt.Sprintf("%d (guid %s, %s %s, last attempt %s at %s)", d.ID, d.GUID, orNone(d.Event), orNone(d.Action),
			deliveryStatus(d), d.DeliveredAt.UTC().Format(time.RFC3339))
		if !*dryRun {
			if err := app.Redeliver(ctx, d.ID); err != nil {
				failed++
				fmt.Fprintf(stdout, "failed %s: %v\n", what, err)
				if githubapp.Classify(err) == githubapp.RateLimited || ctx.Err() != nil {
					break // the rest would fail the same way
				}
				continue
			}
		}
		done++
		fmt.Fprintf(stdout, "%s %s\n", verb, what)
	}
	fmt.Fprintf(stdout, "%d attempts read, %d GUIDs with no successful attempt: %d %s, %d failed\n",
		len(ds), len(pick), done, verb, failed)
	if failed > 0 {
		fmt.Fprintf(stderr, "queenctl: %s: %d redeliveries failed\n", name, failed)
		return 1
	}
	return 0
}
