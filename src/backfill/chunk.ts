/**
 * One backfill chunk of one partition: the `backfill_offsets` offsets below the cursor,
 * [max(target, cursor − backfill_offsets), cursor), read forward with read_committed,
 * sealed by the bytes, span and bucket triggers and by the chunk's end (never by age: a
 * chunk's ranges must not depend on how fast it was read), built, and committed at
 * indexed_start under the chunk's claim. Live indexing commits at indexed_end under its
 * lease; the two never wait for each other's lease.
 *
 * Where the chunk's ranges start and end. Offsets with no committed record (aborted
 * records, transaction markers) belong to the range before them, as in live indexing:
 *   - the chunk's first range starts at its first committed record, so the offsets
 *     below it stay with the range the next (lower) chunk ends with; only a chunk that
 *     reaches the target starts its first range at the target (nothing is below it);
 *   - the chunk's last range ends at the partition's indexed_start, which may be above
 *     the chunk's end: [cursor, indexed_start) holds no committed record (chunks that
 *     found none there moved only the cursor).
 * So the ranges tile [indexed_start, indexed_end) after every chunk, and chunk
 * boundaries never leave an offset outside a range that has records around it.
 *
 * Idempotent: a chunk names the cursor it ends at (`end`); once committed, the cursor is
 * below it and running it again does nothing. A chunk whose plan moved while it ran
 * (retention raised the target, another run committed) commits nothing.
 */
import { IndexesChangedError } from '../catalog/indexes.js';
import {
  claimBackfill,
  raiseBackfillTarget,
  recordBackfillStep,
  releaseBackfillClaim,
  renewBackfillClaim,
  BackfillStaleError,
  type BackfillClaim,
  type BackfillState,
  type SlotStep,
} from '../catalog/backfill.js';
import type { Catalog } from '../catalog/db.js';
import { postgresIndexingCatalog, type IndexingCatalog } from '../catalog/indexing-calls.js';
import type { NewRange } from '../catalog/file-writes.js';
import { findTableById } from '../catalog/tables.js';
import { tableTopic, type TableRecord } from '../table/record.js';
import { ownerName } from '../runtime/engine.js';
import { rangeBuilder } from '../files/files.js';
import type { RangeBuilder } from '../files/files.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { OffsetOutOfRangeError } from '../kafka/errors.js';
import { earliestOffset } from '../kafka/offsets.js';
import { readCommitted, type ReadOptions } from '../kafka/read.js';
import type { KafkaRecord } from '../kafka/record.js';
import { RangeSealer, sealingRules, type SealedRange } from '../ranges/sealer.js';
import { toBackfillPartition } from './plan.js';
import type { ChunkOutcome, ChunkRequest, ChunkResult } from './types.js';

/** Where a chunk reads the history it indexes (Kafka, read_committed; a test may read elsewhere). */
export interface HistorySource {
  earliest(topic: string, partition: number): Promise<bigint>;
  /**
   * The committed batches of [start, end), in order, each with the next fetch position
   * after it; fails unless the read reaches `end`. OffsetOutOfRangeError when `start` is
   * below Kafka's earliest offset.
   */
  read(topic: string, partition: number, start: bigint, end: bigint, same?: Pick<ReadOptions, 'topicId'>): AsyncIterable<{ records: KafkaRecord[]; nextOffset: bigint; bytes: number }>;
}

/** The history in Kafka, read_committed. */
export function kafkaHistory(kafka: KafkaConnection, options: ReadOptions = {}): HistorySource {
  return {
    earliest: (topic, partition) => earliestOffset(kafka, topic, partition),
    async *read(topic, partition, start, end, same) {
      const reader = readCommitted(kafka, topic, partition, start, end, { ...options, ...same });
      yield* reader;
      if (reader.position !== end) {
        throw new Error(`backfill read of ${topic}-${partition} stopped at ${reader.position} (${reader.end ?? 'unknown'}) before the chunk's end ${end}`);
      }
    },
  };
}

export interface ChunkOptions {
  /** The claim's owner; default a name unique to this process. (A state machine slot's claims are owned by the slot.) */
  owner?: string;
  /** Default: the table's current schema and encoder, as live indexing builds. */
  build?: RangeBuilder;
  /** How long the claim lives without renewal; default the table's lease_ttl. It is renewed while the chunk runs. */
  claimTtlMs?: number;
  read?: ReadOptions;
  /** Default: Kafka (`kafkaHistory` with `read`). */
  history?: HistorySource;
  /** Where the chunk's commit goes; default: the catalog in Postgres (`postgresIndexingCatalog`). */
  indexingCatalog?: IndexingCatalog;
}

