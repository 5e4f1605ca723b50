import { describe, expect, it } from 'vitest';
import { ByteBudget } from '../../src/common/limit.js';

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
});
