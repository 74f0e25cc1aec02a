import { QueenApiError, UnbuiltRequest, checkHeaders, describeFailure, errorFrom, unbuilt } from "./errors.js";
import { type RetryInfo, type RetryOptions, retryDefaults, retryDelay, sleep } from "./retry.js";
import type {
  Admission,
  AuditList,
  AuditQuery,
  Candidate,
  ClaimAnswer,
  ClaimDetail,
  ClaimList,
  ClaimView,
  Deleted,
  DispatchPatch,
  ExportPush,
  HeldPaths,
  ListClaimsQuery,
  OverrideAnswer,
} from "./types.js";
import { type WatchEvent, type WatchOptions, watch } from "./watch.js";

export interface ClientOptions {
  /** The claims API, QUEEN_API_URL (e.g. `http://127.0.0.1:8081`): absolute http(s), a trailing `/v1` accepted. */
  baseUrl: string;
  /** QUEEN_API_TOKEN. Sent only in the Authorization header; never in an error or a log line. */
  token: string;
  /** Names the writer in the audit (`X-Queen-Source`), e.g. `queen`. */
  source?: string;
  /** Waiting out 503s and unanswered requests of idempotent calls. */
  retry?: RetryOptions;
  /** Told of each retry before its wait, to log it. */
  onRetry?: (info: RetryInfo) => void;
  /** One request's limit, the wait for the whole answer included. Default 30 s. */
  timeoutMs?: number;
  /** The fetch to use; the platform's by default (Node 20+, Bun). */
  fetch?: typeof fetch;
}

/** Per call: a signal ends the call and any wait between its attempts. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** The filters and page of GET /v1/claims, in camelCase. */
export interface ListClaimsOptions extends CallOptions {
  repo?: string;
  claimsIssue?: boolean;
  claim?: ListClaimsQuery["claim"];
  /** Rows per page, 1 to 1000 (the server's default 100). */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface OverrideOptions extends CallOptions {
  /** Why; required, recorded in the audit. */
  reason: string;
  /**
   * The row version the decision was made on (a view's `version`): when the
   * row has moved on since, the server answers 409 naming `version` and
   * writes nothing. With it the call is retried on a 503; without it, only
   * on a 429 (never read), since a repeat could land on a newer attempt.
   */
  version?: number;
}

export type AuditOptions = CallOptions & AuditQuery;

interface Request {
  method: "GET" | "PUT" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Safe to send again after a 503 or no answer. */
  idempotent: boolean;
  /** A single attempt, whatever the failure (the caller retries). */
  once?: boolean;
  signal?: AbortSignal | undefined;
}

/**
 * QueenClient calls queen-app's claims API (docs/api.md, docs/openapi.yaml).
 * Each method is one route; every answer is typed from the description.
 * A refusal throws QueenApiError; idempotent calls wait out a 503 (honouring
 * Retry-After) and a request that got no answer, a bounded number of times.
 */
export class QueenClient {
  readonly baseUrl: string;
  // Private so that neither inspecting nor serializing the client shows it.
  readonly #token: string;
  readonly #source: string | undefined;
  readonly #retry: Required<RetryOptions>;
  readonly #onRetry: ((info: RetryInfo) => void) | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(o: ClientOptions) {
    if (!o.baseUrl) throw new TypeError("baseUrl: required (QUEEN_API_URL)");
    if (!o.token) throw new TypeError("token: required (QUEEN_API_TOKEN)");
    // Visible ASCII only (RFC 6750's b64token is a subset of it): fetch's
    // error for a CR, LF or NUL would quote the token. Not repeated here.
    if (!/^[\x21-\x7e]+$/.test(o.token)) {
      throw new TypeError("token: may hold only visible ASCII (0x21-0x7E), as a bearer token does (QUEEN_API_TOKEN)");
    }
    this.baseUrl = apiBase(o.baseUrl);
    this.#token = o.token;
    this.#source = o.source;
    this.#retry = { ...retryDefaults, ...o.retry };
    if (!(this.#retry.attempts >= 1)) throw new TypeError("retry.attempts: must be at least 1");
    this.#onRetry = o.onRetry;
    this.#timeoutMs = o.timeoutMs ?? 30_000;
    this.#fetch = o.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** PUT /v1/repos/{owner}/{repo}/dispatches/{issue}: upserts the Queen-owned fields of the row. */
  upsertDispatch(repo: string, issue: number, patch: DispatchPatch, o: CallOptions = {}): Promise<ClaimAnswer> {
    return this.#call({ method: "PUT", path: rowPath(repo, "dispatches", issue), body: patch, idempotent: true, signal: o.signal });
  }

  /** GET /v1/repos/{owner}/{repo}/claims/{issue}: the claim view, keep, explanation and `history` newest entries. */
  claim(repo: string, issue: number, o: CallOptions & { history?: number } = {}): Promise<ClaimDetail> {
    return this.#call({
      method: "GET",
      path: rowPath(repo, "claims", issue),
      query: { history: o.history },
      idempotent: true,
      signal: o.signal,
    });
  }

