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

/** Why `ByteBudget.acquire` gave up waiting: its bounded wait ran out, or the work was abandoned. */
export class BudgetWaitError extends Error {
  override name = 'BudgetWaitError';
  constructor(readonly reason: 'timeout' | 'aborted', readonly waitedMs: number) {
    super(reason === 'timeout' ? `no budget came free within ${waitedMs} ms` : 'the work was abandoned while it waited for budget');
  }
}

export interface AcquireOptions {
  /** Give up (BudgetWaitError 'timeout') after waiting this long; the turn goes to the next in line. */
  waitMs?: number;
  /** Give up (BudgetWaitError 'aborted') when this aborts: work no one waits for must not hold a place in line. */
  signal?: AbortSignal;
}

/**
 * A budget of bytes shared by concurrent work: `acquire(n)` waits until n bytes are free
 * (in order of asking) and gives back a release function, to be called once. A request
 * for more than the whole budget waits until nothing else holds any and then runs alone,
 * so nothing waits forever. A wait may be bounded, or abandoned through a signal.
 */
export class ByteBudget {
  private held = 0;
  private readonly waiting: { bytes: number; go: () => void }[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isFinite(capacity) || capacity <= 0) throw new RangeError(`a byte budget must be a number of bytes > 0, got ${capacity}`);
  }

  get inUse(): number {
    return this.held;
  }

  /** Work waiting for its turn. */
  get queued(): number {
    return this.waiting.length;
  }

  async acquire(bytes: number, options: AcquireOptions = {}): Promise<() => void> {
    const want = Math.min(Math.max(0, bytes), this.capacity);
    if (options.signal?.aborted) throw new BudgetWaitError('aborted', 0);
    // Woken, the bytes are already counted (wake reserves them, so the next in line sees them).
    if (this.waiting.length > 0 || this.held + want > this.capacity) await this.wait(want, options);
    else this.held += want;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= want;
      this.wake();
    };
  }

  private wait(bytes: number, { waitMs, signal }: AcquireOptions): Promise<void> {
    const since = Date.now();
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const entry = { bytes, go: () => { settle(); resolve(); } };
      const leave = (reason: 'timeout' | 'aborted') => {
        const at = this.waiting.indexOf(entry);
        if (at < 0) return; // already woken: its bytes are counted and the caller will release them
        this.waiting.splice(at, 1);
        settle();
        reject(new BudgetWaitError(reason, Date.now() - since));
        // The one that left may have been at the head, holding back smaller requests behind it.
        this.wake();
      };
      const onAbort = () => leave('aborted');
      if (waitMs !== undefined && Number.isFinite(waitMs)) timer = setTimeout(() => leave('timeout'), waitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  private wake(): void {
    while (this.waiting.length > 0 && this.held + this.waiting[0]!.bytes <= this.capacity) {
      const next = this.waiting.shift()!;
      this.held += next.bytes;
      next.go();
    }
  }
}
