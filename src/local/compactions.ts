/**
 * The local runner's compaction (issue 49): the partitions this process holds are compacted
 * in the background, one merge at a time for the whole process, under the lease their
 * indexer holds. Live indexing never waits for it: a merge reads Kafka and builds beside
 * the deliveries, and its commit takes the partition row's lock for as long as a commit of
 * ranges does. `drain` (run --once) merges until the plan of every held partition is empty.
 */
import type { Catalog } from '../catalog/db.js';
import type { Lease } from '../catalog/leases.js';
import type { CommittedSource } from '../kafka/source.js';
import type { TableRecord } from '../table/record.js';
import { compactPartition, type CompactionRuntime } from '../compaction/compact.js';

/** A partition this process indexes: its table and the lease its indexer holds now (undefined: none). */
export interface HeldPartition {
  table: TableRecord;
  partition: number;
  heldLease: Lease | undefined;
}

/** `drain`: passes over the held partitions before it gives up on a plan that never empties (each pass merges at least once, or stops). */
const drainPasses = 64;

export class Compactions {
  private running: Promise<void> | undefined;
  private readonly stop = new AbortController();
  /** Merges committed by this process, and key + value + header bytes they read from Kafka. */
  merges = 0;
  bytesRead = 0;
  private readonly runtime: CompactionRuntime;

  constructor(catalog: Catalog, source: CommittedSource, private readonly log: (line: string, fields?: { table?: string; partition?: number }) => void, build?: CompactionRuntime['build']) {
    this.runtime = { catalog, source, ...(build ? { build } : {}) };
  }

  /** Starts a pass over `partitions` in the background unless one is running; returns at once. */
  poll(partitions: Iterable<HeldPartition>): void {
    if (this.running || this.stop.signal.aborted) return;
    const held = [...partitions];
    this.running = this.pass(held, 1).then(() => {}, () => {}).finally(() => {
      this.running = undefined;
    });
  }

  /** Merges until no held partition's plan names a merge (run --once); partitions whose merges fail are said and left. */
  async drain(partitions: Iterable<HeldPartition>): Promise<void> {
    await this.running;
    const held = [...partitions];
    for (let pass = 0; pass < drainPasses; pass += 1) {
      if ((await this.pass(held, Infinity)) === 0) return;
    }
  }

  /** Stops after the merge in progress (it commits whole or not at all). */
  async close(): Promise<void> {
    this.stop.abort();
    await this.running;
  }

  /** One pass: up to `perPartition` merges of each held partition; how many merges committed. */
  private async pass(held: readonly HeldPartition[], perPartition: number): Promise<number> {
    let merged = 0;
    for (const { table, partition, heldLease } of held) {
      if (this.stop.signal.aborted) break;
      if (!heldLease) continue;
      try {
        const result = await compactPartition(this.runtime, table, partition, { lease: heldLease }, { maxMerges: perPartition, signal: this.stop.signal });
        merged += result.merges.length;
        this.merges += result.merges.length;
        for (const merge of result.merges) {
          this.bytesRead += merge.bytesRead;
          this.log(`${table.name}/${partition}: merged ${merge.sources.length} files of offsets [${merge.startOffset}, ${merge.endOffset}) into file ${merge.mergedFileId} (${merge.records} records)`, { table: table.name, partition });
        }
        for (const refusal of result.refused) this.log(`${table.name}/${partition}: ${refusal}`, { table: table.name, partition });
      } catch (error) {
        this.log(`${table.name}/${partition}: compaction failed, trying again later: ${(error as Error).message}`, { table: table.name, partition });
      }
    }
    return merged;
  }
}