  /** GET /v1/claims: one page of claim views; follow `next_cursor` until "" (or use allClaims). */
  listClaims(o: ListClaimsOptions = {}): Promise<ClaimList> {
    return this.#call({
      method: "GET",
      path: "/v1/claims",
      query: { repo: o.repo, claims_issue: o.claimsIssue, claim: o.claim, limit: o.limit, cursor: o.cursor },
      idempotent: true,
      signal: o.signal,
    });
  }

  /** Every claim view matching the filters, page after page (a page may be short, even empty). */
  async *allClaims(o: Omit<ListClaimsOptions, "cursor"> = {}): AsyncGenerator<ClaimView> {
    let cursor: string | undefined;
    do {
      const page = await this.listClaims({ ...o, cursor });
      yield* page.claims;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /** GET /v1/repos/{owner}/{repo}/held-paths: every path held by a row of the repository. */
  heldPaths(repo: string, o: CallOptions = {}): Promise<HeldPaths> {
    return this.#call({ method: "GET", path: `${repoPath(repo)}/held-paths`, idempotent: true, signal: o.signal });
  }

  /** POST /v1/repos/{owner}/{repo}/admission: the review-first card for a round; reads only, so retried. */
  admission(repo: string, candidates: Candidate[], o: CallOptions = {}): Promise<Admission> {
    return this.#call({
      method: "POST",
      path: `${repoPath(repo)}/admission`,
      body: { candidates },
      idempotent: true,
      signal: o.signal,
    });
  }

  /** POST .../claims/{issue}/free: a person's free, with a reason. */
  free(repo: string, issue: number, o: OverrideOptions): Promise<OverrideAnswer> {
    return this.#override(repo, issue, "free", o);
  }

  /** POST .../claims/{issue}/keep: a person's keep, with a reason. */
  keep(repo: string, issue: number, o: OverrideOptions): Promise<OverrideAnswer> {
    return this.#override(repo, issue, "keep", o);
  }

  #override(repo: string, issue: number, what: "free" | "keep", o: OverrideOptions): Promise<OverrideAnswer> {
    const body: { reason: string; version?: number } = { reason: o.reason };
    if (o.version !== undefined) body.version = o.version;
    return this.#call({
      method: "POST",
      path: `${rowPath(repo, "claims", issue)}/${what}`,
      body,
      idempotent: o.version !== undefined,
      signal: o.signal,
    });
  }

  /** DELETE /v1/repos/{owner}/{repo}/dispatches/{issue}: removes the row; its history stays. */
  deleteDispatch(repo: string, issue: number, o: CallOptions & { reason?: string } = {}): Promise<Deleted> {
    return this.#call({
      method: "DELETE",
      path: rowPath(repo, "dispatches", issue),
      query: { reason: o.reason },
      idempotent: true,
      signal: o.signal,
    });
  }

  /** POST .../exports/{issue}/push: queues an export push of the row's judged head (a repeat finds it queued). */
  pushExport(repo: string, issue: number, o: CallOptions & { dryRun?: boolean } = {}): Promise<ExportPush> {
    return this.#call({
      method: "POST",
      path: `${rowPath(repo, "exports", issue)}/push`,
      body: o.dryRun ? { dry_run: true } : {},
      idempotent: true,
      signal: o.signal,
    });
  }

  /** GET /v1/audit: the newest matching entries, newest last. */
  audit(o: AuditOptions = {}): Promise<AuditList> {
    const { signal, ...query } = o;
    return this.#call({ method: "GET", path: "/v1/audit", query, idempotent: true, signal });
  }

  /**
   * GET /v1/events as an async iterator of `change` and `reset` events. It
   * reconnects on its own with Last-Event-ID after a dropped connection, a
   * server restart, a 503 or a 429, with backoff, so no change is lost or repeated
   * while the audit stream still holds it; a `reset` says it no longer did.
   * It ends when `signal` aborts or the loop breaks; any other 4xx throws.
   */
  watch(o: WatchOptions = {}): AsyncGenerator<WatchEvent> {
    return watch(
      {
        url: (path) => this.#url(path),
        headers: () => this.#headers(),
        fetch: this.#fetch,
        // One attempt: watch waits out a failure as it does the stream's.
        tail: async (signal) => {
          const page = await this.#call<AuditList>({ method: "GET", path: "/v1/audit", query: { limit: 1 }, idempotent: true, signal, once: true });
          return page.entries.at(-1)?.id;
        },
      },
      o,
    );
  }

  #url(path: string, query?: Request["query"]): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined) q.set(k, String(v));
    }
    const qs = q.toString();
    return this.baseUrl + path + (qs ? `?${qs}` : "");
  }

  #headers(): Record<string, string> {
    const h: Record<string, string> = { Authorization: `Bearer ${this.#token}`, Accept: "application/json" };
    if (this.#source) h["X-Queen-Source"] = this.#source;
    return h;
  }

  async #call<T>(r: Request): Promise<T> {
    const url = this.#url(r.path, r.query);
    const shown = url.slice(this.baseUrl.length);
    const headers = this.#headers();
    let body: string | undefined;
    if (r.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(r.body);
    }
    checkHeaders(headers);
    const attempts = r.once ? 1 : this.#retry.attempts;
    for (let attempt = 1; ; attempt++) {
      let err: QueenApiError;
      const ctl = new AbortController();
      const timer = setTimeout(() => ctl.abort(new Error(`no answer within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      const stop = () => ctl.abort(r.signal?.reason);
      r.signal?.addEventListener("abort", stop, { once: true });
      try {
        if (r.signal?.aborted) throw r.signal.reason;
        const res = await this.#fetch(url, { method: r.method, headers, body, signal: ctl.signal, redirect: "manual" });
        if (res.ok) return (await res.json()) as T;
        err = await errorFrom(res, r.method, shown, attempt);
      } catch (e) {
        if (r.signal?.aborted) throw r.signal.reason;
        // Thrown before sending, its text may quote a header: not kept, not retried.
        if (unbuilt(e)) throw e instanceof UnbuiltRequest ? e : new UnbuiltRequest(e);
        err = new QueenApiError({
          method: r.method,
          path: shown,
          status: 0,
          message: describeFailure(e),
          attempts: attempt,
          cause: e,
        });
      } finally {
        clearTimeout(timer);
        r.signal?.removeEventListener("abort", stop);
      }
      // A 429 (the wrong-token throttle) is refused before the request is
      // read, so even a free or keep without a version may be sent again.
      const retryable = err.status === 429 || (r.idempotent && (err.status === 503 || err.status === 0));
      if (!retryable || attempt >= attempts) throw err;
      const delayMs = retryDelay(attempt, err.retryAfterMs, this.#retry);
      this.#onRetry?.({ method: r.method, path: shown, attempt, status: err.status, delayMs });
      await sleep(delayMs, r.signal);
    }
  }
}

/**
 * apiBase is baseUrl without its trailing slashes and a trailing `/v1` (the
 * routes carry it). It throws, naming baseUrl and not its value, unless
 * baseUrl is an absolute http(s) URL: without a scheme fetch could never
 * reach it, and the call would only fail after its retries.
 */
function apiBase(baseUrl: string): string {
  let u: URL | undefined;
  try {
    u = new URL(baseUrl);
  } catch {
    // reported below
  }
  if (!u || (u.protocol !== "http:" && u.protocol !== "https:") || !u.host) {
    throw new TypeError("baseUrl: must be an absolute http:// or https:// URL, such as http://127.0.0.1:8081 (QUEEN_API_URL)");
  }
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}

/** `/v1/repos/{owner}/{repo}`; the server judges the names, this only needs two of them. */
export function repoPath(repo: string): string {
  const parts = repo.split("/");
  // "." and ".." would be read as path steps; the server refuses them as names too.
  if (parts.length !== 2 || !parts[0] || !parts[1] || parts.some((p) => p === "." || p === "..")) {
    throw new TypeError(`repo: ${JSON.stringify(repo)} is not owner/name`);
  }
  return `/v1/repos/${encodeURIComponent(parts[0])}/${encodeURIComponent(parts[1])}`;
}

function rowPath(repo: string, what: "dispatches" | "claims" | "exports", issue: number): string {
  return `${repoPath(repo)}/${what}/${encodeURIComponent(String(issue))}`;
}