export class ChunkRequestError extends Error {
  override name = 'ChunkRequestError';
}

function offsetField(name: string, value: unknown): bigint {
  if (typeof value !== 'string' || !/^\d{1,19}$/.test(value)) {
    throw new ChunkRequestError(`backfill chunk: ${name} must be a decimal string such as "42", got ${JSON.stringify(value)}`);
  }
  return BigInt(value);
}

/** Checks a chunk request from the state machine (or anyone) and names what is wrong. */
export function parseChunkRequest(request: unknown): { tableId: bigint; partition: number; end: bigint | undefined } {
  if (typeof request !== 'object' || request === null) throw new ChunkRequestError(`backfill chunk: the request must be an object {tableId, partition, end?}, got ${JSON.stringify(request)}`);
  const { tableId, partition, end } = request as Record<string, unknown>;
  if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0) {
    throw new ChunkRequestError(`backfill chunk: partition must be a whole number ≥ 0, got ${JSON.stringify(partition)}`);
  }
  return { tableId: offsetField('tableId', tableId), partition, end: end === undefined || end === null ? undefined : offsetField('end', end) };
}

/** Runs one chunk of a partition's backfill (see the module comment). */
export async function backfillChunk(catalog: Catalog, kafka: KafkaConnection, request: ChunkRequest, options: ChunkOptions = {}): Promise<ChunkResult> {
  const started = performance.now();
  const { tableId, partition, end } = parseChunkRequest(request);
  const table = await findTableById(catalog, tableId);
  const ttlMs = options.claimTtlMs ?? table.settings.lease_ttl;
  const { claim, state } = await claimBackfill(catalog, tableId, partition, options.owner ?? ownerName('backfill'), ttlMs);
  try {
    return await new ChunkRun(catalog, table, claim, ttlMs, kafka, options).run(state, end, started);
  } finally {
    await releaseBackfillClaim(catalog, claim).catch(() => {});
  }
}

export interface ChunkWork {
  chunk: { start: bigint; end: bigint } | null;
  ranges: number;
  files: number;
  records: number;
  bytes: number;
}

export const noWork: ChunkWork = { chunk: null, ranges: 0, files: 0, records: 0, bytes: 0 };

/** What a chunk reports: the partition's backfill as `state` has it, and the chunk's work. */
export function chunkResult(table: TableRecord, state: BackfillState, outcome: ChunkOutcome, work: ChunkWork, started: number): ChunkResult {
  return {
    ...toBackfillPartition(table, state),
    outcome,
    chunk: work.chunk && { start: String(work.chunk.start), end: String(work.chunk.end) },
    ranges: work.ranges,
    files: work.files,
    records: work.records,
    bytes: work.bytes,
    elapsedMs: Math.round(performance.now() - started),
  };
}

/** One chunk of the claimed partition; with a slot's `step`, every outcome records the step (a commit in its own transaction). */
export class ChunkRun {
  private lastRenewal = Date.now();
  private readonly build: RangeBuilder;
  private readonly history: HistorySource;
  private readonly indexingCatalog: IndexingCatalog;

  constructor(
    private readonly catalog: Catalog,
    private readonly table: TableRecord,
    private readonly claim: BackfillClaim,
    private readonly ttlMs: number,
    kafka: KafkaConnection,
    options: ChunkOptions,
    private readonly step?: SlotStep,
  ) {
    this.build = options.build ?? rangeBuilder(catalog);
    this.indexingCatalog = options.indexingCatalog ?? postgresIndexingCatalog(catalog);
    this.history = options.history ?? kafkaHistory(kafka, options.read);
  }

  async run(initial: BackfillState, end: bigint | undefined, started: number): Promise<ChunkResult> {
    const result = await this.runChunk(initial, end, started);
    const recordedByCommit = result.outcome === 'committed' || result.outcome === 'empty';
    if (this.step && !recordedByCommit) await recordBackfillStep(this.catalog, this.claim.tableId, this.step, this.claim.partition);
    return result;
  }

