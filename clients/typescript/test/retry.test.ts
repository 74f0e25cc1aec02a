// The waits between attempts: the server's Retry-After when it sends one,
// else a doubling backoff with jitter, never past the cap.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { retryAfterMs } from "../src/errors.js";
import { retryDefaults, retryDelay } from "../src/retry.js";

describe("retryDelay", () => {
  const o = { attempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };

  it("is the server's Retry-After when it sent one, bounded by maxDelayMs", () => {
    assert.equal(retryDelay(1, 5000, retryDefaults), 5000);
    assert.equal(retryDelay(3, 0, o), 0);
    assert.equal(retryDelay(1, 60_000, o), 1000);
  });

  it("doubles from baseDelayMs, half of it fixed and half random, up to maxDelayMs", () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => retryDelay(n, undefined, o, () => 0)), [50, 100, 200, 400, 500, 500]);
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => retryDelay(n, undefined, o, () => 0.999999)), [100, 200, 400, 800, 1000, 1000]);
  });
});

describe("retryAfterMs", () => {
  it("reads whole seconds and an HTTP date, and nothing else", () => {
    const now = Date.parse("2026-12-02T20:00:00Z");
    assert.equal(retryAfterMs("5", now), 5000);
    assert.equal(retryAfterMs(" 0 ", now), 0);
    assert.equal(retryAfterMs("Wed, 02 Dec 2026 20:00:07 GMT", now), 7000);
    assert.equal(retryAfterMs("Wed, 02 Dec 2026 19:00:00 GMT", now), 0, "a date gone by is no wait");
    assert.equal(retryAfterMs(null, now), undefined);
    assert.equal(retryAfterMs("soon", now), undefined);
    // What Date.parse would read loosely: "1.5" as a date long gone, so no wait at all.
    for (const v of ["1.5", "-1", "5s", "0x10", "2026-12-02T20:00:07Z", "Wed, 2 Dec 2026 20:00:07 GMT", "Wed Dec 02 2026 20:00:07"]) {
      assert.equal(retryAfterMs(v, now), undefined, v);
    }
  });
});
