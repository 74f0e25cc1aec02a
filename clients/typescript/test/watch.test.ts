// watch() against GET /v1/events of the built webhook: every change once and
// in order, resume after an id, a reset, the refusals, and a watch that
// goes on across a webhook killed and started again with nothing lost or
// repeated. A second webhook on the same Redis writes while the first is
// down, as another replica would.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type ChangeEvent, QueenApiError, QueenClient, type ReconnectInfo, type WatchEvent } from "../src/index.js";
import { Redis, Webhook, eventually, token } from "./harness.js";

let redis: Redis;
let hookA: Webhook;
let hookB: Webhook;
let qA: QueenClient;
let qB: QueenClient;

before(async () => {
  redis = await Redis.start();
  hookA = await Webhook.start(redis);
  hookB = await Webhook.start(redis);
  qA = new QueenClient({ baseUrl: hookA.url, token });
  qB = new QueenClient({ baseUrl: hookB.url, token });
});

after(async () => {
  await hookA?.stop();
  await hookB?.stop();
  await redis?.stop();
});

/** Consumes a watch in the background until stopped. */
function collect(
  q: QueenClient,
  o: Parameters<QueenClient["watch"]>[0] = {},
): { events: WatchEvent[]; stop: () => Promise<void>; done: Promise<void>; connects: number; reconnects: ReconnectInfo[] } {
  const ctl = new AbortController();
  const c = {
    events: [] as WatchEvent[],
    connects: 0,
    reconnects: [] as ReconnectInfo[],
    done: Promise.resolve(),
    stop: async () => {
      ctl.abort();
      await c.done;
    },
  };
  c.done = (async () => {
    for await (const ev of q.watch({
      ...o,
      signal: ctl.signal,
      onConnect: () => void c.connects++,
      onReconnect: (i) => void c.reconnects.push(i),
    })) {
      c.events.push(ev);
    }
  })();
  return c;
}

const changes = (evs: WatchEvent[]) => evs.filter((e): e is ChangeEvent => e.type === "change");

/** The audit ids of a repository after an id, oldest first. */
async function auditIds(repo: string, afterId: string | undefined): Promise<string[]> {
  const { entries } = await qB.audit({ repo, limit: 1000 });
  const ids = entries.map((e) => e.id ?? "");
  return afterId === undefined ? ids : ids.slice(ids.indexOf(afterId) + 1);
}

