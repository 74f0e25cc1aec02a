package main

import (
	"slices"
	"strings"
)

// figures is the registry: one row per figure `make bench` measures. A
// figure names its package, its benchmark (Bench, with Sub for a
// sub-benchmark), the -benchtime, the b.ReportMetric unit it reads, its
// baseline (a number with its source, or another figure of the same run)
// and its target. Benchmarks of one package, top-level name and benchtime
// run once for all their figures. A benchmark that does not exist (yet) is
// reported as "benchmark not found".
var figures = slices.Concat(ingest(), webhookToFree(), coalesce(), hostile(), watch(), []Figure{
	// The claims API's guard: a wrong token from a new address, its table
	// full (10,000 addresses) beside empty.
	{Section: guardSection, Name: "a wrong token from a new address, the guard's table full", Pkg: "./internal/api/", Bench: "BenchmarkAuthGuardRefuse", Sub: "full=true",
		Benchtime: "200000x", Metric: "ns/op", Baseline: Measured("BenchmarkAuthGuardRefuse", "full=false", "ns/op")},
	{Section: guardSection, Name: "the same, the table empty (baseline)", Pkg: "./internal/api/", Bench: "BenchmarkAuthGuardRefuse", Sub: "full=false",
		Benchtime: "200000x", Metric: "ns/op"},

	// Logs: every line of every binary passes the secret scrubber.
	{Section: logSection, Name: "the webhook's log line, scrubbed of three secrets", Pkg: "./internal/redact/", Bench: "BenchmarkLogLine", Sub: "scrubbed",
		Benchtime: "200000x", Metric: "ns/op", Baseline: Measured("BenchmarkLogLine", "plain", "ns/op")},
	{Section: logSection, Name: "the same line unscrubbed (baseline)", Pkg: "./internal/redact/", Bench: "BenchmarkLogLine", Sub: "plain",
		Benchtime: "200000x", Metric: "ns/op"},

	// Issue 11: burst batching (internal/workerserver).
	{Section: issue11, Name: "GitHub requests of a burst of 1,000 closes on 1,000 branches", Pkg: "./internal/workerserver/", Bench: "BenchmarkBurst",
		Benchtime: "1x", Metric: "github-requests", Target: AtMost(12)},
	{Section: issue11, Name: "a lone close during the burst: freed past the delay (ms)", Pkg: "./internal/workerserver/", Bench: "BenchmarkBurst",
		Benchtime: "1x", Metric: "lone-free-over-delay-ms", Target: AtMost(300)},

	// Issue 11: export drain and cost as work grows.
	{Section: issue11, Name: "export drain: 213 accepted heads after an outage", Pkg: "./internal/worker/", Bench: "BenchmarkExportDrain",
		Benchtime: "1x", Metric: "drain-s", Target: AtMost(240),
		Baseline: Fixed(426, "7.1 min, issue 11: a token wait and a PR creation paced 1 s apart per branch")},
	{Section: issue11, Name: "export drain: least gap between two PR creations", Pkg: "./internal/worker/", Bench: "BenchmarkExportDrain",
		Benchtime: "1x", Metric: "pr-gap-min-ms", Target: AtLeast(1000)},
	{Section: issue11, Name: "export drain: floor of the two-turn pacing it replaces", Pkg: "./internal/worker/", Bench: "BenchmarkExportDrain",
		Benchtime: "1x", Metric: "paced-floor-s"},
	{Section: issue11, Name: "sweep: GitHub requests per 1,000 accepted rows (10,000 rows)", Pkg: "./internal/worker/", Bench: "BenchmarkSweepCost",
		Benchtime: "1x", Metric: "github-req-per-1000-rows", Target: AtMost(10.2),
		Baseline: Fixed(10.2, "issue 11")},
	{Section: issue11, Name: "worker peak RSS, 10,000 queued tasks worked off", Pkg: "./e2e/", Bench: "BenchmarkWorkerRSS",
		Benchtime: "1x", Metric: "queue-hwm-MiB", Target: AtMost(64),
		Baseline: Fixed(21.7, "issue 11")},
	{Section: issue11, Name: "worker peak RSS, then a 10,000-row sweep", Pkg: "./e2e/", Bench: "BenchmarkWorkerRSS",
		Benchtime: "1x", Metric: "sweep-hwm-MiB", Target: AtMost(64),
		Baseline: Fixed(48, "issue 11")},

	// The rules (internal/rules): one pass of the exhaustive grid per op;
	// a million calls for the per-call benchmarks. Baselines walk the same
	// inputs without calling the card, in the same run.
	{Section: rulesSection, Name: "ClaimOf on every grid row", Pkg: "./internal/rules/", Bench: "BenchmarkGrid",
		Benchtime: "1x", Metric: "ns/op", Baseline: Measured("BenchmarkGridBaseline", "", "ns/op")},
	{Section: rulesSection, Name: "the grid walk without ClaimOf", Pkg: "./internal/rules/", Bench: "BenchmarkGridBaseline",
		Benchtime: "1x", Metric: "ns/op"},
	{Section: rulesSection, Name: "ClaimOf + the reference lookup (what TestClaimGrid does)", Pkg: "./internal/rules/", Bench: "BenchmarkGridCheck",
		Benchtime: "1x", Metric: "ns/op", Baseline: Measured("BenchmarkGrid", "", "ns/op")},
	{Section: rulesSection, Name: "one ClaimOf call", Pkg: "./internal/rules/", Bench: "BenchmarkClaimOf",
		Benchtime: "1000000x", Metric: "ns/op", Baseline: Measured("BenchmarkClaimOfBaseline", "", "ns/op")},
	{Section: rulesSection, Name: "the same loop without ClaimOf", Pkg: "./internal/rules/", Bench: "BenchmarkClaimOfBaseline",
		Benchtime: "1000000x", Metric: "ns/op"},
	{Section: rulesSection, Name: "one review_state word through the ten-word table", Pkg: "./internal/rules/", Bench: "BenchmarkVerdictOf",
		Benchtime: "1000000x", Metric: "ns/op"},

	// The claims ledger against a private redis-server, beside a raw SET.
	{Section: ledgerSection, Name: "Ledger.Upsert (a real write)", Pkg: "./internal/ledger/", Bench: "BenchmarkLedger", Sub: "Upsert",
		Benchtime: "3000x", Metric: "ops/s", Baseline: Measured("BenchmarkLedger", "BaselineSET", "ops/s")},
	{Section: ledgerSection, Name: "Ledger.Get and the claim view", Pkg: "./internal/ledger/", Bench: "BenchmarkLedger", Sub: "GetView",
		Benchtime: "3000x", Metric: "ops/s", Baseline: Measured("BenchmarkLedger", "BaselineSET", "ops/s")},
	{Section: ledgerSection, Name: "one SET of a row's JSON (baseline)", Pkg: "./internal/ledger/", Bench: "BenchmarkLedger", Sub: "BaselineSET",
		Benchtime: "3000x", Metric: "ops/s"},
})

