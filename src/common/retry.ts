/**
 * Retries with pauses, the one way this code base waits and tries again (the Schema
 * Registry client, committed Kafka reads, the local event source, the runner's idle
 * wait). A pause ends early when its signal aborts, so a stopping process never sits
 * out a backoff.
 */

/** Waits `ms`, or less if `signal` aborts first (then it resolves; the caller looks at the signal). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((done) => {
    const finish = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', finish);
      done();
    };
    const timer = setTimeout(finish, ms);
    signal?.addEventListener('abort', finish, { once: true });
  });
}

export interface RetryPolicy {
  /** The pause before retry n (1-based): a list (its length + 1 is the number of tries) or a function. */
  pausesMs: readonly number[] | ((retry: number) => number);
  /** Tries in all, for a function policy. */
  tries?: number;
  /** Stops retrying (the last error is thrown) once it aborts. */
  signal?: AbortSignal;
}

/** Doubling pauses from `firstMs`, at most `maxMs`: 100, 200, 400, … */
export function doubling(firstMs: number, maxMs: number): (retry: number) => number {
  return (retry) => Math.min(maxMs, firstMs * 2 ** (retry - 1));
}

export function triesOf(policy: RetryPolicy): number {
  return Array.isArray(policy.pausesMs) ? policy.pausesMs.length + 1 : (policy.tries ?? 1);
}

/**
 * Runs `work` until it succeeds, `retriable(error)` says no, the tries are used up or the
 * signal aborts; then the last error is thrown. `work` gets the try number (0-based).
 */
export async function retrying<T>(policy: RetryPolicy, retriable: (error: unknown) => boolean, work: (attempt: number) => Promise<T>): Promise<T> {
  const tries = triesOf(policy);
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      const pauses = policy.pausesMs;
      await pause(typeof pauses === 'function' ? pauses(attempt) : pauses[attempt - 1]!, policy.signal);
    }
    try {
      return await work(attempt);
    } catch (error) {
      if (attempt + 1 >= tries || policy.signal?.aborted || !retriable(error)) throw error;
    }
  }
}
