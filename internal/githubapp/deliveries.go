package githubapp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/google/go-github/v66/github"
)

// RedeliverWindow is how far back GitHub keeps deliveries it can redeliver.
const RedeliverWindow = 72 * time.Hour

// Delivery is one attempt of an App webhook delivery.
type Delivery struct {
	ID             int64
	GUID           string // X-GitHub-Delivery; shared by a delivery and its redeliveries
	DeliveredAt    time.Time
	Redelivery     bool
	Status         string
	StatusCode     int
	Event          string
	Action         string
	InstallationID int64
	RepositoryID   int64
}

// Succeeded reports whether the receiver answered 2xx.
func (d Delivery) Succeeded() bool { return d.StatusCode >= 200 && d.StatusCode < 300 }

// DeliveriesPage reads one page (100, newest first) of the App's webhook
// deliveries with the App JWT; cursor "" is the first page, next "" the end.
func (a *App) DeliveriesPage(ctx context.Context, cursor string) (ds []Delivery, next string, err error) {
	const op = "GET /app/hook/deliveries"
	list, resp, err := a.appClient.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 100, Cursor: cursor})
	if err != nil {
		return nil, "", failApp(op, err)
	}
	for _, d := range list {
		ds = append(ds, Delivery{
			ID:             d.GetID(),
			GUID:           d.GetGUID(),
			DeliveredAt:    d.GetDeliveredAt().Time,
			Redelivery:     d.GetRedelivery(),
			Status:         d.GetStatus(),
			StatusCode:     d.GetStatusCode(),
			Event:          d.GetEvent(),
			Action:         d.GetAction(),
			InstallationID: d.GetInstallationID(),
			RepositoryID:   d.GetRepositoryID(),
		})
	}
	return ds, resp.Cursor, nil
}

// ListDeliveries reads the deliveries made at or after since, following the
// cursor in the Link header until a page reaches older ones.
func (a *App) ListDeliveries(ctx context.Context, since time.Time) ([]Delivery, error) {
	var out []Delivery
	cursor := ""
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fail("GET /app/hook/deliveries", badAnswer(fmt.Errorf("more than %d pages", maxPages)))
		}
		ds, next, err := a.DeliveriesPage(ctx, cursor)
		if err != nil {
			return nil, err
		}
		older := false
		for _, d := range ds {
			if d.DeliveredAt.Before(since) {
				older = true
				continue
			}
			out = append(out, d)
		}
		if older || next == "" || len(ds) == 0 {
			return out, nil
		}
		cursor = next
	}
}

// Redeliver asks GitHub to deliver delivery id again (GitHub answers 202).
func (a *App) Redeliver(ctx context.Context, id int64) error {
	_, _, err := a.appClient.Apps.RedeliverHookDelivery(ctx, id)
	var accepted *github.AcceptedError
	if err == nil || errors.As(err, &accepted) {
		return nil
	}
	return failApp("POST /app/hook/deliveries/"+strconv.FormatInt(id, 10)+"/attempts", err)
}

// ToRedeliver picks what to redeliver: deliveries are grouped by GUID; a GUID
// with any successful (2xx) attempt is done; for each other GUID whose latest
// attempt is within RedeliverWindow of now, that attempt. Oldest first.
func ToRedeliver(ds []Delivery, now time.Time) []Delivery {
	type group struct {
		ok     bool
		latest Delivery
	}
	groups := map[string]*group{}
	for _, d := range ds {
		if d.GUID == "" {
			continue
		}
		g := groups[d.GUID]
		if g == nil {
			g = &group{latest: d}
			groups[d.GUID] = g
		}
		g.ok = g.ok || d.Succeeded()
		if d.DeliveredAt.After(g.latest.DeliveredAt) || (d.DeliveredAt.Equal(g.latest.DeliveredAt) && d.ID > g.latest.ID) {
			g.latest = d
		}
	}
	var pick []Delivery
	for _, g := range groups {
		if !g.ok && now.Sub(g.latest.DeliveredAt) <= RedeliverWindow {
			pick = append(pick, g.latest)
		}
	}
	sort.Slice(pick, func(i, j int) bool {
		if !pick[i].DeliveredAt.Equal(pick[j].DeliveredAt) {
			return pick[i].DeliveredAt.Before(pick[j].DeliveredAt)
		}
		return pick[i].ID < pick[j].ID
	})
	return pick
}

