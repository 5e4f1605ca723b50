import { describe, expect, it } from 'vitest';
import { PromiseMemo, SingleFlight } from '../../src/common/single-flight.js';

describe('SingleFlight', () => {
  it('callers of a key in flight share one run; once it settles, the next caller runs again', async () => {
    const flights = new SingleFlight<string, number>();
    let runs = 0;
    let finish!: (n: number) => void;
    const work = () => { runs += 1; return new Promise<number>((resolve) => (finish = resolve)); };
    const [a, b] = [flights.run('k', work), flights.run('k', work)];
    expect([runs, flights.size]).toEqual([1, 1]);
    finish(7);
    expect(await Promise.all([a, b])).toEqual([7, 7]);
    expect(flights.size).toBe(0);
    const c = flights.run('k', work);
    finish(8);
    expect([await c, runs]).toEqual([8, 2]);
  });

  it('a failure reaches every caller of that run and is not kept', async () => {
    const flights = new SingleFlight<string, number>();
    const failing = flights.run('k', () => Promise.reject(new Error('no')));
    const joined = flights.run('k', () => Promise.resolve(1));
    await expect(failing).rejects.toThrow('no');
    await expect(joined).rejects.toThrow('no');
    expect(await flights.run('k', () => Promise.resolve(2))).toBe(2);
  });
});

describe('PromiseMemo', () => {
  it('remembers a promise per key, forgets a rejected one at once, and keeps at most its entries, the oldest going first', async () => {
    const memo = new PromiseMemo<string, number>(2);
    let made = 0;
    const make = (n: number) => () => { made += 1; return Promise.resolve(n); };
    expect(await memo.get('a', make(1))).toBe(1);
    expect(await memo.get('a', make(99))).toBe(1);
    await expect(memo.get('bad', () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    await Promise.resolve();
    expect(memo.has('bad')).toBe(false);
    expect(await memo.get('b', make(2))).toBe(2);
    expect(await memo.get('c', make(3))).toBe(3);
    expect([memo.has('a'), memo.has('b'), memo.has('c'), memo.size]).toEqual([false, true, true, 2]);
    expect(made).toBe(3);
  });

  it('an entry older than its ttl is asked for again', async () => {
    let now = 1_000;
    const memo = new PromiseMemo<string, number>(10, 500, () => now);
    expect(await memo.get('a', () => Promise.resolve(1))).toBe(1);
    now += 499;
    expect(await memo.get('a', () => Promise.resolve(2))).toBe(1);
    now += 1;
    expect(await memo.get('a', () => Promise.resolve(3))).toBe(3);
  });
});
