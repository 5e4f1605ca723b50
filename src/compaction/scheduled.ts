/**
 * The scheduled compactor (functions/compact on AWS, every `compactMinutes`): every table
 * partition with merges due gets them, one merge per lease. Per partition:
 *
 * - found cheaply: one query per table names the partitions that may have merges due
 *   (src/catalog/merges-due.ts), and each is planned from its live files before its lease
 *   is taken, so a partition with nothing to merge never loses its lease to the compactor
 *   (which would make its indexer read its open range again);
 * - leased: `compactPartition` takes the partition's lease under this invocation's owner
 *   for one merge and gives it back. The partitions are taken in turns, and the same
 *   partition's lease is not taken again before `compactorHandoffMs` has passed, so an
 *   indexer waiting for it (src/indexer/partition.ts) gets it between two merges: indexing
 *   waits at most one merge's build. A partition whose lease an indexer holds is tried
 *   again after the others, then left to the next run;
 * - idempotent and resumable: nothing is held between merges, a merge whose sources
 *   changed is refused and changes nothing, and what is left when `signal` aborts (before
 *   the function's timeout) or the run ends is planned again by the next run;
 * - one partition's failure is its own: it is reported, and the others go on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { listTables } from '../catalog/tables.js';
import { compactorHandoffMs, LeaseLostError } from '../catalog/leases.js';
import { mergeCandidates } from '../catalog/merges.js';
import { partitionsWithMergesDue } from '../catalog/merges-due.js';
import { bucketLengthMs } from '../ranges/buckets.js';
import type { TableRecord } from '../table/record.js';
import { compactPartition, type CompactionRuntime } from './compact.js';
import { planMerges } from './plan.js';

/** What one run did to one table partition. */
export interface PartitionCompaction {
  table: string;
  partition: number;
  /** Merges committed. */
  merges: number;
  /** Merged files' sources, replaced. */
  filesReplaced: number;
  /** Merges refused because their sources changed meanwhile (planned again). */
  refused: number;
  /** Merges still planned when the run stopped (time ran out, or an indexer kept the lease). */
  left: number;
  /** Times its lease was held by an indexer when the compactor came for it. */
  busy: number;
  /** Merges whose build outlived the compactor's lease, which an indexer then took: nothing committed, planned again. */
  leaseLost: number;
}

/** A table or partition the run could not compact, and why; the others went on. */
export interface CompactionFailure {
  table: string;
  /** Absent: the table's partitions could not be listed. */
  partition?: number;
  error: string;
}

export interface ScheduledCompactionResult {
  partitions: PartitionCompaction[];
  failures: CompactionFailure[];
  merges: number;
  /** The run stopped because `signal` aborted, with merges left (the next run plans them). */
  stoppedEarly: boolean;
}

export interface ScheduledCompactionOptions {
  /** The lease owner naming this invocation (src/catalog/leases.ts `compactorOwner`). */
  owner: string;
  /** Aborts before the function's timeout: no merge starts after it. */
  signal?: AbortSignal;
  /** Times a partition whose lease an indexer holds is tried again in this run (default 2). */
  busyRetries?: number;
}

/** Times a partition whose merge was refused (its sources changed meanwhile) is planned again in one run. */
const refusalRetries = 3;

interface Turn {
  table: TableRecord;
  partition: number;
  done: PartitionCompaction;
  /** When its lease was last given back (Date.now()), 0 before the first merge. */
  releasedAt: number;
}

/** Every table partition with merges due gets them, in turns, until none is left or `signal` aborts. */
export async function compactDuePartitions(runtime: CompactionRuntime, options: ScheduledCompactionOptions): Promise<ScheduledCompactionResult> {
  const now = runtime.clock ?? Date.now;
  const result: ScheduledCompactionResult = { partitions: [], failures: [], merges: 0, stoppedEarly: false };
  const turns: Turn[] = [];
  for (const table of await listTables(runtime.catalog)) {
    const { merge_files: mergeFiles, merge_after: mergeAfterMs } = table.settings;
    if (mergeFiles < 2) continue;
    try {
      const agedFrom = now() - bucketLengthMs(table.settings.granularity) - mergeAfterMs;
      for (const partition of await partitionsWithMergesDue(runtime.catalog, table.tableId, { mergeFiles, agedFrom })) {
        turns.push({ table, partition, releasedAt: 0, done: { table: table.name, partition, merges: 0, filesReplaced: 0, refused: 0, left: 0, busy: 0, leaseLost: 0 } });
      }
    } catch (error) {
      result.failures.push({ table: table.name, error: (error as Error).message });
    }
  }
  const busyRetries = options.busyRetries ?? 2;
  while (turns.length > 0) {
    const turn = turns.shift()!;
    const { table, partition, done } = turn;
    if (options.signal?.aborted) {
      result.stoppedEarly = true;
      done.left = await plannedCount(runtime, table, partition, now()).catch(() => done.left);
      report(result, done);
      continue;
    }
    try {
      const planned = await plannedCount(runtime, table, partition, now());
      if (planned === 0) {
        report(result, done);
        continue;
      }
      const wait = turn.releasedAt + compactorHandoffMs - Date.now();
      if (wait > 0) await sleep(wait, undefined, options.signal ? { signal: options.signal } : {}).catch(() => {});
      if (options.signal?.aborted) {
        turns.unshift(turn);
        continue;
      }
      const merged = await compactPartition(runtime, table, partition, { owner: options.owner }, { maxMerges: 1, ...(options.signal ? { signal: options.signal } : {}) });
      turn.releasedAt = Date.now();
      done.merges += merged.merges.length;
      done.filesReplaced += merged.merges.reduce((sum, merge) => sum + merge.sources.length, 0);
      done.refused += merged.refused.length;
      done.left = merged.busy ? planned : merged.left;
      result.merges += merged.merges.length;
      if (merged.busy) done.busy += 1;
      // Taken in turns: after one merge, a refusal (planned again) or a held lease, its next
      // turn comes after the others'; refusals and held leases only a few times a run.
      const again = merged.busy ? done.busy <= busyRetries : merged.merges.length > 0 || (merged.refused.length > 0 && done.refused <= refusalRetries);
      if (again) turns.push(turn);
      else report(result, done);
    } catch (error) {
      if (error instanceof LeaseLostError) {
        // The merge took longer than the compactor's lease, and an indexer took it: nothing was committed.
        done.leaseLost += 1;
        report(result, done);
        continue;
      }
      result.failures.push({ table: table.name, partition, error: (error as Error).message });
      report(result, done);
    }
  }
  return result;
}

/** How many merges the plan names for the partition now (read without its lease: the merge itself plans again under it). */
async function plannedCount(runtime: CompactionRuntime, table: TableRecord, partition: number, now: number): Promise<number> {
  const { merge_files: mergeFiles, merge_after: mergeAfterMs } = table.settings;
  const candidates = await mergeCandidates(runtime.catalog, table.tableId, partition);
  return planMerges(candidates, { fileBytes: table.settings.file_bytes, mergeFiles, mergeAfterMs, granularity: table.settings.granularity }, now).length;
}

/** A partition's line in the result once the run is done with it (those where something happened or was left). */
function report(result: ScheduledCompactionResult, done: PartitionCompaction): void {
  if (done.merges + done.refused + done.left + done.busy + done.leaseLost > 0) result.partitions.push(done);
}
