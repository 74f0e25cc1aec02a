/**
 * An answer of the claims API that was not a success, or a request that got
 * no answer (`status` 0). It carries what the caller decides on: the status,
 * the field a 400 names, how long the server asked to wait. It never holds
 * the token, the request's headers or its body.
 */
export class QueenApiError extends Error {
  override name = "QueenApiError";
  /** The HTTP status; 0 when no answer came (refused, reset, timed out). */
  readonly status: number;
  /** The field, query parameter or header the server blames, when it names one. */
  readonly field: string | undefined;
  /** The request's method and path (with its query), e.g. `PUT /v1/repos/hive/t27/dispatches/9`. */
  readonly method: string;
  readonly path: string;
  /** The server's Retry-After, in milliseconds, when it sent one. */
  readonly retryAfterMs: number | undefined;
  /** How many requests were made before giving up (more than 1 after retries). */
  readonly attempts: number;

  constructor(init: {
    method: string;
    path: string;
    status: number;
    message: string;
    field?: string | undefined;
    retryAfterMs?: number | undefined;
    attempts?: number;
    cause?: unknown;
  }) {
    const field = init.field ? ` (field ${init.field})` : "";
    const status = init.status ? `${init.status}` : "no answer";
    super(`${init.method} ${init.path}: ${status}: ${init.message}${field}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.field = init.field || undefined;
    this.method = init.method;
    this.path = init.path;
    this.retryAfterMs = init.retryAfterMs;
    this.attempts = init.attempts ?? 1;
  }

  /** The server did not know the row or route. */
  get notFound(): boolean {
    return this.status === 404;
  }
}

/** The longest error text taken from a body that is not the API's JSON. */
const maxErrorText = 300;

/** Reads an error answer: the API's `{"error", "field"}`, or the start of whatever else came. */
export async function errorFrom(res: Response, method: string, path: string, attempts: number): Promise<QueenApiError> {
  let text = "";
  try {
    text = await res.text();
  } catch {
    // the status is the news; a body cut short adds nothing
  }
  let message = text.replace(/\s+/g, " ").trim().slice(0, maxErrorText) || res.statusText || "no body";
  let field: string | undefined;
  try {
    const body = JSON.parse(text) as unknown;
    if (body && typeof body === "object" && typeof (body as { error?: unknown }).error === "string") {
      message = (body as { error: string }).error;
      const f = (body as { field?: unknown }).field;
      if (typeof f === "string" && f) field = f;
    }
  } catch {
    // not JSON: a proxy's page, kept short above
  }
  return new QueenApiError({
    method,
    path,
    status: res.status,
    message,
    field,
    retryAfterMs: retryAfterMs(res.headers.get("Retry-After")),
    attempts,
  });
}

const httpDate = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * Retry-After in milliseconds: whole seconds or an IMF-fixdate (RFC 9110's
 * HTTP-date); undefined when absent or anything else, which Date.parse would
 * have read loosely ("1.5" as a date long gone, so no wait at all).
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!httpDate.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * A request fetch would refuse to build: a header value it does not take.
 * Its own error quotes the value (for Authorization, the token), so this
 * one names only the error's kind; it is never retried, as it cannot mend.
 */
export class UnbuiltRequest extends TypeError {
  constructor(e: unknown) {
    super(`the request could not be built: ${e instanceof Error ? e.name : typeof e}`);
  }
}

/** Builds the headers as fetch will before anything is sent; throws UnbuiltRequest when they cannot be. */
export function checkHeaders(h: Record<string, string>): void {
  try {
    new Headers(h);
  } catch (e) {
    throw new UnbuiltRequest(e);
  }
}

/**
 * Whether e was thrown before anything was sent: an UnbuiltRequest, or a
 * TypeError with neither the cause (Node) nor the code (Bun) a failed
 * connection carries. Its text may quote a header value, so it is neither
 * shown nor kept as a cause, and it is not retried.
 */
export function unbuilt(e: unknown): boolean {
  if (e instanceof UnbuiltRequest) return true;
  return e instanceof TypeError && e.cause === undefined && typeof (e as { code?: unknown }).code !== "string";
}

/** A request that got no answer, in one line: fetch hides the reason (ECONNREFUSED, ...) in its cause. */
export function describeFailure(e: unknown): string {
  if (e instanceof UnbuiltRequest) return e.message;
  if (unbuilt(e)) return `the request could not be built: ${(e as Error).name}`;
  if (!(e instanceof Error)) return "the request failed";
  const cause = e.cause instanceof Error ? e.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return cause ? `${e.message}: ${typeof code === "string" ? code : cause.message}` : e.message;
}
