package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-app/queen-app/internal/ghevents"
	"github.com/queen-app/queen-app/internal/tasks"
)

// Plan is what one run sends: Rounds rounds, each posting Deliveries
// deliveries to every target in turn from Clients clients at once. The
// targets alternate within each round, so a disturbance of the shared
// machine falls on all of them alike.
type Plan struct {
	Clients    int      `json:"clients"`
	Rounds     int      `json:"rounds"`
	Deliveries int      `json:"deliveries"`
	Targets    []Target `json:"targets"`
}

// Target is one receiver and the delivery it is sent.
type Target struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Event    string `json:"event"`     // X-GitHub-Event
	BodyFile string `json:"body_file"` // the payload, sent as it is
	// IDPrefix, when set, makes every X-GitHub-Delivery unique
	// (IDPrefix-<round>-<n>); without it every delivery is "loadgen".
	IDPrefix string `json:"id_prefix,omitempty"`
	Expect   int    `json:"expect"` // the status every answer must have; 0 is 202
}

// Result is the median over the rounds of each target, in plan order.
type Result struct {
	Clients int            `json:"clients"`
	Targets []TargetResult `json:"targets"`
}

// TargetResult is one target's figures.
type TargetResult struct {
	Name   string  `json:"name"`
	PerSec float64 `json:"per_sec"` // median deliveries per second
	P99us  float64 `json:"p99_us"`  // median p99 latency
	Rounds []Round `json:"rounds"`
}

// Round is one round's figures.
type Round struct {
	PerSec float64 `json:"per_sec"`
	P99us  float64 `json:"p99_us"`
}

// Check reports the first field of p that cannot be run, by its JSON name.
func (p Plan) Check() error {
	switch {
	case p.Clients < 1:
		return fmt.Errorf("plan: clients %d: want at least 1", p.Clients)
	case p.Rounds < 1:
		return fmt.Errorf("plan: rounds %d: want at least 1", p.Rounds)
	case p.Deliveries < 1:
		return fmt.Errorf("plan: deliveries %d: want at least 1", p.Deliveries)
	case len(p.Targets) == 0:
		return errors.New("plan: targets: none")
	}
	for i, t := range p.Targets {
		switch {
		case t.Name == "":
			return fmt.Errorf("plan: targets[%d].name: empty", i)
		case t.URL == "":
			return fmt.Errorf("plan: targets[%d].url: empty", i)
		case t.Event == "":
			return fmt.Errorf("plan: targets[%d].event: empty", i)
		case t.BodyFile == "":
			return fmt.Errorf("plan: targets[%d].body_file: empty", i)
		case t.IDPrefix != "" && !tasks.ValidDelivery(deliveryID(t.IDPrefix, p.Rounds, p.Deliveries)):
			return fmt.Errorf("plan: targets[%d].id_prefix %q: not a delivery id (letters, digits, '.', '_', '-'; at most 128 with its suffix)", i, t.IDPrefix)
		}
	}
	return nil
}

// deliveryID is the X-GitHub-Delivery of delivery n of round r under prefix.
func deliveryID(prefix string, r, n int) string {
	return prefix + "-" + strconv.Itoa(r) + "-" + strconv.Itoa(n)
}

// target is a Target ready to send.
type target struct {
	Target
	body []byte
	sig  string
}

// Run sends p, each delivery signed with secret as GitHub signs it.
func Run(ctx context.Context, p Plan, secret []byte) (Result, error) {
	if err := p.Check(); err != nil {
		return Result{}, err
	}
	if len(secret) == 0 {
		return Result{}, errors.New("no webhook secret to sign with")
	}
	ts := make([]target, len(p.Targets))
	for i, t := range p.Targets {
		body, err := os.ReadFile(t.BodyFile)
		if err != nil {
			return Result{}, fmt.Errorf("plan: targets[%d].body_file: %w", i, err)
		}
		if t.Expect == 0 {
			t.Expect = http.StatusAccepted
		}
		ts[i] = target{Target: t, body: body, sig: ghevents.Sign(secret, body)}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: p.Clients, MaxConnsPerHost: p.Clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	res := Result{Clients: p.Clients, Targets: make([]TargetResult, len(ts))}
	for round := range p.Rounds {
		for i, t := range ts {
			r, err := deliver(ctx, c, t, round, p.Clients, p.Deliveries)
			if err != nil {
				return Result{}, fmt.Errorf("target %s, round %d: %w", t.Name, round+1, err)
			}
			res.Targets[i].Rounds = append(res.Targets[i].Rounds, r)
		}
	}
	for i := range res.Targets {
		t := &res.Targets[i]
		t.Name = ts[i].Name
		t.PerSec = median(t.Rounds, func(r Round) float64 { return r.PerSec })
		t.P99us = median(t.Rounds, func(r Round) float64 { return r.P99us })
	}
	return res, nil
}

// deliver posts n deliveries of t from clients goroutines.
func deliver(ctx context.Context, c *http.Client, t target, round, clients, n int) (Round, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var once sync.Once
	var failure error
	fail := func(err error) { once.Do(func() { failure = err }) }
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				id := "loadgen"
				if t.IDPrefix != "" {
					id = deliveryID(t.IDPrefix, round, i)
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(t.body))
				if err != nil {
					fail(err)
					cancel()
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(ghevents.EventHeader, t.Event)
				req.Header.Set(ghevents.DeliveryHeader, id)
				req.Header.Set(ghevents.SignatureHeader, t.sig)
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					fail(err)
					cancel()
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if resp.StatusCode != t.Expect {
					fail(fmt.Errorf("delivery %s answered %d, want %d", id, resp.StatusCode, t.Expect))
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failure != nil {
		return Round{}, failure
	}
	if err := ctx.Err(); err != nil {
		return Round{}, err
	}
	slices.Sort(lat)
	return Round{
		PerSec: float64(n) / elapsed.Seconds(),
		P99us:  float64(lat[n*99/100].Nanoseconds()) / 1e3,
	}, nil
}

// median of f over rs; the rounds alternate with the other targets', and
// a median keeps one round disturbed by the rest of the machine from
// moving the figure.
func median(rs []Round, f func(Round) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// readPlan reads a Plan from a JSON file; unknown fields are refused.
func readPlan(path string) (Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, p.Check()
}
