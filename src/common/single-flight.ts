/**
 * Work that callers share by key, so that a file, a granule or a catalog record is
 * fetched or built once however many ask for it at the same time. Pure: no I/O, no clock
 * but the one passed in.
 */

/** One run per key while it is in flight: a caller asking for a key being run gets the same promise; it is forgotten once settled. */
export class SingleFlight<K, V> {
  private readonly running = new Map<K, Promise<V>>();

  run(key: K, work: () => Promise<V>): Promise<V> {
    let pending = this.running.get(key);
    if (!pending) {
      pending = work().finally(() => this.running.delete(key));
      this.running.set(key, pending);
    }
    return pending;
  }

  get size(): number {
    return this.running.size;
  }
}

/**
 * Promises remembered by key, at most `maxEntries` (the oldest goes first), each for at most
 * `ttlMs` when given: a rejected one is forgotten at once, so the next caller asks again.
 */
export class PromiseMemo<K, V> {
  private readonly entries = new Map<K, { value: Promise<V>; until: number }>();

  constructor(private readonly maxEntries: number, private readonly ttlMs = Infinity, private readonly now: () => number = Date.now) {}

  /** The remembered promise of `key`, or `make()`'s, remembered. */
  get(key: K, make: () => Promise<V>): Promise<V> {
    return this.peek(key) ?? this.set(key, make());
  }

  /** The remembered promise of `key`, if there is one still fresh. */
  peek(key: K): Promise<V> | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > this.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  has(key: K): boolean {
    return this.peek(key) !== undefined;
  }

  set(key: K, value: Promise<V>): Promise<V> {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    const entry = { value, until: this.now() + this.ttlMs };
    this.entries.set(key, entry);
    value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return value;
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
