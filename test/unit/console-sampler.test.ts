/**
 * The console's sampler (src/console/sampler.ts) as serve's /metrics uses it: `next` hands
 * out the first sample begun after the call, never one already under way, and takes no
 * status of its own while the timer runs.
 */
import { describe, expect, it } from 'vitest';
import { ConsoleSampler } from '../../src/console/sampler.js';
import type { PartitionStatus } from '../../src/tables/status.js';

/** A status whose calls the test ends one by one; each call's rows name its number. */
function controlledStatus() {
  const calls: { finish: () => void; fail: (error: Error) => void }[] = [];
  const status = () => new Promise<PartitionStatus[]>((resolve, reject) => {
    const call = calls.length + 1;
    calls.push({ finish: () => resolve([{ table: `call ${call}` } as PartitionStatus]), fail: reject });
  });
  return { calls, status };
}

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('the console sampler', () => {
  it('next: while the timer runs, the sample begun after the call (not the one under way), with no status taken for it', async () => {
    const { calls, status } = controlledStatus();
    const sampler = new ConsoleSampler(status, 50);
    sampler.start();
    try {
      expect(calls).toHaveLength(1);
      const next = sampler.next();
      calls[0]!.finish();
      await until(() => calls.length === 2); // the timer's next tick, 50 ms on
      calls[1]!.finish();
      expect((await next).rows.map((r) => r.table)).toEqual(['call 2']);
      expect(calls).toHaveLength(2);
    } finally {
      await until(() => calls.length >= 2);
      for (const call of calls) call.finish();
      await sampler.stop();
    }
  });

  it('next: a stopped sampler takes the sample at once, after the one under way; a failed one is the caller\'s error', async () => {
    const { calls, status } = controlledStatus();
    const sampler = new ConsoleSampler(status, 60_000);
    const first = sampler.sample();
    const next = sampler.next();
    calls[0]!.finish();
    await first;
    await until(() => calls.length === 2);
    calls[1]!.finish();
    expect((await next).rows.map((r) => r.table)).toEqual(['call 2']);
    const failing = sampler.next();
    await until(() => calls.length === 3);
    calls[2]!.fail(new Error('Kafka does not answer'));
    await expect(failing).rejects.toThrow('Kafka does not answer');
  });
});
