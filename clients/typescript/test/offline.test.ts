// The client's own behaviour against fake fetches, no server: what it sends
// again and when, how long it waits, and what it never lets into an error.
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { describe, it } from "node:test";
import { describeFailure } from "../src/errors.js";
import { QueenApiError, QueenClient, type ReconnectInfo, type RetryInfo, type ReviewWord, type Warning, type WatchEvent } from "../src/index.js";

const token = "0123456789abcdef";
const secret = "s3cr3t-token-0123456789";

/** Everything a caller could print or ship of e. */
function everythingOf(e: unknown): string {
  const err = e as Error;
  return [String(err), err.stack ?? "", JSON.stringify(err), inspect(err, { depth: Infinity, showHidden: true })].join("\n");
}

type Answer = Response | Error | ((url: string, init: RequestInit) => Response);

/** A fetch answering from a list in order (the last one repeated), recording each request. */
function fakeFetch(answers: Answer[]): { fetch: typeof fetch; urls: string[]; inits: RequestInit[] } {
  const urls: string[] = [];
  const inits: RequestInit[] = [];
  const f = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = String(input);
    urls.push(url);
    inits.push(init);
    const a = answers[Math.min(urls.length, answers.length) - 1];
    if (a instanceof Error) throw a;
    if (typeof a === "function") return a(url, init);
    return a!.clone();
  };
  return { fetch: f as typeof fetch, urls, inits };
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
const stream = (text: string, type = "text/event-stream") => new Response(text, { headers: { "Content-Type": type } });
const change = (id: string) =>
  `id: ${id}\nevent: change\ndata: ${JSON.stringify({ entry: { repo: "hive/t27", issue: 1 }, claim: null })}\n\n`;
/** undici's failure for a connection refused: a TypeError whose cause has the code. */
const refused = () => new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });

/** Runs a watch until until() holds (checked after each event and reconnection) or 10 s pass. */
async function watchUntil(
  q: QueenClient,
  o: Parameters<QueenClient["watch"]>[0],
  until: (w: { events: WatchEvent[]; reconnects: ReconnectInfo[]; connects: number }) => boolean,
) {
  const ctl = new AbortController();
  const w = { events: [] as WatchEvent[], reconnects: [] as ReconnectInfo[], connects: 0 };
  const limit = setTimeout(() => ctl.abort(), 10_000);
  try {
    for await (const ev of q.watch({
      ...o,
      signal: ctl.signal,
      onConnect: () => void w.connects++,
      onReconnect: (i) => {
        w.reconnects.push(i);
        if (until(w)) ctl.abort();
      },
    })) {
      w.events.push(ev);
      if (until(w)) ctl.abort();
    }
  } finally {
    clearTimeout(limit);
  }
  assert.ok(until(w), "not within 10 s: " + JSON.stringify(w));
  return w;
}

describe("baseUrl", () => {
  it("without an http(s) scheme is refused by the constructor in one line naming baseUrl, before any request", () => {
    for (const bad of ["127.0.0.1:8081", "localhost:8081", "queen.example.com", "//queen.example.com", "ftp://queen.example.com", "http://"]) {
      assert.throws(
        () => new QueenClient({ baseUrl: bad, token }),
        (e: unknown) =>
          e instanceof TypeError && e.message.startsWith("baseUrl: ") && !e.message.includes("\n") && e.message.includes("QUEEN_API_URL"),
        bad,
      );
    }
  });

  it("ending in /v1 or /v1/ reaches the same routes as the bare URL", async () => {
    for (const base of ["http://x", "http://x/", "http://x/v1", "http://x/v1/", "https://x/queen/v1"]) {
      const f = fakeFetch([json({ claims: [], next_cursor: "" })]);
      await new QueenClient({ baseUrl: base, token, fetch: f.fetch }).listClaims();
      const want = base.startsWith("https") ? "https://x/queen/v1/claims" : "http://x/v1/claims";
      assert.equal(f.urls[0]?.split("?")[0], want, base);
    }
  });
});

