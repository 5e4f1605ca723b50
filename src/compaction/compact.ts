/**
 * Compacting one partition (issue 49): plan from the catalog's live files, build each
 * merged file from Kafka with the one rebuild engine, commit it under the partition's
 * lease. The contract an AWS entry relies on (`compactPartition`):
 *
 * - leased: every merge commits under `lease` (fenced like a commit of ranges), or under a
 *   lease it takes for `owner` and gives back when it is done (none taken while another
 *   holds it: `busy`);
 * - idempotent: the plan is made from the catalog each time, and a merge whose sources are
 *   no longer the live files of its offsets is refused by Postgres and changes nothing;
 * - resumable: nothing is held between merges, so a crash loses at most the build in
 *   progress, and the next call plans what is left.
 *
 * A merged file is exactly the file of a range of its offsets in its bucket: its records
 * read from Kafka (read_committed), built with the newest table-schema version among its
 * sources (versions only add and widen columns, so it holds every source's values) and the
 * table's current encoder version; its bytes rebuild like any file's (invariant 5).
 */
import type { Catalog } from '../catalog/db.js';
import { acquireLease, releaseLease, type Lease } from '../catalog/leases.js';
import { commitMerge, mergeCandidates, MergeRefusedError, type MergeCandidate } from '../catalog/merges.js';
import { schemaVersion } from '../catalog/schema-versions.js';
import { indexesWithEntries } from '../catalog/indexes.js';
import type { NewRange } from '../catalog/file-writes.js';
import { buildRangeFiles, type RangeBuildInput } from '../files/files.js';
import { encoderForCompression } from '../parquet/index.js';
import { bucketOf } from '../ranges/buckets.js';
import type { CommittedSource } from '../kafka/source.js';
import { recordBytes, type KafkaRecord } from '../kafka/record.js';
import { tableTopic, type TableRecord } from '../table/record.js';
import { compressionOf, mergeSettingsOf } from '../table/settings.js';
import { planMerges, type PlannedMerge } from './plan.js';

export interface CompactionRuntime {
  catalog: Catalog;
  source: CommittedSource;
  /** Builds a merged file's range (a build worker's, `run --build-threads`); default on this thread. */
  build?: (input: RangeBuildInput) => NewRange | Promise<NewRange>;
  clock?: () => number;
}

export interface CompactedMerge {
  mergedFileId: bigint;
  startOffset: bigint;
  endOffset: bigint;
  sources: bigint[];
  records: number;
  /** Key + value + header bytes read from Kafka to build it. */
  bytesRead: number;
}

export interface CompactionResult {
  merges: CompactedMerge[];
  /** Merges refused because their sources changed meanwhile (another compactor, retention): planned again next time. */
  refused: string[];
  /** With `owner`: another holds the partition's lease, so nothing was tried. */
  busy: boolean;
  /** Merges the plan still names after this call (more than `maxMerges`). */
  left: number;
}

/** A merged file's records are not those its sources counted: Kafka changed under them (compaction, retention). */
export class MergeRecordsError extends Error {
  override name = 'MergeRecordsError';
}

/**
 * Makes the merges the plan names now for one partition, one transaction each, at most
 * `maxMerges` (default all). `lease`: the partition's lease its indexer holds (`run`);
 * `owner`: take the lease for this call (a scheduled function), or report `busy`.
 */
export async function compactPartition(
  runtime: CompactionRuntime, table: TableRecord, partition: number, holder: { lease: Lease } | { owner: string },
  options: { maxMerges?: number; signal?: AbortSignal } = {},
): Promise<CompactionResult> {
  const result: CompactionResult = { merges: [], refused: [], busy: false, left: 0 };
  const { mergeFiles, mergeAfterMs } = mergeSettingsOf(table.settings);
  if (mergeFiles < 2) return result;
  let lease: Lease;
  if ('lease' in holder) lease = holder.lease;
  else {
    const taken = await acquireLease(runtime.catalog, table.tableId, partition, holder.owner, table.settings.lease_ttl);
    if (!taken) return { ...result, busy: true };
    lease = taken;
  }
  try {
    const candidates = await mergeCandidates(runtime.catalog, table.tableId, partition);
    const policy = { fileBytes: table.settings.file_bytes, mergeFiles, mergeAfterMs, granularity: table.settings.granularity };
    const planned = planMerges(candidates, policy, (runtime.clock ?? Date.now)());
    const take = planned.slice(0, options.maxMerges ?? planned.length);
    result.left = planned.length - take.length;
    const byId = new Map(candidates.map((file) => [file.dataFileId, file]));
    for (const merge of take) {
      if (options.signal?.aborted) {
        result.left += 1;
        continue;
      }
      try {
        result.merges.push(await mergeOnce(runtime, table, partition, lease, merge, merge.sources.map((id) => byId.get(id)!)));
      } catch (error) {
        if (!(error instanceof MergeRefusedError)) throw error;
        result.refused.push(error.message);
      }
    }
  } finally {
    if (!('lease' in holder)) await releaseLease(runtime.catalog, lease).catch(() => false);
  }
  return result;
}

/** Builds one planned merge from Kafka and commits it. */
async function mergeOnce(runtime: CompactionRuntime, table: TableRecord, partition: number, lease: Lease, merge: PlannedMerge, sources: MergeCandidate[]): Promise<CompactedMerge> {
  const records: KafkaRecord[] = [];
  let bytesRead = 0;
  for await (const batch of runtime.source.read(table.topic, partition, merge.startOffset, merge.endOffset, tableTopic(table))) {
    for (const record of batch.records) {
      bytesRead += recordBytes(record);
      if (bucketOf(record.timestamp, table.settings.granularity) === merge.bucket) records.push(record);
    }
  }
  const expected = sources.reduce((sum, file) => sum + file.records, 0);
  if (records.length !== expected) {
    throw new MergeRecordsError(`merge of offsets [${merge.startOffset}, ${merge.endOffset}) of ${table.name}/${partition}: Kafka gives ${records.length} committed records of its bucket, its ${sources.length} files hold ${expected}; nothing was merged`);
  }
  const version = Math.max(...sources.map((file) => file.schemaVersion));
  const indexes = await indexesWithEntries(runtime.catalog, table.tableId);
  const built = await (runtime.build ?? buildRangeFiles)({
    table,
    schema: await schemaVersion(runtime.catalog, table.tableId, version),
    schemaVersion: version,
    indexes,
    encoderVersion: encoderForCompression[compressionOf(table.settings)],
    partition,
    // The builder copies the reason into what it returns, which a merge does not use: the
    // merged file's seal reason is 'merge' (commitMerge).
    range: { startOffset: merge.startOffset, endOffset: merge.endOffset, reason: 'flush', recordCount: records.length, bytes: bytesRead, files: [{ bucket: merge.bucket, records }] },
  });
  const file = built.files[0]!;
  const mergedFileId = await commitMerge(runtime.catalog, lease, { startOffset: merge.startOffset, endOffset: merge.endOffset, sources: merge.sources, file, indexIds: built.indexIds });
  return { mergedFileId, startOffset: merge.startOffset, endOffset: merge.endOffset, sources: merge.sources, records: records.length, bytesRead };
}
