import { describe, expect, it } from 'vitest';
import { BudgetWaitError, ByteBudget } from '../../src/common/limit.js';

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('ByteBudget: what responses in flight may hold', () => {
  it('admits in order of asking while the bytes fit, and the next ones as bytes are given back', async () => {
    const budget = new ByteBudget(10);
    const order: string[] = [];
    const a = await budget.acquire(6);
    const b = budget.acquire(6).then((release) => (order.push('b'), release));
    const c = budget.acquire(1).then((release) => (order.push('c'), release));
    await settled();
    // c would fit, but b asked first: no overtaking, so a large request is not starved
    expect(order).toEqual([]);
    expect(budget.inUse).toBe(6);
    a();
    await settled();
    expect(order).toEqual(['b', 'c']);
    expect(budget.inUse).toBe(7);
    (await b)();
    (await c)();
    expect(budget.inUse).toBe(0);
  });

  it('a request larger than the whole budget runs alone, and a release given twice counts once', async () => {
    const budget = new ByteBudget(10);
    const small = await budget.acquire(3);
    let big: (() => void) | undefined;
    void budget.acquire(50).then((release) => (big = release));
    await settled();
    expect(big).toBeUndefined();
    small();
    small();
    await settled();
    expect(budget.inUse).toBe(10);
    big!();
    expect(budget.inUse).toBe(0);
  });

  it('a wait that is abandoned, or runs out, leaves the line and lets the ones behind it through', async () => {
    const budget = new ByteBudget(10);
    const held = await budget.acquire(8);
    const gone = new AbortController();
    const abandoned = budget.acquire(5, { signal: gone.signal }).catch((e: unknown) => e);
    const bounded = budget.acquire(5, { waitMs: 1 }).catch((e: unknown) => e);
    let small: (() => void) | undefined;
    void budget.acquire(2).then((release) => (small = release));
    expect(budget.queued).toBe(3);
    gone.abort();
    expect(await abandoned).toMatchObject({ name: 'BudgetWaitError', reason: 'aborted' });
    const timedOut = await bounded;
    expect(timedOut).toBeInstanceOf(BudgetWaitError);
    expect((timedOut as BudgetWaitError).reason).toBe('timeout');
    await settled();
    // the 2 bytes fit beside the 8 once the two ahead of them left
    expect(small).toBeDefined();
    expect(budget.queued).toBe(0);
    held();
    small!();
    expect(budget.inUse).toBe(0);
    await expect(budget.acquire(1, { signal: gone.signal })).rejects.toMatchObject({ reason: 'aborted' });
  });
});
