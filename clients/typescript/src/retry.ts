/** How idempotent calls wait out a 503 or a request that got no answer. */
export interface RetryOptions {
  /** Requests in all, the first included; 1 never retries. Default 5. */
  attempts?: number;
  /** The first backoff, doubled at each further attempt. Default 250 ms. */
  baseDelayMs?: number;
  /** No wait is longer, a server's Retry-After included. Default 30 s. */
  maxDelayMs?: number;
}

export interface RetryInfo {
  method: string;
  path: string;
  /** The attempt that failed, from 1. */
  attempt: number;
  /** The failed attempt's status; 0 when no answer came. */
  status: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
}

export const retryDefaults: Required<RetryOptions> = { attempts: 5, baseDelayMs: 250, maxDelayMs: 30_000 };

/**
 * The wait after failed attempt n (from 1): the server's Retry-After when it
 * sent one, else an exponential backoff with jitter (half fixed, half random,
 * so many clients turned away together do not come back together); both
 * bounded by maxDelayMs.
 */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  o: Required<RetryOptions>,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, o.maxDelayMs);
  const full = Math.min(o.baseDelayMs * 2 ** (attempt - 1), o.maxDelayMs);
  return Math.round(full / 2 + (random() * full) / 2);
}

/** Resolves after ms, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