describe("watch", () => {
  it("yields every change of the watched repository once, in audit order, with its claim view", async () => {
    const w = collect(qA, { repo: "hive/w1" });
    await eventually("the watch connects", () => w.connects === 1);
    await qA.upsertDispatch("hive/w1", 1, { started: true, owned_paths: ["a.go"] });
    await qA.upsertDispatch("hive/other", 1, { started: true });
    await qA.free("hive/w1", 1, { reason: "gone" });
    await qA.keep("hive/w1", 1, { reason: "back" });
    await qA.upsertDispatch("hive/w1", 2, { started: true });
    await qA.deleteDispatch("hive/w1", 2, { reason: "duplicate" });
    await eventually("5 changes arrive", () => w.events.length >= 5);
    await w.stop();
    const evs = changes(w.events);
    assert.equal(w.events.length, 5, "no other event: " + JSON.stringify(w.events.map((e) => e.type)));
    assert.deepEqual(
      evs.map((e) => e.id),
      await auditIds("hive/w1", undefined),
    );
    assert.deepEqual(
      evs.map((e) => [e.entry.repo, e.entry.issue, e.entry.action, e.entry.version]),
      [
        ["hive/w1", 1, "upsert", 1],
        ["hive/w1", 1, "free", 2],
        ["hive/w1", 1, "keep", 3],
        ["hive/w1", 2, "upsert", 1],
        ["hive/w1", 2, "delete", 2],
      ],
    );
    for (const e of evs.slice(0, 3)) {
      assert.equal(e.claim?.issue, 1);
      assert.ok((e.claim?.version ?? 0) >= e.entry.version, "the view is read when sent: this version or later");
    }
    assert.equal(evs[4]?.claim, null, "a deleted row's view is null");
  });

  it("resumes after a given id with exactly the later changes", async () => {
    const ids = await auditIds("hive/w1", undefined);
    const w = collect(qA, { repo: "hive/w1", after: ids[1] });
    await eventually("3 changes arrive", () => w.events.length >= 3);
    await w.stop();
    assert.deepEqual(changes(w.events).map((e) => e.id), ids.slice(2));
  });

  it("breaking out of the loop ends the watch", async () => {
    const ids = await auditIds("hive/w1", undefined);
    const got: string[] = [];
    for await (const ev of qA.watch({ repo: "hive/w1", after: ids[0] })) {
      if (ev.type === "change") got.push(ev.id);
      if (got.length === 2) break;
    }
    assert.deepEqual(got, ids.slice(1, 3));
  });

  it("says reset when the resume id is older than the audit stream holds, then follows live changes", async () => {
    const held = (await qB.audit({ limit: 1000 })).entries;
    const oldest = held[0]?.id;
    const newest = held.at(-1)?.id;
    // 300 ms of silence reconnects: after the reset's id, not reset again.
    const w = collect(qA, { repo: "hive/w3", after: "1-0", idleTimeoutMs: 300 });
    await eventually("the reset arrives and the silent stream reconnects", () => w.events.length >= 1 && w.reconnects.length >= 1);
    assert.equal(w.reconnects[0]?.after, newest);
    await qA.upsertDispatch("hive/w3", 1, { started: true });
    await eventually("the change arrives", () => w.events.length >= 2);
    await w.stop();
    // The reset's id is the newest entry: a reconnect resumes there.
    assert.deepEqual(w.events[0], {
      type: "reset",
      id: newest,
      after: "1-0",
      oldest,
      reason: "the audit stream no longer holds entries after this id; re-read GET /v1/claims",
    });
    assert.equal(w.events[1]?.type, "change");
    assert.equal(w.events.length, 2);
  });

  it("throws a 400 naming Last-Event-ID for a malformed resume id, and a 401 for a wrong token, without the token", async () => {
    await assert.rejects(
      async () => {
        for await (const _ of qA.watch({ after: "bogus" })) break;
      },
      (e: unknown) => e instanceof QueenApiError && e.status === 400 && e.field === "Last-Event-ID",
    );
    const wrong = "wrong-" + token;
    const bad = new QueenClient({ baseUrl: hookA.url, token: wrong });
    await assert.rejects(
      async () => {
        for await (const _ of bad.watch({ after: "1-0" })) break;
      },
      (e: unknown) =>
        e instanceof QueenApiError && e.status === 401 && !JSON.stringify(e).includes(wrong) && !String(e).includes(wrong),
    );
  });

  it("drops a connection silent past idleTimeoutMs and resumes it, losing nothing", async () => {
    // The server's heartbeat comes every 15 s; 300 ms of silence stands for a dead connection.
    await qA.upsertDispatch("hive/idle-before", 1, { started: true }); // the watch starts after an entry
    const w = collect(qA, { repo: "hive/idle", idleTimeoutMs: 300 });
    await eventually("the silent connection is dropped", () => w.reconnects.length >= 1);
    assert.match(w.reconnects[0]?.reason ?? "", /no event or heartbeat for 300 ms/);
    await qA.upsertDispatch("hive/idle", 1, { started: true });
    await eventually("the change arrives", () => w.events.length >= 1);
    await new Promise((r) => setTimeout(r, 800)); // more reconnections: a duplicate would come now
    await w.stop();
    assert.ok(w.connects >= 2);
    assert.deepEqual(changes(w.events).map((e) => e.id), await auditIds("hive/idle", undefined));
  });

  it("does not count the caller's time with an event as the server's silence", async () => {
    const ctl = new AbortController();
    const reconnects: ReconnectInfo[] = [];
    let connected = false;
    const got: string[] = [];
    let reconnectsWhileHandling = -1;
    const done = (async () => {
      for await (const ev of qA.watch({
        repo: "hive/slow",
        idleTimeoutMs: 1000,
        signal: ctl.signal,
        onConnect: () => void (connected = true),
        onReconnect: (i) => void reconnects.push(i),
      })) {
        if (ev.type === "change") got.push(ev.id);
        await new Promise((r) => setTimeout(r, 1500)); // longer than idleTimeoutMs
        if (got.length === 2) reconnectsWhileHandling = reconnects.length;
      }
    })();
    await eventually("the watch connects", () => connected);
    for (const n of [1, 2]) await qA.upsertDispatch("hive/slow", n, { started: true });
    await eventually("both changes are handled", () => reconnectsWhileHandling >= 0, 30_000);
    ctl.abort();
    await done;
    assert.equal(reconnectsWhileHandling, 0, "reconnected while the caller handled events: " + JSON.stringify(reconnects));
    assert.deepEqual(got, await auditIds("hive/slow", undefined));
  });

  it("past the watcher cap waits out the 503 as long as Retry-After says, then delivers what it was turned away from", async () => {
    const hookC = await Webhook.start(redis, { QUEEN_API_MAX_WATCHERS: "1" });
    try {
      const qC = new QueenClient({ baseUrl: hookC.url, token });
      const first = collect(qC, { repo: "hive/cap" });
      await eventually("the first watch connects", () => first.connects === 1);
      const second = collect(qC, { repo: "hive/cap" });
      await eventually("the second watch is turned away", () => second.reconnects.length >= 1);
      const refused = await fetch(hookC.url + "/v1/events", { headers: { Authorization: `Bearer ${token}` } });
      await refused.arrayBuffer();
      assert.equal(refused.status, 503);
      assert.equal(second.reconnects[0]?.status, 503);
      assert.equal(second.reconnects[0]?.delayMs, Number(refused.headers.get("Retry-After")) * 1000, "the wait is the server's Retry-After");
      assert.equal(second.connects, 0);
      await qC.upsertDispatch("hive/cap", 1, { started: true });
      await eventually("the first watch has the change", () => first.events.length === 1);
      await first.stop();
      await eventually("the second watch connects and has the change", () => second.events.length === 1);
      await second.stop();
      assert.deepEqual(changes(second.events).map((e) => e.id), changes(first.events).map((e) => e.id));
    } finally {
      await hookC.stop();
    }
  });

  it("started on an empty stream, gives the change landing between its tail read and its connect, not a reset", async () => {
    const empty = await Redis.start();
    const hookE = await Webhook.start(empty);
    try {
      const writer = new QueenClient({ baseUrl: hookE.url, token });
      let written = false;
      // The stream's connect waits for a write made after the tail read found nothing.
      const between: typeof fetch = async (input, init) => {
        if (String(input).includes("/v1/events") && !written) {
          written = true;
          await writer.upsertDispatch("hive/empty", 1, { started: true });
        }
        return fetch(input, init);
      };
      const qE = new QueenClient({ baseUrl: hookE.url, token, fetch: between });
      const w = collect(qE, {});
      await eventually("the change arrives", () => w.events.length >= 1);
      await w.stop();
      assert.deepEqual(
        w.events.map((e) => e.type),
        ["change"],
        "the watch started at 0-0 on an empty stream: " + JSON.stringify(w.events),
      );
      assert.deepEqual(changes(w.events).map((e) => e.id), await (async () => (await writer.audit({ limit: 10 })).entries.map((e) => e.id))());
    } finally {
      await hookE.stop();
      await empty.stop();
    }
  });

  it("goes on across a webhook killed and started again: no change lost or repeated", async () => {
    const start = (await qB.audit({ limit: 1 })).entries.at(-1)?.id;
    const w = collect(qA, { repo: "hive/w2" });
    await eventually("the watch connects", () => w.connects === 1);
    for (const n of [1, 2]) await qA.upsertDispatch("hive/w2", n, { started: true });
    await eventually("2 changes arrive", () => w.events.length >= 2);

    await hookA.kill();
    // Written while the watched webhook is down: the watch finds them when it resumes.
    for (const n of [3, 4, 5]) await qB.upsertDispatch("hive/w2", n, { started: true });
    await qB.free("hive/w2", 1, { reason: "gone" });
    await hookA.start();
    for (const n of [6, 7]) await qA.upsertDispatch("hive/w2", n, { started: true });

    await eventually("8 changes arrive", () => w.events.length >= 8, 60_000);
    await new Promise((r) => setTimeout(r, 300)); // a duplicate would come now
    await w.stop();
    const want = await auditIds("hive/w2", start);
    assert.equal(want.length, 8);
    assert.deepEqual(changes(w.events).map((e) => e.id), want, "every change once, in order");
    assert.deepEqual(
      changes(w.events).map((e) => [e.entry.issue, e.entry.action]),
      [[1, "upsert"], [2, "upsert"], [3, "upsert"], [4, "upsert"], [5, "upsert"], [1, "free"], [6, "upsert"], [7, "upsert"]],
    );
    assert.ok(w.reconnects.length >= 1, "the watch reconnected");
    assert.equal(w.reconnects[0]?.after, want[1], "it resumed after the last change it had");
    assert.ok(w.connects >= 2);
  });
});