// ingest is issue 11's webhook ingest (internal/ghevents): at each client
// count the accepted and the ignored throughput and the accepted p99, each
// a ratio to the bare HMAC handler of the same run, and beside them the
// floors: the bare handler plus only the work no receiver can skip.
func ingest() []Figure {
	var figs []Figure
	for _, m := range []struct {
		what, metric, of string
		target           Target
	}{
		{"ingest accepted", "accepted-x", "x of baseline", AtLeast(0.6)},
		{"ingest ignored", "ignored-x", "x of baseline", AtLeast(0.8)},
		{"ingest accepted p99", "accepted-p99-x", "x of baseline", AtMost(2)},
		{"floor of any accepting receiver (bare + JSON validation + one Redis PING)", "accepted-floor-x", "x of baseline", Target{}},
		{"floor of any ignoring receiver (bare + JSON validation)", "ignored-floor-x", "x of baseline", Target{}},
		{"floor of any asynq receiver (bare + JSON validation + the webhook's own enqueue)", "enqueue-floor-x", "x of baseline", Target{}},
		{"ingest accepted storing with one XADD instead of asynq's script", "appended-x", "x of baseline", Target{}},
		{"ingest accepted", "accepted-of-floor", "x of its floor", Target{}},
		{"ingest accepted", "accepted-of-enqueue-floor", "x of the enqueue floor", Target{}},
		{"ingest ignored", "ignored-of-floor", "x of its floor", Target{}},
	} {
		for _, clients := range []string{"1 client", "8 clients", "64 clients"} {
			n, _, _ := strings.Cut(clients, " ")
			figs = append(figs, Figure{Section: issue11, Name: m.what + ", " + clients + " (" + m.of + ")",
				Pkg: "./internal/ghevents/", Bench: "BenchmarkIngest", Sub: "clients=" + n,
				Benchtime: "1x", Metric: m.metric, Target: m.target})
		}
	}
	return figs
}

