// Every call of the client against the built webhook and a private Redis.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { QueenApiError, QueenClient } from "../src/index.js";
import { Redis, Webhook, token } from "./harness.js";

let redis: Redis;
let hook: Webhook;
let q: QueenClient;

before(async () => {
  redis = await Redis.start();
  hook = await Webhook.start(redis, { QUEEN_REVIEW_FIRST: "on", QUEEN_EXPORT_REPO: "hive/t27" });
  q = new QueenClient({ baseUrl: hook.url, token, source: "queen-ts" });
});

after(async () => {
  await hook?.stop();
  await redis?.stop();
});

async function rejects(p: Promise<unknown>): Promise<QueenApiError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof QueenApiError, `not a QueenApiError: ${e}`);
    return e;
  }
  assert.fail("the call succeeded");
}

// A send-back finished 10 minutes ago: the rules read the real clock.
const ago = (min: number) => new Date(Date.now() - min * 60_000).toISOString();
const sendBack = {
  started: true,
  dispatched_at: ago(180),
  finished_at: ago(10),
  review_state: "sendBack",
  send_backs: 1,
  ceiling_releases: 0,
  criteria: ["builds", "tests"],
  owned_paths: ["bootstrap/src/compiler.rs"],
  judged_head: null,
};

describe("a dispatch row", () => {
  it("is created by upsertDispatch, decided in the same write, and unchanged when sent again", async () => {
    const a = await q.upsertDispatch("hive/t27", 9111, sendBack);
    assert.equal(a.outcome, "would_free"); // the flag is off: decided, not applied
    assert.equal(a.repo, "hive/t27");
    assert.equal(a.issue, 9111);
    assert.equal(a.claim, "rejected");
    assert.equal(a.live, true);
    assert.deepEqual(a.held_paths, ["bootstrap/src/compiler.rs"]);
    assert.equal(a.would_free?.rule, "send_back_claim");
    assert.equal(a.version, 1);
    const again = await q.upsertDispatch("hive/t27", 9111, { ...sendBack, repo: "Hive/T27", issue: 9111 });
    assert.equal(again.outcome, "unchanged");
    assert.equal(again.version, 1);
  });

  it("reads back with claim(): the keep, the rules' path in words and the history", async () => {
    await q.upsertDispatch("hive/t27", 9112, { ...sendBack, send_backs: 0 });
    await q.upsertDispatch("hive/t27", 9112, { send_backs: 1 });
    const d = await q.claim("hive/t27", 9112);
    assert.equal(d.kept, null);
    assert.ok(d.explain.some((l) => l.startsWith("send_back_claim: send_backs 1 < ceiling 2")), d.explain.join("\n"));
    assert.equal(d.history.length, 2);
    assert.equal(d.history[0]?.version, 2, "history is newest first");
    assert.equal(d.history[0]?.source.writer, "queen-ts", "the client names itself with X-Queen-Source");
    const one = await q.claim("hive/t27", 9112, { history: 1 });
    assert.equal(one.history.length, 1);
  });

  it("is removed by deleteDispatch with its reason in the audit, and then is a 404", async () => {
    await q.upsertDispatch("hive/t27", 9113, { started: true });
    const del = await q.deleteDispatch("hive/t27", 9113, { reason: "duplicate" });
    assert.deepEqual(del, { repo: "hive/t27", issue: 9113, outcome: "deleted", version: 2 });
    const err = await rejects(q.claim("hive/t27", 9113));
    assert.equal(err.status, 404);
    assert.ok(err.notFound);
    const audit = await q.audit({ repo: "hive/t27", issue: 9113 });
    const last = audit.entries.at(-1);
    assert.equal(last?.action, "delete");
    assert.equal(last?.source.reason, "duplicate");
  });
});

describe("listing claims", () => {
  before(async () => {
    for (const n of [5, 3, 1, 4, 2]) await q.upsertDispatch("hive/page", n, { started: true, owned_paths: [`p${n}.go`] });
  });

  it("pages with limit and next_cursor until the cursor is empty", async () => {
    const first = await q.listClaims({ repo: "hive/page", limit: 2 });
    assert.deepEqual(first.claims.map((c) => c.issue), [1, 2]);
    assert.notEqual(first.next_cursor, "");
    const seen = [...first.claims.map((c) => c.issue)];
    let cursor = first.next_cursor;
    while (cursor) {
      const page = await q.listClaims({ repo: "hive/page", limit: 2, cursor });
      seen.push(...page.claims.map((c) => c.issue));
      cursor = page.next_cursor;
    }
    assert.deepEqual(seen, [1, 2, 3, 4, 5]);
  });

  it("allClaims follows the cursors itself and applies the filters", async () => {
    const all = [];
    for await (const c of q.allClaims({ repo: "hive/page", limit: 2 })) all.push(c.issue);
    assert.deepEqual(all, [1, 2, 3, 4, 5]);
    await q.free("hive/page", 4, { reason: "the bee is gone" });
    const released = [];
    for await (const c of q.allClaims({ repo: "hive/page", claimsIssue: false })) released.push(c.issue);
    assert.deepEqual(released, [4]);
    const running = [];
    for await (const c of q.allClaims({ claim: "running", repo: "hive/page" })) running.push(c.issue);
    assert.deepEqual(running, [1, 2, 3, 4, 5], "a freed row keeps its claim word");
    const rejected = [];
    for await (const c of q.allClaims({ claim: "rejected", repo: "hive/page" })) rejected.push(c.issue);
    assert.deepEqual(rejected, []);
  });
});

