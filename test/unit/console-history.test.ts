/**
 * The console's history (src/console/history.ts) and its reader figures, against values
 * worked out by hand from their definitions in docs/console.md: the lag summed over
 * partitions whose LSO is known, offsets indexed per second between samples, and lag in
 * seconds interpolated between the samples whose LSOs lie on either side of the offset.
 */
import { describe, expect, it } from 'vitest';
import { chartPoints, lagSeconds, partitionKey, SampleHistory, type Sample } from '../../src/console/history.js';
import { cacheHitRatio } from '../../src/console/overview.js';

const p0 = partitionKey('clicks', 0);
const p1 = partitionKey('clicks', 1);
const point = (key: string, indexedStart: bigint, indexedEnd: bigint, lastStableOffset: bigint | null) => ({ key, indexedStart, indexedEnd, lastStableOffset });

describe('the console history', () => {
  it('keeps the last `capacity` samples oldest first, and refuses a sample older than the newest or a history of fewer than 2', () => {
    const history = new SampleHistory(3);
    for (const at of [1, 2, 3, 4, 5]) history.add({ at, partitions: [] });
    expect(history.samples.map((s) => s.at)).toEqual([3, 4, 5]);
    expect(() => history.add({ at: 4, partitions: [] })).toThrow('samples go forward in time: 4 comes before 5');
    expect(() => new SampleHistory(1)).toThrow('a history needs room for at least 2 samples, got 1');
  });

  it('plots the lag of the partitions whose LSO is known, and the offsets indexed per second since the sample before (a partition new in a sample adds nothing)', () => {
    const samples: Sample[] = [
      { at: 0, partitions: [point(p0, 0n, 0n, 20n), point(p1, 5n, 5n, 5n)] },
      { at: 2_000, partitions: [point(p0, 0n, 10n, 30n), point(p1, 5n, 5n, 7n), point(partitionKey('other', 0), 0n, 50n, 50n)] },
      // p1's backfill indexed 3 offsets below its start; its LSO is unknown now
      { at: 4_000, partitions: [point(p0, 0n, 30n, 30n), point(p1, 2n, 5n, null), point(partitionKey('other', 0), 0n, 50n, 50n)] },
    ];
    expect(chartPoints(samples)).toEqual([
      { at: 0, lagRecords: 20, offsetsPerSecond: null },
      { at: 2_000, lagRecords: 22, offsetsPerSecond: 5 },
      { at: 4_000, lagRecords: 0, offsetsPerSecond: 11.5 },
    ]);
  });

  it('lag in seconds: 0 with nothing waiting, null without an LSO, interpolated when the LSO passed the indexed end between samples, a lower bound when before them all', () => {
    const samples: Sample[] = [
      { at: 0, partitions: [point(p0, 0n, 0n, 100n)] },
      { at: 3_000, partitions: [point(p0, 0n, 0n, 130n)] },
    ];
    expect(lagSeconds(samples, p0, 130n, 130n, 6_000)).toEqual({ seconds: 0, atLeast: false });
    expect(lagSeconds(samples, p0, 109n, null, 6_000)).toBeNull();
    // offset 109 became stable when the LSO reached 110: a third of the way from 100 (t 0) to 130 (t 3 s)
    expect(lagSeconds(samples, p0, 109n, 130n, 6_000)).toEqual({ seconds: 5, atLeast: false });
    // the LSO rose past 135 only after the last sample: between it (130 at 3 s) and now (140 at 6 s)
    expect(lagSeconds(samples, p0, 134n, 140n, 6_000)).toEqual({ seconds: 1.5, atLeast: false });
    expect(lagSeconds(samples, p0, 50n, 130n, 6_000)).toEqual({ seconds: 6, atLeast: true });
    expect(lagSeconds([], p0, 50n, 130n, 6_000)).toEqual({ seconds: 0, atLeast: true });
  });

  it('cache hit ratio: hits of both caches over all their lookups, null before any', () => {
    expect(cacheHitRatio({ cacheHits: 3, cacheMisses: 1, chunkCacheHits: 1, chunkCacheMisses: 3 })).toBe(0.5);
    expect(cacheHitRatio({ cacheHits: 0, cacheMisses: 0, chunkCacheHits: 0, chunkCacheMisses: 0 })).toBeNull();
  });
});