// webhookToFree is issue 11's webhook-to-free latency (internal/workerserver)
// at each burst size and delay: the p99 past the delay, the no-op asynq
// handler's p99 as the queue's baseline, and Redis's load beside its idle.
func webhookToFree() []Figure {
	var figs []Figure
	for _, delay := range []string{"0s", "5s"} {
		for _, n := range []string{"100", "1000"} {
			sub := "n=" + n + "/delay=" + delay
			name := "webhook to free, " + n + " deliveries, delay " + delay + ": "
			f := Figure{Section: issue11, Pkg: "./internal/workerserver/", Bench: "BenchmarkWebhookToFree", Sub: sub, Benchtime: "1x"}
			p99, noop, load := f, f, f
			p99.Name, p99.Metric, p99.Target = name+"p99 past the delay", "p99-over-delay-ms", AtMost(300)
			noop.Name, noop.Metric = name+"no-op asynq handler p99 (queue baseline)", "noop-p99-ms"
			load.Name, load.Metric = name+"Redis commands/s under load (idle beside it)", "redis-cmd/s-load"
			load.Baseline = Measured("BenchmarkWebhookToFree", sub, "redis-cmd/s-idle")
			figs = append(figs, p99, noop, load)
		}
	}
	return figs
}

// coalesce is the Redis client's coalescing (internal/redisconn) at each
// number of callers at once, beside the same commands unmarked.
func coalesce() []Figure {
	var figs []Figure
	for _, g := range []string{"1", "2", "8", "32"} {
		sub := "goroutines=" + g
		figs = append(figs, Figure{Section: redisSection, Name: "asynq's schedule script from " + g + " at once, under WithCoalesce",
			Pkg: "./internal/redisconn/", Bench: "BenchmarkCoalesce", Sub: sub, Benchtime: "1x", Metric: "coalesced/s",
			Baseline: Measured("BenchmarkCoalesce", sub, "plain/s")})
	}
	return figs
}

// hostile is issue 22's webhook under hostile input (e2e, the built
// binary with the chart's GOMEMLIMIT): a burst of 256 signed deliveries in
// flight at once, and what held forgeries pin, against the chart's 256 MiB.
func hostile() []Figure {
	f := Figure{Section: issue22, Pkg: "./e2e/", Bench: "BenchmarkWebhookHostile", Benchtime: "1x"}
	idle := Measured("BenchmarkWebhookHostile", "", "idle-rss-MiB")
	fig := func(name, metric string, base Baseline, target Target) Figure {
		g := f
		g.Name, g.Metric, g.Baseline, g.Target = name, metric, base, target
		return g
	}
	return []Figure{
		fig("signed deliveries refused of 256 in flight at once from one address", "burst-refused",
			Fixed(224, "issue 22: all but 32, the old cap in flight"), AtMost(0)),
		fig("those 256 answered, in flight at once (ms)", "burst-ms",
			Measured("BenchmarkWebhookHostile", "", "serial-ms"), Target{}),
		fig("the same 256 one after another (ms, baseline)", "serial-ms", Baseline{}, Target{}),
		fig("webhook RSS with 32 forgeries held (headers claiming 25 MiB, one byte)", "forged32-rss-MiB",
			Fixed(837, "issue 22, 837 MB: the buffer sized to the claim"), AtMost(64)),
		fig("webhook RSS, every place held, all body bytes in 64 KiB bodies", "flood-many-rss-MiB", idle, AtMost(192)),
		fig("webhook RSS, a 25 MiB body per address, the rest first reads", "flood-large-rss-MiB", idle, AtMost(192)),
		fig("webhook peak RSS of the run (the chart's limit 256 MiB)", "peak-rss-MiB", idle, AtMost(192)),
		fig("webhook RSS idle (baseline)", "idle-rss-MiB", Baseline{}, Target{}),
	}
}

// watch is issue 21's watch stream (internal/api): how soon a free reaches
// the connected watchers after the ledger write begins, beside a plain GET
// of the claim view in the same run, and what watchers resuming with
// Last-Event-ID lose or get twice.
func watch() []Figure {
	f := Figure{Section: issue21, Pkg: "./internal/api/", Bench: "BenchmarkWatch", Benchtime: "1x"}
	fig := func(name, sub, metric string, base Baseline, target Target) Figure {
		g := f
		g.Name, g.Sub, g.Metric, g.Baseline, g.Target = name, sub, metric, base, target
		return g
	}
	return []Figure{
		fig("a free reaches each of 100 connected watchers, p99 after the write began (ms)", "watchers=100", "free-p99-ms",
			Measured("BenchmarkWatch", "watchers=100", "get-p99-ms"), AtMost(100)),
		fig("a GET of the claim view with 100 watchers connected, p99 (ms, baseline)", "watchers=100", "get-p99-ms", Baseline{}, Target{}),
		fig("a free reaches 1 connected watcher, p99 (ms)", "watchers=1", "free-p99-ms",
			Measured("BenchmarkWatch", "watchers=1", "get-p99-ms"), AtMost(100)),
		fig("a GET of the claim view with 1 watcher connected, p99 (ms, baseline)", "watchers=1", "get-p99-ms", Baseline{}, Target{}),
		fig("changes lost by watchers resuming with Last-Event-ID (100 watchers)", "watchers=100", "lost", Baseline{}, AtMost(0)),
		fig("changes given twice to watchers resuming with Last-Event-ID (100 watchers)", "watchers=100", "duplicated", Baseline{}, AtMost(0)),
		fig("resumptions with Last-Event-ID during those frees (100 watchers)", "watchers=100", "resumes", Baseline{}, Target{}),
	}
}