describe("a token fetch cannot send", () => {
  it("is refused by the constructor, without repeating it", () => {
    for (const bad of ["\n", "\r\nX", "\0", "\x7f", " ", "\t", "é", "\u2028"]) {
      assert.throws(
        () => new QueenClient({ baseUrl: "http://127.0.0.1:9", token: secret + bad }),
        (e: unknown) => e instanceof TypeError && e.message.startsWith("token: ") && !everythingOf(e).includes(secret),
        JSON.stringify(bad),
      );
    }
    new QueenClient({ baseUrl: "http://127.0.0.1:9", token: "A-Za-z0-9._~+/=" });
  });

  it("a header fetch refuses fails the call at once, naming no value, and nothing is sent", async () => {
    let sent = 0;
    const q = new QueenClient({
      baseUrl: "http://127.0.0.1:9",
      token,
      source: "queen\n" + secret,
      retry: { attempts: 3, baseDelayMs: 1 },
      fetch: (u, i) => (sent++, fetch(u, i)),
    });
    const err = await q.heldPaths("hive/t27").then(
      () => assert.fail("the call succeeded"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof TypeError, String(err));
    assert.equal((err as Error).message, "the request could not be built: TypeError");
    assert.ok(!everythingOf(err).includes(secret), everythingOf(err));
    assert.equal(sent, 0);
  });

  it("the watch throws it at once too, with no reconnection", async () => {
    const reasons: string[] = [];
    const q = new QueenClient({ baseUrl: "http://127.0.0.1:9", token, source: "queen\n" + secret });
    await assert.rejects(
      async () => {
        const signal = AbortSignal.timeout(3000); // a watch that retries ends here without an error
        for await (const _ of q.watch({ after: "1-0", signal, onReconnect: (i) => void reasons.push(i.reason) })) break;
      },
      (e: unknown) => e instanceof TypeError && !everythingOf(e).includes(secret),
    );
    assert.deepEqual(reasons, []);
  });

  it("describeFailure tells a failed connection by its code, and a TypeError thrown building the request only by name", () => {
    const header = new TypeError(`Headers.append: "Bearer ${secret}\n" is an invalid header value.`);
    assert.equal(describeFailure(header), "the request could not be built: TypeError");
    assert.equal(describeFailure(refused()), "fetch failed: ECONNREFUSED");
    const bun = Object.assign(new TypeError("ECONNREFUSED: Unable to connect"), { code: "ECONNREFUSED" });
    assert.equal(describeFailure(bun), "ECONNREFUSED: Unable to connect");
  });
});

describe("a 429 (the wrong-token throttle)", () => {
  const throttled = () => json({ error: "too many wrong tokens; wait" }, 429, { "Retry-After": "1" });

  it("is waited out (Retry-After, up to maxDelayMs) and sent again, even for a free without a version", async () => {
    const f = fakeFetch([throttled(), json({ outcome: "free" })]);
    const retries: RetryInfo[] = [];
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: f.fetch, retry: { maxDelayMs: 20 }, onRetry: (i) => retries.push(i) });
    assert.equal((await q.free("hive/t27", 1, { reason: "gone" })).outcome, "free");
    assert.equal(f.urls.length, 2);
    assert.deepEqual(retries.map((r) => [r.status, r.delayMs]), [[429, 20]]);
  });

  it("a free without a version is still not sent again after a 503", async () => {
    const f = fakeFetch([json({ error: "unavailable" }, 503, { "Retry-After": "0" }), json({ outcome: "free" })]);
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: f.fetch });
    await assert.rejects(q.free("hive/t27", 1, { reason: "gone" }), (e: unknown) => e instanceof QueenApiError && e.status === 503);
    assert.equal(f.urls.length, 1);
  });

  it("is waited out by watch, which then connects", async () => {
    const f = fakeFetch([throttled(), stream(change("2-0"))]);
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: f.fetch });
    const w = await watchUntil(q, { after: "1-0", maxDelayMs: 20 }, (w) => w.events.length === 1);
    assert.deepEqual(w.reconnects.map((r) => [r.status, r.delayMs]), [[429, 20]]);
    assert.equal(w.events[0]?.type === "change" && w.events[0].id, "2-0");
  });
});

