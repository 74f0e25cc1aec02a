// The shared watch-protocol vectors of testdata/watch (its README says the
// format), each played by a Node server to watch(), as the Go client's
// TestWatchVectors plays them to apiclient.Watch.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import { QueenClient } from "../src/index.js";
import { repoRoot, token } from "./harness.js";

interface Reply {
  path: string;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  hold_headers?: boolean;
  play?: { send?: string; times?: number; every_ms?: number; pause_ms?: number; big_event?: { id: string; lines: number; line_bytes: number } }[];
  end?: "hang" | "close" | "drop";
}

interface Step {
  request?: string;
  last_event_id?: string;
  event?: string;
  id?: string;
  retry?: { status: number; wait_ms?: number[] };
}

interface Vector {
  about: string;
  after?: string;
  idle_ms?: number;
  callback_ms?: number;
  answers: Reply[];
  expect: Step[];
}

const dir = join(repoRoot, "testdata", "watch");

function matches(want: Step, got: Step): boolean {
  if (!want.retry !== !got.retry) return false;
  if (want.retry && got.retry) {
    if (want.retry.status !== got.retry.status) return false;
    const w = want.retry.wait_ms;
    const g = got.retry.wait_ms![0]!;
    return !w || (g >= w[0]! && g <= w[1]!);
  }
  return (
    (want.request ?? "") === (got.request ?? "") &&
    (want.last_event_id ?? "") === (got.last_event_id ?? "") &&
    (want.event ?? "") === (got.event ?? "") &&
    (want.id ?? "") === (got.id ?? "")
  );
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Serves v's answers in order, recording each request into steps. */
function player(v: Vector, steps: Step[], onStep: () => void) {
  let n = 0;
  return async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    const last = req.headers["last-event-id"];
    steps.push({ request: url.pathname, ...(typeof last === "string" && last ? { last_event_id: last } : {}) });
    onStep();
    let gone = false;
    const closed = new Promise<void>((r) => res.on("close", () => ((gone = true), r())));
    const a = v.answers[n++];
    if (!a || a.hold_headers) return closed;
    const headers: Record<string, string> = {};
    for (const [k, val] of Object.entries(a.headers ?? {})) {
      headers[k] = val.replace(/\{\{http-date \+(\d+)s\}\}/g, (_, s: string) => new Date(Date.now() + Number(s) * 1000).toUTCString());
    }
    res.writeHead(a.status ?? 200, headers);
    if (a.body) res.write(a.body);
    if (!a.play) res.flushHeaders();
    for (const s of a.play ?? []) {
      if (gone) return;
      if (s.big_event) {
        const { id, lines, line_bytes } = s.big_event;
        const pad = "a".repeat(line_bytes);
        let text = `id: ${id}\nevent: change\ndata: {"entry":{"id":${JSON.stringify(id)},"repo":"hive/t27","issue":1,"version":1},"claim":null\n`;
        for (let i = 0; i < lines; i++) text += `data: ,"p${i}":"${pad}"\n`;
        res.write(text + "data: }\n\n");
      } else if (s.pause_ms) {
        await pause(s.pause_ms);
      } else {
        for (let i = 0; i < Math.max(s.times ?? 1, 1) && !gone; i++) {
          if (s.every_ms) await pause(s.every_ms);
          if (!gone) res.write(s.send ?? "");
        }
      }
    }
    if (gone) return;
    switch (a.end) {
      case "hang":
        return closed;
      case "drop":
        // Once what was written has gone out, the socket, not the answer,
        // is ended: the chunked end never comes.
        await new Promise<void>((r) => res.write("", () => r()));
        // Bun's node:http sends a write later than Node: give it the time.
        await pause(300);
        res.socket?.end();
        return;
      default:
        res.end();
    }
  };
}

async function play(v: Vector): Promise<void> {
  const steps: Step[] = [];
  let wake = () => {};
  const server = createServer(player(v, steps, () => wake()));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const q = new QueenClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token });
  const ctl = new AbortController();
  const record = (s: Step) => {
    steps.push(s);
    wake();
  };
  const run = (async () => {
    for await (const ev of q.watch({
      ...(v.after !== undefined ? { after: v.after } : {}),
      idleTimeoutMs: v.idle_ms ?? 5000,
      signal: ctl.signal,
      onReconnect: (i) => record({ retry: { status: i.status, wait_ms: [i.delayMs] } }),
    })) {
      record({ event: ev.type, id: ev.id ?? "" });
      if (v.callback_ms) await pause(v.callback_ms);
    }
  })();
  const deadline = Date.now() + 20_000;
  try {
    while (steps.length < v.expect.length) {
      if (Date.now() > deadline) assert.fail(`${v.about}\nnot within 20 s; so far ${JSON.stringify(steps)}`);
      await Promise.race([new Promise<void>((r) => (wake = r)), pause(100), run]);
    }
    v.expect.forEach((want, i) => {
      assert.ok(matches(want, steps[i]!), `${v.about}\nstep ${i}: got ${JSON.stringify(steps[i])}, want ${JSON.stringify(want)}\nall: ${JSON.stringify(steps)}`);
    });
  } finally {
    ctl.abort();
    await run.catch(() => {});
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

describe("the shared watch-protocol vectors", () => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
  it("are there", () => assert.ok(files.length > 0, `no vectors in ${dir}`));
  for (const f of files) {
    const v = JSON.parse(readFileSync(join(dir, f), "utf8")) as Vector;
    it(`${f.replace(/\.json$/, "")}: ${v.about}`, () => play(v));
  }
});