  private async runChunk(initial: BackfillState, end: bigint | undefined, started: number): Promise<ChunkResult> {
    const result = (outcome: ChunkOutcome, state: BackfillState, work: ChunkWork = noWork): ChunkResult => chunkResult(this.table, state, outcome, work, started);
    let state = initial;
    if (state.cursor === null || state.target === null) return result('done', state);
    if (end !== undefined && end !== state.cursor) return result('skipped', state);
    // Retention may have passed the target since the plan: never read below Kafka's earliest.
    const earliest = await this.history.earliest(this.table.topic, this.claim.partition);
    if (earliest > state.target) state = await raiseBackfillTarget(this.catalog, this.claim.tableId, this.claim.partition, earliest);
    if (state.cursor === null || state.target === null || state.cursor <= state.target) return result('done', state);

    const chunkEnd = state.cursor;
    const span = BigInt(this.table.settings.backfill_offsets);
    const chunkStart = chunkEnd - span > state.target ? chunkEnd - span : state.target;
    // A secondary index that starts needing entries while the chunk is built (CREATE INDEX
    // meanwhile) makes the commit refuse the chunk: it is read and built again with it.
    for (let attempt = 1; ; attempt++) {
      let read: { ranges: NewRange[]; records: number; bytes: number };
      try {
        read = await this.read(chunkStart, chunkEnd, chunkStart === state.target, state.indexedStart);
      } catch (error) {
        if (error instanceof OffsetOutOfRangeError && error.bound === 'below-earliest') {
          const raised = await raiseBackfillTarget(this.catalog, this.claim.tableId, this.claim.partition, error.earliest);
          return result('target-raised', raised, { ...noWork, chunk: { start: chunkStart, end: chunkEnd } });
        }
        throw error;
      }
      const work: ChunkWork = {
        chunk: { start: chunkStart, end: chunkEnd },
        ranges: read.ranges.length,
        files: read.ranges.reduce((n, range) => n + range.files.length, 0),
        records: read.records,
        bytes: read.bytes,
      };
      try {
        const committed = await this.indexingCatalog.commitBackfillChunk(this.claim, state, read.ranges, chunkStart, this.ttlMs, this.step);
        return result(read.ranges.length > 0 ? 'committed' : 'empty', committed, work);
      } catch (error) {
        if (error instanceof BackfillStaleError) return result('stale', error.actual, { ...work, ranges: 0, files: 0 });
        if (error instanceof IndexesChangedError && attempt < 5) continue;
        throw error;
      }
    }
  }

  /**
   * Reads [start, end) and builds its ranges: the first starts at the first committed
   * record (at `start` when `fromStart`), the last ends at `indexedStart`.
   */
  private async read(start: bigint, end: bigint, fromStart: boolean, indexedStart: bigint): Promise<{ ranges: NewRange[]; records: number; bytes: number }> {
    const ranges: NewRange[] = [];
    let sealer: RangeSealer | undefined;
    let records = 0;
    let bytes = 0;
    for await (const batch of this.history.read(this.table.topic, this.claim.partition, start, end, tableTopic(this.table))) {
      if (!sealer) {
        if (batch.records.length === 0) continue;
        sealer = new RangeSealer(sealingRules(this.table.settings), fromStart ? start : batch.records[0]!.offset);
      }
      // A constant clock: the age trigger never fires in a backfill.
      await this.addBuilt(ranges, sealer.push(batch.records, batch.nextOffset, 0));
      records += batch.records.length;
      bytes += batch.bytes;
      await this.renewIfDue();
    }
    if (sealer) await this.addBuilt(ranges, [sealer.flush('chunk')].filter((r): r is SealedRange => r !== undefined));
    const last = ranges[ranges.length - 1];
    if (last) ranges[ranges.length - 1] = { ...last, endOffset: indexedStart };
    return { ranges, records, bytes };
  }

  private async addBuilt(into: NewRange[], sealed: SealedRange[]): Promise<void> {
    for (const range of sealed) {
      into.push(await this.build(this.table, this.claim.partition, range));
      await this.renewIfDue();
    }
  }

  private async renewIfDue(): Promise<void> {
    if (Date.now() - this.lastRenewal < this.ttlMs / 3) return;
    await renewBackfillClaim(this.catalog, this.claim, this.ttlMs);
    this.lastRenewal = Date.now();
  }
}
