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

/** Retry-After in milliseconds: whole seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** A request that got no answer, in one line: fetch hides the reason (ECONNREFUSED, ...) in its cause. */
export function describeFailure(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = e.cause instanceof Error ? e.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return cause ? `${e.message}: ${typeof code === "string" ? code : cause.message}` : e.message;
}
