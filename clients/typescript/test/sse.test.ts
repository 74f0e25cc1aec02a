// The event-stream parser against the HTML standard's rules, fed in pieces
// cut everywhere a network may cut them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type SSEEvent, SSEEventTooLarge, SSEParser, maxEventSize } from "../src/sse.js";

/** Feeds text in pieces of n characters and returns every event. */
function feed(text: string, n: number): { events: SSEEvent[]; parser: SSEParser } {
  const parser = new SSEParser();
  const events: SSEEvent[] = [];
  for (let i = 0; i < text.length; i += n) events.push(...parser.push(text.slice(i, i + n)));
  return { events, parser };
}

const stream =
  "\uFEFFretry: 1000\n\n" +
  ": ping\n\n" +
  'id: 1796122594339-0\nevent: change\ndata: {"entry": {"version": 1},\ndata:  "claim": null}\n\n' +
  'event: reset\ndata: {"after": "1-0", "oldest": "2-0", "reason": "gone"}\n\n' +
  "id: 1796122594340-0\r\nevent: change\r\ndata: {}\r\n\r\n" +
  "id: 1796122594341-0\revent: change\rdata:{}\r\r" +
  "data: cut off at the end";

describe("SSEParser", () => {
  for (const n of [1, 2, 3, 7, 64, stream.length]) {
    it(`reads the same events from pieces of ${n} characters`, () => {
      const { events, parser } = feed(stream, n);
      assert.deepEqual(events, [
        { event: "change", id: "1796122594339-0", data: '{"entry": {"version": 1},\n "claim": null}' },
        { event: "reset", id: "1796122594339-0", data: '{"after": "1-0", "oldest": "2-0", "reason": "gone"}' },
        { event: "change", id: "1796122594340-0", data: "{}" },
        { event: "change", id: "1796122594341-0", data: "{}" },
      ]);
      assert.equal(parser.retry, 1000);
      assert.equal(parser.lastEventId, "1796122594341-0");
    });
  }

  it("takes a CR at the end of one piece and an LF at the start of the next as one line end", () => {
    const p = new SSEParser();
    assert.deepEqual(p.push("data: a\r"), []);
    assert.deepEqual(p.push("\ndata: b\r"), [], "the LF ended no second line, so nothing was dispatched");
    assert.deepEqual(p.push("\n\n"), [{ event: "message", id: "", data: "a\nb" }]);
  });

  it("keeps a CR's pending LF across an empty piece", () => {
    const p = new SSEParser();
    assert.deepEqual(p.push("data: a\r"), []);
    assert.deepEqual(p.push(""), []);
    assert.deepEqual(p.push("\ndata: b\r"), [], "the LF ended no second line, so nothing was dispatched");
    assert.deepEqual(p.push("\n\n"), [{ event: "message", id: "", data: "a\nb" }]);
  });

  it("dispatches nothing for comments, a retry alone or an event without data, and ignores unknown fields", () => {
    const { events, parser } = feed(": ping\n\nretry: x\n\nevent: change\n\nid: 7-0\n\nfoo: bar\nid\n\n", 5);
    assert.deepEqual(events, []);
    assert.equal(parser.retry, undefined, "a retry that is not digits is ignored");
    assert.equal(parser.lastEventId, "", "a bare id line clears the id");
  });

  it("keeps an id holding NUL out", () => {
    const { parser } = feed("id: 1-0\n\nid: 2\u00000\n\n", 4);
    assert.equal(parser.lastEventId, "1-0");
  });

  it("bounds a whole event's data, over all its lines, at the Go client's 8 MiB", () => {
    assert.equal(maxEventSize, 8 << 20);
    const p = new SSEParser(10);
    assert.deepEqual(p.push("data: 12345\ndata: 1234\n\n"), [{ event: "message", id: "", data: "12345\n1234" }], "10 characters pass");
    assert.throws(() => p.push("data: 12345\ndata: 12345\n\n"), SSEEventTooLarge, "11 in two lines do not");
  });

  it("bounds a line that has not ended yet", () => {
    const p = new SSEParser(10);
    p.push("data: 1234");
    assert.throws(() => p.push("567890"), SSEEventTooLarge);
  });
});