describe("watch's backoff", () => {
  it("grows while streams end with no event, and starts over once one is delivered", async () => {
    // retry: 100 sets the base; each connection ends at once but the 4th, which sends a change.
    const empty = stream("retry: 100\n\n");
    const f = fakeFetch([empty, empty, empty, stream("retry: 100\n\n" + change("2-0")), empty]);
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: f.fetch });
    const w = await watchUntil(q, { after: "1-0" }, (w) => w.reconnects.length === 5);
    assert.deepEqual(w.reconnects.map((r) => r.attempt), [1, 2, 3, 1, 2]);
    const d = w.reconnects.map((r) => r.delayMs);
    assert.ok(d[2]! >= 200 && d[2]! <= 400, `the third wait is 200-400 ms: ${d}`);
    assert.equal(w.reconnects[3]?.after, "2-0");
  });

  it("an answer that is not an event stream (a proxy's page) is a failure backed off from, not a connection", async () => {
    const f = fakeFetch([new Response("<html>ok</html>", { headers: { "Content-Type": "text/html" } })]);
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: f.fetch });
    const w = await watchUntil(q, { after: "1-0", maxDelayMs: 10 }, (w) => w.reconnects.length === 3);
    assert.equal(w.connects, 0);
    assert.deepEqual(w.reconnects.map((r) => [r.attempt, r.status]), [[1, 200], [2, 200], [3, 200]]);
    assert.match(w.reconnects[0]?.reason ?? "", /"text\/html", not text\/event-stream/);
  });
});

describe("watch without after", () => {
  it("waits out a 503 and no answer at its first GET /v1/audit, then starts after the newest entry", async () => {
    const f = fakeFetch([
      json({ error: "the claims ledger is unavailable; retry" }, 503, { "Retry-After": "0" }),
      refused(),
      json({ entries: [{ id: "7-0" }], more: false }),
      stream(change("8-0")),
    ]);
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: f.fetch });
    const w = await watchUntil(q, { maxDelayMs: 10 }, (w) => w.events.length === 1);
    assert.deepEqual(w.reconnects.map((r) => [r.attempt, r.status, r.after]), [[1, 503, undefined], [2, 0, undefined]]);
    assert.match(w.reconnects[0]?.reason ?? "", /^GET \/v1\/audit\?limit=1: 503/);
    assert.match(w.reconnects[1]?.reason ?? "", /ECONNREFUSED/);
    assert.equal(new Headers(f.inits[3]?.headers).get("Last-Event-ID"), "7-0");
    assert.deepEqual(f.urls.map((u) => new URL(u).pathname), ["/v1/audit", "/v1/audit", "/v1/audit", "/v1/events"]);
  });

  it("throws a 401 at its first GET /v1/audit", async () => {
    const f = fakeFetch([json({ error: "missing or wrong bearer token" }, 401)]);
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: f.fetch });
    await assert.rejects(
      async () => {
        for await (const _ of q.watch({ signal: AbortSignal.timeout(3000) })) break;
      },
      (e: unknown) => e instanceof QueenApiError && e.status === 401,
    );
    assert.equal(f.urls.length, 1);
  });
});

describe("repo", () => {
  it('refuses "." and ".." as owner or name before any request, naming repo', () => {
    const q = new QueenClient({ baseUrl: "http://x", token, fetch: fakeFetch([json({})]).fetch });
    for (const repo of ["hive/..", "hive/.", "../t27", "./t27"]) {
      assert.throws(() => q.heldPaths(repo), (e: unknown) => e instanceof TypeError && e.message.startsWith("repo: "), repo);
    }
    q.heldPaths("hive/.t27");
  });
});

describe("review_state words", () => {
  it("types the Queen's words and passes a write's warnings through", async () => {
    const words: ReviewWord[] = ["accept", "sendBack", "escalate", "wait", "failed", "cancelled", "empty", "stale-contract", "obsolete"];
    // @ts-expect-error a typo of accept is not one of the words
    const typo: ReviewWord = "accepted";
    const warning: Warning = { field: "review_state", message: `review_state: "${typo}" is not one of the Queen's words`, known: words };
    const answer = { repo: "hive/t27", issue: 6, outcome: "created", warnings: [warning] };
    const { fetch } = fakeFetch([new Response(JSON.stringify(answer), { status: 200, headers: { "Content-Type": "application/json" } })]);
    const q = new QueenClient({ baseUrl: "http://127.0.0.1:9", token, fetch });
    const got = await q.upsertDispatch("hive/t27", 6, { review_state: "accepted" });
    assert.deepEqual(got.warnings, [warning]);
  });
});
