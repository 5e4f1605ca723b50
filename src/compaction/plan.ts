/**
 * Which files of a partition to merge (issue 49): pure, from the partition's live files,
 * the table's settings and the clock. The policy and its bound on write amplification are
 * docs/design.md's "Files that grow with age"; test/helpers/merge-model.ts is written from
 * that text, and test/unit/compaction-plan.test.ts holds this code to it.
 *
 * - A merge takes consecutive ranges of one file each, all in one time bucket: a range
 *   with files in two buckets, a gap (a lost interval) or a file of another bucket ends a
 *   run, and no merge crosses it.
 * - While a run is young (its bucket ended less than `merge_after` ago, or its newest file
 *   was committed less than `merge_after` ago), a merge takes `merge_files` consecutive
 *   files of one size tier (tier t: Kafka bytes in [N^t, N^(t+1)), N = merge_files), if
 *   together they hold at most `file_bytes`.
 * - Once it has aged, each run is cut greedily from its start into pieces of at most
 *   `file_bytes`; every piece of two files or more is merged.
 */
import type { Granularity } from '../table/settings.js';
import { bucketLengthMs } from '../ranges/buckets.js';

/** A live file as the plan needs it (src/catalog/merges.ts `MergeCandidate` is one). */
export interface PlanFile {
  dataFileId: bigint;
  startOffset: bigint;
  endOffset: bigint;
  /** Start of its time bucket, epoch ms. */
  bucket: number;
  /** Key + value + header bytes of its records. */
  kafkaBytes: number;
  /** When it was committed, epoch ms. */
  createdAt: number;
}

export interface MergePolicy {
  /** `file_bytes`: no merged file holds more Kafka bytes than one range may. */
  fileBytes: number;
  /** `merge_files` (N); 0: no merges. */
  mergeFiles: number;
  /** `merge_after`, ms. */
  mergeAfterMs: number;
  granularity: Granularity;
}

export interface PlannedMerge {
  startOffset: bigint;
  endOffset: bigint;
  bucket: number;
  /** The files it replaces, in offset order: exactly the live files of its offsets. */
  sources: bigint[];
  kafkaBytes: number;
  /** Planned because its bucket has aged (not by tier). */
  aged: boolean;
}


/** The size tier of a file of `bytes` Kafka bytes: the t with N^t <= bytes < N^(t+1) (bytes below 1 count as 1). */
export function sizeTier(bytes: number, mergeFiles: number): number {
  let tier = 0;
  for (let rest = Math.max(1, Math.floor(bytes)); rest >= mergeFiles; rest = Math.floor(rest / mergeFiles)) tier += 1;
  return tier;
}

/** Runs of consecutive single-file ranges of one bucket, in offset order (files sorted by offset, then bucket). */
export function mergeRuns(files: readonly PlanFile[]): PlanFile[][] {
  const runs: PlanFile[][] = [];
  let run: PlanFile[] = [];
  for (let i = 0; i < files.length; ) {
    let j = i + 1;
    while (j < files.length && files[j]!.startOffset === files[i]!.startOffset) j += 1;
    const single = j === i + 1;
    const file = files[i]!;
    const last = run.at(-1);
    if (single && last && last.endOffset === file.startOffset && last.bucket === file.bucket) {
      run.push(file);
    } else {
      if (run.length > 1) runs.push(run);
      run = single ? [file] : [];
    }
    i = j;
  }
  if (run.length > 1) runs.push(run);
  return runs;
}

/** The merges to make now, in offset order; none overlaps another. */
export function planMerges(files: readonly PlanFile[], policy: MergePolicy, now: number): PlannedMerge[] {
  if (policy.mergeFiles < 2) return [];
  const merges: PlannedMerge[] = [];
  for (const run of mergeRuns(files)) {
    const bucket = run[0]!.bucket;
    // Files still arriving in a bucket long past (history indexed now, a backfill) keep its
    // runs young: an aged merge of a run that still grows would re-read it at every pass.
    const newest = Math.max(...run.map((file) => file.createdAt));
    const aged = now >= bucket + bucketLengthMs(policy.granularity) + policy.mergeAfterMs && now >= newest + policy.mergeAfterMs;
    const pieces = aged ? agedPieces(run, policy.fileBytes) : tierPieces(run, policy);
    for (const piece of pieces) {
      merges.push({
        startOffset: piece[0]!.startOffset,
        endOffset: piece.at(-1)!.endOffset,
        bucket,
        sources: piece.map((file) => file.dataFileId),
        kafkaBytes: piece.reduce((sum, file) => sum + file.kafkaBytes, 0),
        aged,
      });
    }
  }
  return merges;
}

/** An aged run cut greedily into pieces of at most `fileBytes`; the pieces of two files or more. */
function agedPieces(run: readonly PlanFile[], fileBytes: number): PlanFile[][] {
  const pieces: PlanFile[][] = [];
  let piece: PlanFile[] = [];
  let bytes = 0;
  for (const file of run) {
    if (piece.length > 0 && bytes + file.kafkaBytes > fileBytes) {
      if (piece.length > 1) pieces.push(piece);
      piece = [];
      bytes = 0;
    }
    piece.push(file);
    bytes += file.kafkaBytes;
  }
  if (piece.length > 1) pieces.push(piece);
  return pieces;
}

/** A young run: each group of consecutive files of one tier, cut from its start into pieces of N; the whole pieces that fit `fileBytes`. */
function tierPieces(run: readonly PlanFile[], policy: MergePolicy): PlanFile[][] {
  const pieces: PlanFile[][] = [];
  let group: PlanFile[] = [];
  const flush = (): void => {
    for (let at = 0; at + policy.mergeFiles <= group.length; at += policy.mergeFiles) {
      const piece = group.slice(at, at + policy.mergeFiles);
      if (piece.reduce((sum, file) => sum + file.kafkaBytes, 0) <= policy.fileBytes) pieces.push(piece);
    }
    group = [];
  };
  for (const file of run) {
    if (group.length > 0 && sizeTier(group[0]!.kafkaBytes, policy.mergeFiles) !== sizeTier(file.kafkaBytes, policy.mergeFiles)) flush();
    group.push(file);
  }
  flush();
  return pieces;
}
