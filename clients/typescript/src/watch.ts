import { QueenApiError, UnbuiltRequest, checkHeaders, describeFailure, errorFrom } from "./errors.js";
import { retryDelay, sleep } from "./retry.js";
import { SSEParser } from "./sse.js";
import type { ChangeData, ResetData } from "./types.js";

/**
 * A change of a row: its audit entry, and its claim view when sent (null
 * once deleted, or when it could not be read: `claim_error` then says so).
 */
export interface ChangeEvent extends ChangeData {
  type: "change";
  /** The audit stream id; the stream resumes after it. */
  id: string;
}

/** The stream no longer held the entries after the id asked for: re-read the claims, then go on. */
export interface ResetEvent extends ResetData {
  type: "reset";
  /** The newest audit id when the stream holds any: the live changes follow it, and a reconnect resumes there. */
  id?: string;
}

export type WatchEvent = ChangeEvent | ResetEvent;

export interface ReconnectInfo {
  /** Reconnections in a row without an event delivered in between, from 1: the backoff grows with it. */
  attempt: number;
  delayMs: number;
  /** Why: the connection ended or failed, or the server refused for now (503, 429), at the start's GET /v1/audit too. */
  reason: string;
  /** The refusal's HTTP status (200 for an answer that was not an event stream); 0 when the connection failed or ended. */
  status: number;
  /** The id the next connection resumes after. */
  after: string | undefined;
}

export interface WatchOptions {
  /** Only this `owner/name` (all repositories when absent). */
  repo?: string;
  /**
   * Resume after this audit id. Absent, the watch starts after the newest
   * audit entry at the call (read with GET /v1/audit; the stream's start
   * when it is empty), so an early reconnect misses nothing either.
   */
  after?: string;
  /** Ends the watch; the loop then ends without an error. */
  signal?: AbortSignal;
  /** A connection silent this long (no event, no heartbeat) is dropped and resumed. Default 45 s (3 heartbeats). */
  idleTimeoutMs?: number;
  /** The longest wait between reconnections. Default 30 s. */
  maxDelayMs?: number;
  /** Told of each reconnection before its wait, to log it. */
  onReconnect?: (info: ReconnectInfo) => void;
  /** Told each time a stream opens, with the id it resumes after. */
  onConnect?: (info: { after: string | undefined }) => void;
}

/** What watch needs of the client, so that the token stays there. */
export interface WatchTransport {
  url(path: string): string;
  headers(): Record<string, string>;
  fetch: typeof fetch;
  /** The newest audit id, undefined when the stream is empty. */
  tail(signal?: AbortSignal): Promise<string | undefined>;
}

const path = "/v1/events";

export async function* watch(t: WatchTransport, o: WatchOptions): AsyncGenerator<WatchEvent> {
  const outer = o.signal;
  const idleMs = o.idleTimeoutMs ?? 45_000;
  const policy = { attempts: Infinity, baseDelayMs: 1000, maxDelayMs: o.maxDelayMs ?? 30_000 };
  let after = o.after;
  const query = o.repo ? `?${new URLSearchParams({ repo: o.repo })}` : "";
  // Failures since an event was last delivered: a server that accepts and
  // ends the stream at once is backed off from as one that refuses.
  let attempt = 0;
  while (!outer?.aborted) {
    const ctl = new AbortController();
    const stop = () => ctl.abort(outer?.reason);
    outer?.addEventListener("abort", stop, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => ctl.abort(new Error(`no event or heartbeat for ${idleMs} ms`)), idleMs);
    };
    let reason: string;
    let status = 0;
    let retryAfterMs: number | undefined;
    try {
      if (after === undefined) {
        // Read here, so a 503 or a webhook away at the start is waited out
        // like the stream's. An empty stream: every entry it will hold comes
        // after this call, so resume from its start ("0-0"), never "from
        // now", which would lose what a reconnect missed before the first change.
        after = (await t.tail(ctl.signal)) ?? "0-0";
      }
      touch();
      const headers: Record<string, string> = { ...t.headers(), Accept: "text/event-stream" };
      if (after) headers["Last-Event-ID"] = after;
      checkHeaders(headers);
      const res = await t.fetch(t.url(path + query), { headers, signal: ctl.signal, redirect: "manual" });
      if (!res.ok || !res.body) throw await errorFrom(res, "GET", path + query, attempt + 1);
      const type = res.headers.get("Content-Type") ?? "";
      if (!type.toLowerCase().startsWith("text/event-stream")) {
        // A proxy's page, say: not the stream, so a failure to back off from.
        res.body.cancel().catch(() => {});
        status = res.status;
        throw new Error(`the answer is ${JSON.stringify(type.slice(0, 100))}, not text/event-stream`);
      }
      o.onConnect?.({ after });
      const parser = new SSEParser();
      const decoder = new TextDecoder();
      const reader = res.body.getReader();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const ev of parser.push(decoder.decode(value, { stream: true }))) {
            // The caller's time with an event is not the server's silence.
            clearTimeout(idle);
            if (ev.event === "change") {
              const data = parse<ChangeData>(ev.data, ev.id);
              after = ev.id;
              const claimError = data.claim_error === undefined ? {} : { claim_error: data.claim_error };
              attempt = 0;
              yield { type: "change", id: ev.id, entry: data.entry, claim: data.claim, ...claimError };
            } else if (ev.event === "reset") {
              // Without it a reconnect before the next change would be reset again.
              if (ev.id) after = ev.id;
              attempt = 0;
              yield { type: "reset", ...(ev.id ? { id: ev.id } : {}), ...parse<ResetData>(ev.data, ev.id) };
            }
          }
          touch();
          if (parser.retry !== undefined) policy.baseDelayMs = Math.max(parser.retry, 100);
        }
        reason = "the server ended the stream";
      } finally {
        reader.cancel().catch(() => {});
      }
    } catch (e) {
      if (outer?.aborted) return;
      if (e instanceof QueenApiError) {
        // 503: past the watcher cap or Redis away; 429: the wrong-token
        // throttle; 5xx: a proxy between; 0: no answer. Any other refusal
        // (a malformed id, a wrong token) will not mend by waiting.
        if (e.status !== 0 && e.status !== 429 && e.status < 500) throw e;
        status = e.status;
        retryAfterMs = e.retryAfterMs;
        reason = e.message;
      } else if (e instanceof WatchProtocolError || e instanceof UnbuiltRequest) {
        throw e;
      } else {
        reason = ctl.signal.aborted && ctl.signal.reason instanceof Error ? ctl.signal.reason.message : describeFailure(e);
      }
    } finally {
      clearTimeout(idle);
      outer?.removeEventListener("abort", stop);
      ctl.abort();
    }
    if (outer?.aborted) return; // aborted while handling an event: no reconnection to tell of
    attempt++;
    const delayMs = retryDelay(attempt, retryAfterMs, policy);
    o.onReconnect?.({ attempt, delayMs, reason, status, after });
    try {
      await sleep(delayMs, outer);
    } catch {
      return;
    }
  }
}

/** An event whose data is not the protocol's JSON: the server and this client disagree, which waiting will not mend. */
export class WatchProtocolError extends Error {
  override name = "WatchProtocolError";
}

function parse<T>(data: string, id: string): T {
  try {
    return JSON.parse(data) as T;
  } catch {
    throw new WatchProtocolError(`GET ${path}: event ${id || "(no id)"}: data is not JSON`);
  }
}