describe("the round's reads", () => {
  it("heldPaths lists every held path of the repository, by path then issue", async () => {
    await q.upsertDispatch("hive/held", 2, { started: true, owned_paths: ["src/b.go", "src/a.go"] });
    await q.upsertDispatch("hive/held", 1, { started: true, owned_paths: ["src/b.go"] });
    const h = await q.heldPaths("hive/held");
    assert.deepEqual(
      h.held.map((p) => [p.path, p.issue, p.stage, p.until]),
      [
        ["src/a.go", 2, "working", null],
        ["src/b.go", 1, "working", null],
        ["src/b.go", 2, "working", null],
      ],
    );
  });

  it("admission admits assigned work and holds the backlog while a dispatch waits in review", async () => {
    await q.upsertDispatch("hive/adm", 7, {
      started: true,
      dispatched_at: "2026-10-10T17:00:00Z",
      finished_at: "2026-10-10T18:00:00Z",
      review_state: null,
      issue_open: true,
    });
    const a = await q.admission("hive/adm", [{ issue: 9200 }, { issue: 9201, owner_assigned: true }]);
    assert.deepEqual(a, { queue: 1, admitted: [9201], held: [9200], refusal: null });
    const only = await q.admission("hive/adm", [{ issue: 9200, owner_assigned: false }]);
    assert.deepEqual(only.admitted, []);
    assert.match(only.refusal ?? "", /1 dispatches wait in review/);
  });
});

describe("a person's overrides", () => {
  it("free with the version looked at frees; a stale version is a 409 naming version; a repeat is already free", async () => {
    const v = await q.upsertDispatch("hive/t27", 9120, { started: true, owned_paths: ["src/x.go"] });
    await q.upsertDispatch("hive/t27", 9120, { owned_paths: ["src/y.go"] });
    const stale = await rejects(q.free("hive/t27", 9120, { reason: "gone", version: v.version }));
    assert.equal(stale.status, 409);
    assert.equal(stale.field, "version");
    assert.equal((await q.claim("hive/t27", 9120)).live, true, "a 409 wrote nothing");
    const f = await q.free("hive/t27", 9120, { reason: "the bee will not come back", version: v.version + 1 });
    assert.equal(f.outcome, "free");
    assert.equal(f.live, false);
    assert.equal(f.claims_issue, false);
    assert.equal(f.freed?.rule, "manual");
    assert.equal(f.freed?.evidence, "the bee will not come back");
    const again = await q.free("hive/t27", 9120, { reason: "twice" });
    assert.equal(again.outcome, "already free");
  });

  it("keep pins the row live and clears the free", async () => {
    const k = await q.keep("hive/t27", 9120, { reason: "owner wants another round" });
    assert.equal(k.outcome, "keep");
    assert.equal(k.live, true);
    assert.equal(k.freed, null);
    const d = await q.claim("hive/t27", 9120);
    assert.equal(d.kept?.reason, "owner wants another round");
    assert.equal((await q.keep("hive/t27", 9120, { reason: "again" })).outcome, "already kept");
  });

  it("a reason is required: a blank one is a 400 naming reason", async () => {
    const err = await rejects(q.free("hive/t27", 9120, { reason: " " }));
    assert.equal(err.status, 400);
    assert.equal(err.field, "reason");
  });
});

describe("export push", () => {
  it("is refused for another repository than the export's, naming repo", async () => {
    const err = await rejects(q.pushExport("hive/b27", 1));
    assert.equal(err.status, 400);
    assert.equal(err.field, "repo");
  });

  it("is refused for a row that is not accepted, and with no worker running the export, naming QUEEN_EXPORT_URL", async () => {
    await q.upsertDispatch("hive/t27", 9130, { started: true });
    assert.equal((await rejects(q.pushExport("hive/t27", 9130))).status, 409);
    await q.upsertDispatch("hive/t27", 9130, {
      dispatched_at: "2026-10-10T17:00:00Z",
      finished_at: "2026-10-10T18:00:00Z",
      review_state: "accept",
      judged_head: "4f2a9c0e1b7d3a5f6e8c9b0a1d2e3f4a5b6c7d8e",
    });
    const err = await rejects(q.pushExport("hive/t27", 9130, { dryRun: true }));
    assert.equal(err.status, 409);
    assert.equal(err.field, "QUEEN_EXPORT_URL");
  });
});

describe("audit", () => {
  it("answers the newest entries of a row, newest last, with their stream ids", async () => {
    await q.upsertDispatch("hive/aud", 1, { started: true });
    await q.upsertDispatch("hive/aud", 1, { owned_paths: ["a"] });
    await q.upsertDispatch("hive/aud", 1, { owned_paths: ["b"] });
    const all = await q.audit({ repo: "hive/aud", issue: 1 });
    assert.deepEqual(all.entries.map((e) => e.version), [1, 2, 3]);
    assert.equal(all.more, false);
    const ids = all.entries.map((e) => e.id ?? "");
    assert.ok(ids.every((id) => /^\d+-\d+$/.test(id)), ids.join(","));
    const two = await q.audit({ repo: "hive/aud", issue: 1, limit: 2 });
    assert.deepEqual(two.entries.map((e) => e.version), [2, 3]);
    assert.equal(two.more, true);
  });
});