// Sections, in the order the document shows them.
const (
	issue11       = "Issue 11: speed at the limits"
	issue22       = "Issue 22: hostile input at the webhook"
	issue21       = "Issue 21: the watch stream (GET /v1/events)"
	rulesSection  = "The rules (internal/rules)"
	ledgerSection = "The claims ledger (internal/ledger)"
	redisSection  = "The Redis client (internal/redisconn)"
	logSection    = "Logs (internal/redact)"
	guardSection  = "The claims API's guard (internal/api)"
)

var sections = []string{issue11, issue22, issue21, redisSection, logSection, guardSection, rulesSection, ledgerSection}

// notes say how a section's figures are measured, under its heading.
var notes = map[string]string{
	issue11: `The ingest figures are medians of eleven rounds of 1,000 deliveries, each beside its
baselines, sent by tools/loadgen from a process of its own as GitHub's deliveries are; the floors
add to the bare handler only what no receiver can skip (a validation pass over the JSON; one Redis
round trip before an accepted delivery's 202), and the enqueue floor makes that round trip the
webhook's own write, asynq's schedule script of a claim:reevaluate task, without reading the
payload. "Storing with one XADD" is the real handler with its enqueue replaced by one native
append to a stream: what a receiver that kept asynq's script off the delivery's path would reach. The webhook-to-free figures are the median p99 of
three bursts on fresh rows; with a delay each burst starts just past a whole second, the worst
phase of asynq's whole-second scoring of delayed tasks.

The export drain publishes 213 accepted heads (real git remote over HTTP, the export
stand-in, the local GitHub) once an export outage ends, with the deployed pacing: PR creations
at least 1 s apart per installation, booked in Redis; git pushes are not paced. pr-gap-min-ms
is the least gap between two PR creations as the local GitHub received them. The sweep cost
counts every request the local GitHub gets during one claim:sweep of 10,000 accepted rows (a
running worker already holds its installation token). The worker RSS runs the built worker
against a private Redis with 10,000 queued claim:reevaluate tasks, then one claim:sweep of the
10,000 rows, and reads VmHWM from /proc/<pid>/status after each.`,
	issue22: `The built webhook with the chart's GOMEMLIMIT (160MiB), a private Redis and the local
GitHub. 256 signed pull_request deliveries from one address, first one after another, then all in
flight at once: each sent its headers and first byte, then the rest together. Forgeries claim
25 MiB with a forged signature; the flood takes every place and body byte ghevents.Limits gives
(512 places and 32 MiB per address, 1024 and 64 MiB in all: two addresses), first spread as 64 KiB
bodies, then one body grown to 25 MiB per address beside as many first reads as fit. A held
forgery is dropped after 3 s, so each flood is measured within that. RSS is VmRSS of
/proc/<pid>/status while held, the peak its VmHWM at the end.`,
	issue21: `The claims API in the test process (httptest) over a private redis-server, 100 (or 1)
steady watchers of GET /v1/events plus 10 that drop their connection every 37 to 46 changes and
resume with Last-Event-ID. 200 frees of accepted rows written one after another (Ledger.Free, 5 ms
apart); a free's latency runs from just before its write began to the end of its event at each
steady watcher; after each free a plain GET of the claim view is timed as the baseline. Lost and
duplicated compare every resuming watcher's changes with the audit's frees.`,
	guardSection: `The guard's table of refused addresses (internal/api/authguard.go) in the test
process: one wrong token from an address it does not hold yet, with the table at its cap of
10,000 (the least recently refused goes) and with it empty. It once scanned the whole table under
its lock at the cap: 376 µs a refusal against 208 ns empty.`,
	rulesSection: `One op of the grid benchmarks is one pass over the exhaustive grid of TestClaimGrid
(4,423,680 rows); the baselines walk the same inputs without calling the card.`,
	redisSection: `asynq's schedule script (the write of an accepted delivery) on one client of a private
redis-server, 5,000 calls per round from that many goroutines at once; the baseline is the same
calls without the mark, alternating which goes first, medians of seven rounds.`,
	logSection: `A JSON line of the webhook's nine attributes to io.Discard, through redact.Handler with
the webhook's secrets (current, previous, the API token) and without it. Before the scrubber
skipped what cannot match, the scrubbed line took 20.5 µs against 1 µs.`,
	ledgerSection: `One writer and one reader against a private redis-server (no AOF), beside a raw SET of
a stored row's JSON by the same client in the same run.`,
}
