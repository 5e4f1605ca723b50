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

/**
 * A budget of bytes shared by concurrent work: `acquire(n)` waits until n bytes are free
 * (in order of asking) and gives back a release function, to be called once. A request
 * for more than the whole budget waits until nothing else holds any and then runs alone,
 * so nothing waits forever.
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

  async acquire(bytes: number): Promise<() => void> {
    const want = Math.min(Math.max(0, bytes), this.capacity);
    // Woken, the bytes are already counted (wake reserves them, so the next in line sees them).
    if (this.waiting.length > 0 || this.held + want > this.capacity) await new Promise<void>((go) => this.waiting.push({ bytes: want, go }));
    else this.held += want;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= want;
      this.wake();
    };
  }

  private wake(): void {
    while (this.waiting.length > 0 && this.held + this.waiting[0]!.bytes <= this.capacity) {
      const next = this.waiting.shift()!;
      this.held += next.bytes;
      next.go();
    }
  }
}
