// How an answer that is not a success becomes a QueenApiError, whatever
// stood between: the API's own JSON, or a proxy's page.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { errorFrom } from "../src/errors.js";

describe("errorFrom", () => {
  it("takes the API's error and field, and Retry-After", async () => {
    const res = new Response(JSON.stringify({ error: "version: the row moved on", field: "version" }), {
      status: 409,
      headers: { "Content-Type": "application/json", "Retry-After": "2" },
    });
    const e = await errorFrom(res, "POST", "/v1/repos/hive/t27/claims/1/free", 1);
    assert.equal(e.status, 409);
    assert.equal(e.field, "version");
    assert.equal(e.retryAfterMs, 2000);
    assert.equal(e.message, "POST /v1/repos/hive/t27/claims/1/free: 409: version: the row moved on (field version)");
  });

  it("keeps the start of a body that is not the API's, one line's worth", async () => {
    const page = "<html>\n<body>" + "bad gateway\n".repeat(100) + "</body></html>";
    const e = await errorFrom(new Response(page, { status: 502 }), "GET", "/v1/claims", 3);
    assert.equal(e.status, 502);
    assert.equal(e.field, undefined);
    assert.equal(e.attempts, 3);
    assert.ok(e.message.includes("<html> <body>bad gateway bad gateway"), e.message);
    assert.ok(!e.message.includes("\n"), "one line");
    assert.ok(e.message.length < 400, `${e.message.length} characters`);
  });

  it("says no body when there is none", async () => {
    const e = await errorFrom(new Response(null, { status: 503 }), "GET", "/v1/claims", 1);
    assert.match(e.message, /^GET \/v1\/claims: 503: .+/);
    assert.equal(e.retryAfterMs, undefined);
  });
});
