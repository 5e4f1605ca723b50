import { describe, expect, it } from 'vitest';
import { doubling, pause, retrying } from '../../src/common/retry.js';

describe('retrying', () => {
  it('tries once more than it has pauses, then throws the last error; a success ends it', async () => {
    const seen: number[] = [];
    await expect(retrying({ pausesMs: [1, 1] }, () => true, async (attempt) => { seen.push(attempt); throw new Error(`try ${attempt}`); })).rejects.toThrow('try 2');
    expect(seen).toEqual([0, 1, 2]);
    expect(await retrying({ pausesMs: [1, 1] }, () => true, async (attempt) => (attempt < 1 ? Promise.reject(new Error('no')) : 'yes'))).toBe('yes');
  });

  it('does not retry an error it is told is final, nor after its signal aborts', async () => {
    let tries = 0;
    await expect(retrying({ pausesMs: [1, 1] }, () => false, async () => { tries++; throw new Error('final'); })).rejects.toThrow('final');
    expect(tries).toBe(1);
    const stop = new AbortController();
    stop.abort();
    tries = 0;
    await expect(retrying({ pausesMs: [60_000], signal: stop.signal }, () => true, async () => { tries++; throw new Error('stopped'); })).rejects.toThrow('stopped');
    expect(tries).toBe(1);
  });

  it('a pause ends when its signal aborts; doubling pauses stop at their cap', async () => {
    const stop = new AbortController();
    const paused = pause(60_000, stop.signal).then(() => 'ended');
    stop.abort();
    expect(await paused).toBe('ended');
    expect([1, 2, 3, 4, 5, 6].map(doubling(100, 2000))).toEqual([100, 200, 400, 800, 1600, 2000]);
  });
});
