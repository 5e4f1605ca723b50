/**
 * The console's sampler (src/console/sampler.ts) as serve's /metrics uses it: `next` hands
 * out the first sample begun after the call, never one already under way, and takes no
 * status of its own while the timer runs; each sample's lag, records and seconds, against
 * values worked out by hand from the definitions (records: LSO − indexed_end; seconds:
 * since the partition was last seen caught up, 0 while it is, absent where the process
 * cannot date it), for the sampler's rows and for run's (src/table-topic/lag.ts).
 */
import { describe, expect, it } from 'vitest';
import { ConsoleSampler } from '../../src/console/sampler.js';
import { PartitionLags, type LagRow } from '../../src/table-topic/lag.js';
import type { PartitionStatus } from '../../src/table-topic/status.js';

const row = (table: string, partition: number, indexedEnd: bigint, lastStableOffset: bigint | null): LagRow => ({ table, partition, indexedEnd, lastStableOffset });

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

  it('lag of each sample: records LSO − indexed_end, seconds since the last sample that saw the partition caught up (0 while it is), none before any such sample, kept after the history dropped it', async () => {
    // one status per sample, 3 s apart; the history holds only the last 2 samples
    const statuses: LagRow[][] = [
      // clicks 0 caught up; clicks 1 behind from the first sample; views 0 caught up
      [row('clicks', 0, 10n, 10n), row('clicks', 1, 0n, 5n), row('views', 0, 5n, 5n)],
      // clicks 0 behind since the sample at 0 s; views 0's LSO unknown
      [row('clicks', 0, 10n, 25n), row('clicks', 1, 2n, 5n), row('views', 0, 5n, null)],
      // clicks 0 still behind (the sample at 0 s has left the history); clicks 1 caught up; views 0 behind since 0 s
      [row('clicks', 0, 20n, 30n), row('clicks', 1, 5n, 5n), row('views', 0, 5n, 8n)],
      // clicks 0 caught up (indexed_end past the LSO counts as caught up); clicks 1 behind since 6 s
      [row('clicks', 0, 31n, 30n), row('clicks', 1, 5n, 9n), row('views', 0, 8n, 8n)],
    ];
    let call = 0;
    let now = 0;
    const sampler = new ConsoleSampler(async () => statuses[call++] as PartitionStatus[], 60_000, 2, () => now);
    const lags = [];
    for (const at of [0, 3_000, 6_000, 9_000]) {
      now = at;
      await sampler.sample();
      lags.push((await sampler.latest()).lags);
    }
    expect(sampler.history.samples.map((s) => s.at)).toEqual([6_000, 9_000]);
    expect(lags).toEqual([
      [{ table: 'clicks', partition: 0, records: 0n, seconds: 0 }, { table: 'clicks', partition: 1, records: 5n }, { table: 'views', partition: 0, records: 0n, seconds: 0 }],
      [{ table: 'clicks', partition: 0, records: 15n, seconds: 3 }, { table: 'clicks', partition: 1, records: 3n }],
      [{ table: 'clicks', partition: 0, records: 10n, seconds: 6 }, { table: 'clicks', partition: 1, records: 0n, seconds: 0 }, { table: 'views', partition: 0, records: 3n, seconds: 6 }],
      [{ table: 'clicks', partition: 0, records: 0n, seconds: 0 }, { table: 'clicks', partition: 1, records: 4n, seconds: 3 }, { table: 'views', partition: 0, records: 0n, seconds: 0 }],
    ]);
  });

  it('run\'s lag (the same mapping, dated by the run\'s start): a partition not yet seen caught up is behind since then, one seen caught up since that time', () => {
    const lags = new PartitionLags(1_000);
    expect(lags.lags([row('clicks', 0, 0n, 7n), row('clicks', 1, 4n, 4n)], 5_000)).toEqual([
      { table: 'clicks', partition: 0, records: 7n, seconds: 4 },
      { table: 'clicks', partition: 1, records: 0n, seconds: 0 },
    ]);
    expect(lags.lags([row('clicks', 0, 7n, 7n), row('clicks', 1, 4n, 6n), row('clicks', 2, 0n, null)], 8_000)).toEqual([
      { table: 'clicks', partition: 0, records: 0n, seconds: 0 },
      { table: 'clicks', partition: 1, records: 2n, seconds: 3 },
    ]);
  });
});
