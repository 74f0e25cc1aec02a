// The client's errors against the built webhook: a 400 names its field, a
// 401 is thrown without the token anywhere, a 503 is waited out (Retry-After
// honoured, attempts bounded) for idempotent calls only.
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { after, before, describe, it } from "node:test";
import { QueenApiError, QueenClient, type RetryInfo } from "../src/index.js";
import { Redis, Webhook, freePort, token } from "./harness.js";

async function rejects(p: Promise<unknown>): Promise<QueenApiError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof QueenApiError, `not a QueenApiError: ${e}`);
    return e;
  }
  assert.fail("the call succeeded");
}

/** Everything a caller could print or ship of e: message, stack, JSON, a deep inspect with hidden fields. */
function everythingOf(e: unknown): string {
  const err = e as Error;
  return [String(err), err.stack ?? "", JSON.stringify(err), inspect(err, { depth: Infinity, showHidden: true })].join("\n");
}

describe("with Redis up", () => {
  let redis: Redis;
  let hook: Webhook;
  let q: QueenClient;
  before(async () => {
    redis = await Redis.start();
    hook = await Webhook.start(redis);
    q = new QueenClient({ baseUrl: hook.url, token });
  });
  after(async () => {
    await hook?.stop();
    await redis?.stop();
  });

  it("a 400 names its field, for a body, a query parameter and the path", async () => {
    const date = await rejects(q.upsertDispatch("hive/t27", 1, { finished_at: "yesterday" }));
    assert.equal(date.status, 400);
    assert.equal(date.field, "finished_at");
    assert.match(date.message, /finished_at: "yesterday" is not an RFC 3339 date/);
    assert.equal(date.attempts, 1, "a 400 is not retried");
    const unknown = await rejects(q.upsertDispatch("hive/t27", 1, { strated: true } as never));
    assert.equal(unknown.field, "strated");
    const claim = await rejects(q.listClaims({ claim: "Running" as never }));
    assert.equal(claim.field, "claim");
    const repo = await rejects(q.heldPaths("-x/y"));
    assert.equal(repo.field, "repo");
    const issue = await rejects(q.claim("hive/t27", 0));
    assert.equal(issue.field, "issue");
    assert.equal((await q.audit({ repo: "hive/t27" })).entries.length, 0, "nothing refused was written");
  });

  it("a repo that is not owner/name is refused before any request, naming repo", () => {
    assert.throws(() => q.heldPaths("hive"), (e: Error) => e instanceof TypeError && e.message.startsWith("repo: "));
    assert.throws(() => q.heldPaths("hive/t27/x"), TypeError);
  });

  it("a 401 is thrown at once, and the token is in no part of the error nor of the client", async () => {
    const wrong = "wrong-" + token;
    const retries: RetryInfo[] = [];
    const bad = new QueenClient({ baseUrl: hook.url, token: wrong, onRetry: (i) => retries.push(i) });
    const err = await rejects(bad.claim("hive/t27", 1));
    assert.equal(err.status, 401);
    assert.equal(err.attempts, 1);
    assert.deepEqual(retries, []);
    assert.match(err.message, /401: missing or wrong bearer token/);
    const all = everythingOf(err);
    assert.ok(!all.includes(wrong) && !all.includes(token), "the token is in the error:\n" + all);
    const client = [inspect(bad, { depth: Infinity, showHidden: true }), JSON.stringify(bad), String(bad)].join("\n");
    assert.ok(!client.includes(wrong), "the token shows when the client is printed:\n" + client);
  });

  it("a request that gets no answer is a status 0 error without the token", async () => {
    const down = new QueenClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, token, retry: { attempts: 2, baseDelayMs: 10 } });
    const err = await rejects(down.heldPaths("hive/t27"));
    assert.equal(err.status, 0);
    assert.equal(err.attempts, 2, "no answer is retried like a 503");
    assert.match(err.message, /ECONNREFUSED/);
    assert.ok(!everythingOf(err).includes(token));
  });
});

describe("with Redis away", () => {
  it("a webhook starting before Redis answers 503 with Retry-After: 5; the client waits exactly that, then succeeds", async () => {
    const redis = await Redis.reserve();
    const hook = await Webhook.start(redis, {}, { waitReady: false });
    try {
      const retries: RetryInfo[] = [];
      const q = new QueenClient({
        baseUrl: hook.url,
        token,
        onRetry: (i) => {
          retries.push(i);
          if (retries.length === 1) void redis.start();
        },
      });
      const a = await q.upsertDispatch("hive/t27", 5, { started: true });
      assert.equal(a.outcome, "created");
      assert.ok(retries.length >= 1);
      assert.equal(retries[0]?.status, 503);
      assert.equal(retries[0]?.delayMs, 5000, "the wait is the server's Retry-After");
      assert.equal(retries[0]?.path, "/v1/repos/hive/t27/dispatches/5");
    } finally {
      await hook.stop();
      await redis.stop();
    }
  });

  describe("while Redis hangs", () => {
    let redis: Redis;
    let hook: Webhook;
    before(async () => {
      redis = await Redis.start();
      hook = await Webhook.start(redis);
      await new QueenClient({ baseUrl: hook.url, token }).upsertDispatch("hive/t27", 7, { started: true });
    });
    after(async () => {
      await hook?.stop();
      await redis?.stop();
    });

    it("an idempotent call is retried after the 503 and lands once Redis is back", async () => {
      await redis.pause();
      const retries: RetryInfo[] = [];
      const q = new QueenClient({
        baseUrl: hook.url,
        token,
        retry: { baseDelayMs: 50 },
        onRetry: (i) => {
          retries.push(i);
          if (retries.length === 1) void redis.resume();
        },
      });
      try {
        const a = await q.upsertDispatch("hive/t27", 7, { owned_paths: ["src/z.go"] });
        // The first attempt's write may have run once Redis woke (a 503 says
        // nothing of that): the upsert is idempotent, so either way it is one write.
        assert.ok(a.outcome === "updated" || a.outcome === "unchanged", a.outcome);
        assert.equal(a.version, 2, "written once");
        assert.deepEqual(a.held_paths, ["src/z.go"]);
        assert.equal(retries[0]?.status, 503);
      } finally {
        await redis.resume();
      }
    });

    it("the attempts are bounded: the last 503 is thrown with their count", async () => {
      await redis.pause();
      const retries: RetryInfo[] = [];
      const q = new QueenClient({ baseUrl: hook.url, token, retry: { attempts: 2, baseDelayMs: 50 }, onRetry: (i) => retries.push(i) });
      try {
        const err = await rejects(q.claim("hive/t27", 7));
        assert.equal(err.status, 503);
        assert.equal(err.attempts, 2);
        assert.match(err.message, /the claims ledger is unavailable; retry/);
        assert.deepEqual(retries.map((r) => r.attempt), [1]);
      } finally {
        await redis.resume();
      }
    });

    it("a free without a version is not retried: a repeat could land on a newer attempt", async () => {
      await redis.pause();
      const retries: RetryInfo[] = [];
      const q = new QueenClient({ baseUrl: hook.url, token, onRetry: (i) => retries.push(i) });
      try {
        const err = await rejects(q.free("hive/t27", 7, { reason: "gone" }));
        assert.equal(err.status, 503);
        assert.equal(err.attempts, 1);
        assert.deepEqual(retries, []);
      } finally {
        await redis.resume();
      }
    });
  });
});
