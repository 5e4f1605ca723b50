/**
 * The merge plan (src/compaction/plan.ts) against the model written from docs/design.md
 * (test/helpers/merge-model.ts), on seeded partitions of many shapes; and the bound on
 * write amplification the design states, on a simulated partition compacted as it grows.
 */
import { describe, expect, it } from 'vitest';
import { planMerges, sizeTier, type PlanFile } from '../../src/compaction/plan.js';
import { modelPlan, modelTier, type ModelFile } from '../helpers/merge-model.js';
import { seededRandom } from '../helpers/random.js';

const hour = 3_600_000;
const policyOf = (fileBytes: number, n: number, mergeAfterMs: number) => ({ fileBytes, mergeFiles: n, mergeAfterMs, granularity: 'hour' as const });

/** A partition's live files: ranges of one file mostly, some of two buckets, some gaps; buckets that move forward with late ones. */
function partition(seed: number): PlanFile[] {
  const random = seededRandom(seed);
  const files: PlanFile[] = [];
  let offset = BigInt(Math.floor(random() * 1000));
  let bucket = 0;
  let id = 1n;
  const count = 1 + Math.floor(random() * 60);
  for (let i = 0; i < count; i += 1) {
    if (random() < 0.1) bucket += hour;
    if (random() < 0.05) offset += BigInt(1 + Math.floor(random() * 50)); // a lost interval
    const end = offset + BigInt(1 + Math.floor(random() * 100));
    const bytes = random() < 0.1 ? Math.floor(random() * 5_000_000) : Math.floor(random() ** 3 * 200_000);
    files.push({ dataFileId: id++, startOffset: offset, endOffset: end, bucket, kafkaBytes: bytes });
    if (random() < 0.08) files.push({ dataFileId: id++, startOffset: offset, endOffset: end, bucket: bucket + hour, kafkaBytes: 1 + Math.floor(random() * 1000) });
    offset = end;
  }
  return files;
}

const asModel = (files: readonly PlanFile[]): ModelFile[] => files.map((f) => ({ id: f.dataFileId, start: f.startOffset, end: f.endOffset, bucket: f.bucket, bytes: f.kafkaBytes }));

describe('the merge plan', () => {
  it('names the merges the design text names, on 1,000 seeded partitions (young and aged buckets, two-bucket ranges, gaps)', () => {
    for (let seed = 1; seed <= 1000; seed += 1) {
      const random = seededRandom(seed * 7919);
      const files = partition(seed);
      const n = 2 + Math.floor(random() * 9);
      const fileBytes = [50_000, 1_000_000, 128 * 1024 * 1024][Math.floor(random() * 3)]!;
      const mergeAfterMs = Math.floor(random() * hour);
      const now = Math.floor(random() * 30 * hour);
      // at a random time, and at 0 (every bucket young: merges by tier only)
      for (const at of [now, 0]) {
        const planned = planMerges(files, policyOf(fileBytes, n, mergeAfterMs), at).map((m) => m.sources);
        const expected = modelPlan(asModel(files), { fileBytes, n, mergeAfterMs, bucketMs: hour }, at).map((piece) => piece.map((f) => f.id));
        expect(planned, `seed ${seed} at ${at}`).toEqual(expected);
      }
    }
  });

  it('every merge: two files or more, consecutive ranges of one file each in one bucket, at most file_bytes; no two merges share a file', () => {
    for (let seed = 1; seed <= 300; seed += 1) {
      const files = partition(seed);
      const merges = planMerges(files, policyOf(1_000_000, 3, 0), 40 * hour);
      const used = new Set<bigint>();
      for (const merge of merges) {
        expect(merge.sources.length).toBeGreaterThanOrEqual(2);
        expect(merge.kafkaBytes).toBeLessThanOrEqual(1_000_000);
        const sources = merge.sources.map((id) => files.find((f) => f.dataFileId === id)!);
        expect(sources[0]!.startOffset).toBe(merge.startOffset);
        expect(sources.at(-1)!.endOffset).toBe(merge.endOffset);
        for (const [i, f] of sources.entries()) {
          expect(files.filter((g) => g.startOffset === f.startOffset)).toHaveLength(1);
          expect(f.bucket).toBe(merge.bucket);
          if (i > 0) expect(f.startOffset).toBe(sources[i - 1]!.endOffset);
          expect(used.has(f.dataFileId)).toBe(false);
          used.add(f.dataFileId);
        }
      }
    }
  });

  it('tiers: N^t <= bytes < N^(t+1), as the model counts them', () => {
    for (const n of [2, 3, 10]) for (const bytes of [0, 1, n - 1, n, n * n - 1, n * n, 60_000, 134_217_728]) expect(sizeTier(bytes, n)).toBe(modelTier(bytes, n));
  });

  it('off (merge_files 0) merges nothing', () => {
    expect(planMerges(partition(3), policyOf(1e9, 0, 0), 1e15)).toEqual([]);
  });

  it('write amplification stays within the bound of docs/design.md: a partition sealing a file a minute, compacted every minute, reads each record at most ceil(log_N(file_bytes / first bytes)) + 1 times in merges', () => {
    for (const [n, fileBytes, bytesPerFile] of [[10, 128 * 1024 * 1024, 60_000], [4, 10_000_000, 3_000], [2, 1_000_000, 1_000]] as const) {
      let files: (PlanFile & { reads: Map<number, number> })[] = [];
      const reads = new Map<number, number>(); // record (file of origin) -> merges it was in
      let offset = 0n;
      let id = 1n;
      const minute = 60_000;
      for (let t = 0; t < 6 * hour; t += minute) {
        const origin = Number(id);
        files.push({ dataFileId: id++, startOffset: offset, endOffset: offset + 60n, bucket: Math.floor(t / hour) * hour, kafkaBytes: bytesPerFile, reads: new Map([[origin, 0]]) });
        offset += 60n;
        for (const merge of planMerges(files, policyOf(fileBytes, n, 10 * minute), t + minute)) {
          const sources = files.filter((f) => merge.sources.includes(f.dataFileId));
          const merged = new Map<number, number>();
          for (const source of sources) for (const [origin, count] of source.reads) merged.set(origin, count + 1);
          for (const [origin, count] of merged) reads.set(origin, count);
          files = files.filter((f) => !merge.sources.includes(f.dataFileId));
          files.push({ dataFileId: id++, startOffset: merge.startOffset, endOffset: merge.endOffset, bucket: merge.bucket, kafkaBytes: merge.kafkaBytes, reads: merged });
          files.sort((a, b) => (a.startOffset < b.startOffset ? -1 : 1));
        }
      }
      const bound = Math.ceil(Math.log(fileBytes / bytesPerFile) / Math.log(n)) + 1;
      expect(Math.max(...reads.values()), `N ${n}`).toBeLessThanOrEqual(bound);
      expect(Math.max(...reads.values())).toBeGreaterThanOrEqual(1);
    }
  });
});
