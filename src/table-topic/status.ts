/** Per partition: what is indexed, how far behind the LSO, who holds it, what is open, backfill and retention. */
import type { Engine } from '../runtime/engine.js';
import { lastStableOffsets } from '../kafka/offsets.js';
import { cleanupPolicy, compactionProblem, describeTopic } from '../kafka/topics.js';
import { topicIdentityProblem } from './topic-identity.js';
import { partitionRows } from '../catalog/partitions.js';
import { recordsBehind } from './lag.js';

export interface PartitionStatus {
  table: string;
  topic: string;
  partition: number;
  indexedStart: bigint;
  indexedEnd: bigint;
  lastStableOffset: bigint | null;
  /** Why the LSO is unknown (Kafka did not answer for the topic), if it is. */
  lsoError: string | null;
  /** LSO − indexed_end: committed offsets not yet in files. */
  lag: bigint | null;
  leaseOwner: string | null;
  leaseEpoch: bigint;
  leaseLive: boolean;
  openRangeBytes: bigint;
  openRangeRecords: bigint;
  openRangeSince: Date | null;
  waitingReason: string | null;
  files: bigint;
  expiredFiles: bigint;
  /** Rows of its live files with `_error` set (undecodable values, wrong magic bytes, unknown schemas, invalid JSON). */
  errorRows: bigint;
  backfillCursor: bigint | null;
  backfillTarget: bigint | null;
  earliestOffset: bigint | null;
  /** Offsets Kafka deleted before they were indexed (lost intervals): part of the indexed range, in no file. */
  lostOffsets: bigint;
  /** Why the topic can no longer back the table (its cleanup.policy became compact, or it was deleted and created again), if so. */
  topicProblem: string | null;
}

/** What status needs of an engine: the catalog, Kafka, and the brokers' names for its errors (a Lambda has no whole Engine). */
export type StatusEngine = Pick<Engine, 'catalog' | 'kafka'> & { config: Pick<Engine['config'], 'kafkaBrokers'> };

export async function partitionStatus(engine: StatusEngine, tableName?: string): Promise<PartitionStatus[]> {
  const rows = await partitionRows(engine.catalog, tableName);
  const lsos = await lastStableOffsetsOrNull(engine, rows);
  const problems = new Map<string, string | null>();
  const topicIds = new Map<string, string>();
  await Promise.all(
    [...new Set(rows.map((row) => row.topic))].map(async (topic) => {
      const policy = await cleanupPolicy(engine.kafka, topic).catch(() => 'delete');
      problems.set(topic, compactionProblem(topic, policy) ?? null);
      const described = await describeTopic(engine.kafka, topic).catch(() => undefined);
      if (described) topicIds.set(topic, described.topicId);
    }),
  );
  return rows.map((row) => {
    const idNow = topicIds.get(row.topic);
    const recreated = idNow === undefined ? undefined : topicIdentityProblem({ name: row.table_name, topic: row.topic, topicId: row.topic_id }, idNow);
    // another topic's offsets: its LSO says nothing of this table's lag
    const lso = recreated ? null : (lsos.offsets.get(`${row.topic}\u0000${row.partition_id}`) ?? null);
    return {
      table: row.table_name,
      topic: row.topic,
      partition: row.partition_id,
      indexedStart: row.indexed_start,
      indexedEnd: row.indexed_end,
      lastStableOffset: lso,
      lsoError: lso === null ? (recreated ? 'the topic is another one now' : (lsos.errors.get(row.topic) ?? 'Kafka gave no last stable offset for it')) : null,
      lag: recordsBehind(row.indexed_end, lso),
      leaseOwner: row.lease_owner,
      leaseEpoch: row.lease_epoch,
      leaseLive: row.lease_live,
      openRangeBytes: row.open_range_bytes,
      openRangeRecords: row.open_range_records,
      openRangeSince: row.open_range_since,
      waitingReason: row.waiting_reason,
      files: row.files,
      expiredFiles: row.expired_files,
      errorRows: row.error_rows,
      backfillCursor: row.backfill_cursor,
      backfillTarget: row.backfill_target,
      earliestOffset: row.earliest_offset,
      lostOffsets: BigInt(row.lost_offsets),
      topicProblem: recreated ?? problems.get(row.topic) ?? null,
    };
  });
}

/**
 * The LSO of each topic partition (tables on one topic share them), asked once per
 * partition and per topic: Kafka may be down, or a topic deleted, while the catalog is
 * up, and status still answers, with no LSO where there is none.
 */
async function lastStableOffsetsOrNull(engine: StatusEngine, rows: readonly { topic: string; partition_id: number }[]): Promise<{ offsets: Map<string, bigint>; errors: Map<string, string> }> {
  const byTopic = new Map<string, Set<number>>();
  for (const row of rows) {
    let partitions = byTopic.get(row.topic);
    if (!partitions) byTopic.set(row.topic, (partitions = new Set()));
    partitions.add(row.partition_id);
  }
  const out = new Map<string, bigint>();
  const errors = new Map<string, string>();
  await Promise.all(
    [...byTopic].map(async ([topic, partitions]) => {
      const refs = [...partitions].map((partition) => ({ topic, partition }));
      const offsets = await lastStableOffsets(engine.kafka, refs).catch((error: Error) => {
        errors.set(topic, `Kafka at ${engine.config.kafkaBrokers.join(',')} did not answer for topic ${topic}: ${error.message}`);
        return undefined;
      });
      offsets?.forEach((offset, i) => out.set(`${topic}\u0000${refs[i]!.partition}`, offset));
    }),
  );
  return { offsets: out, errors };
}