// Store keeps the Redeliverer's mark between runs and its claims on the
// GUIDs being redelivered (Redis in the worker, shared by every replica).
type Store interface {
	// Get returns "" when key is unset.
	Get(ctx context.Context, key string) (string, error)
	Set(ctx context.Context, key, value string) error
	// Claim sets key for ttl unless it is set; false when it was.
	Claim(ctx context.Context, key string, ttl time.Duration) (bool, error)
	Unclaim(ctx context.Context, key string) error
}

// RedeliverClaimTTL bounds a GUID's claim when its holder dies mid-request:
// a little over the request's own timeout.
const RedeliverClaimTTL = 2 * defaultTimeout

// DefaultRedeliverKey is where the Redeliverer keeps its mark by default.
const DefaultRedeliverKey = "queen:deliveries:checked"

// Redeliverer redelivers failed webhook deliveries. It remembers when its
// last complete run started and reads only deliveries since then (less
// Overlap, at most RedeliverWindow back), so a run lists a few pages, not
// three days' worth.
type Redeliverer struct {
	App     *App
	Store   Store
	Key     string        // default DefaultRedeliverKey
	Overlap time.Duration // default 1h: deliveries still in flight at the last run
}

// RedeliverReport says what a run did.
type RedeliverReport struct {
	Since       time.Time
	Listed      int
	Redelivered []int64
	InFlight    int // GUIDs another run was redelivering
}

// Run redelivers every GUID with no successful attempt. The mark moves to
// now only when every redelivery was accepted, so a failed run is redone.
func (r *Redeliverer) Run(ctx context.Context, now time.Time) (RedeliverReport, error) {
	key := r.Key
	if key == "" {
		key = DefaultRedeliverKey
	}
	overlap := r.Overlap
	if overlap <= 0 {
		overlap = time.Hour
	}
	since := now.Add(-RedeliverWindow)
	mark, err := r.Store.Get(ctx, key)
	if err != nil {
		return RedeliverReport{}, fmt.Errorf("githubapp: redeliver: read mark %s: %w", key, err)
	}
	if t, perr := time.Parse(time.RFC3339Nano, mark); perr == nil && t.Add(-overlap).After(since) {
		since = t.Add(-overlap)
	}
	rep := RedeliverReport{Since: since}
	ds, err := r.App.ListDeliveries(ctx, since)
	if err != nil {
		return rep, err
	}
	rep.Listed = len(ds)
	var errs []error
	for _, d := range ToRedeliver(ds, now) {
		// With GitHub slow, a second run once asked again for GUIDs whose
		// first request was still unanswered: 19 POSTs for 10 GUIDs.
		claim := key + ":guid:" + d.GUID
		ok, err := r.Store.Claim(ctx, claim, RedeliverClaimTTL)
		if err != nil {
			errs = append(errs, fmt.Errorf("githubapp: redeliver: claim %s: %w", d.GUID, err))
			break
		}
		if !ok {
			rep.InFlight++
			continue
		}
		err = r.App.Redeliver(ctx, d.ID)
		_ = r.Store.Unclaim(context.WithoutCancel(ctx), claim)
		if err != nil {
			errs = append(errs, err)
			if k := Classify(err); k == RateLimited || ctx.Err() != nil {
				break
			}
			continue
		}
		rep.Redelivered = append(rep.Redelivered, d.ID)
	}
	if len(errs) > 0 {
		return rep, errors.Join(errs...)
	}
	if err := r.Store.Set(ctx, key, now.UTC().Format(time.RFC3339Nano)); err != nil {
		return rep, fmt.Errorf("githubapp: redeliver: write mark %s: %w", key, err)
	}
	return rep, nil
}
