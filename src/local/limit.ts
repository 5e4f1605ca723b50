/** At most `limit` calls of the wrapped function run at once; the rest wait their turn, in order. */
export function limitConcurrency<A extends unknown[], R>(limit: number, fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (...args: A) => {
    if (running >= limit) await new Promise<void>((turn) => waiting.push(turn));
    running += 1;
    try {
      return await fn(...args);
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };
}
