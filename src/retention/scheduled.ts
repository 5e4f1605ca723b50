/**
 * The scheduled check (functions/retention, every `retentionMinutes` on AWS): retention of
 * the partitions whose `retention_check` is due, partition discovery, and a backfill
 * execution for every table whose backfill no execution is working on (new partitions
 * with history, a failed or timed-out execution, files expired under the cursor), and an
 * index backfill execution for every index not active that no driver holds (a new one
 * after CREATE INDEX, or one whose execution died).
 */
import type { Catalog } from '../catalog/db.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { resumeBackfills, type BackfillStarter, type ResumedBackfill } from '../backfill/resume.js';
import { resumeIndexBackfills, type IndexBackfillStarter, type ResumedIndexBackfill } from '../index-backfill/resume.js';
import { checkRetention, type RetentionResult } from './check.js';
import { discoverPartitions, type DiscoveredPartition } from './discovery.js';

export interface ScheduledCheckResult extends RetentionResult {
  discovered: DiscoveredPartition[];
  /** Backfill executions started (or found started) for tables no execution was working on. */
  backfills: ResumedBackfill[];
  /** Index backfill executions started (or found started) for indexes not active that no driver holds. */
  indexBackfills: ResumedIndexBackfill[];
}

export interface ScheduledCheckOptions {
  /** One table; all tables when absent (the schedule's mode). */
  table?: string;
  /** StartExecution of the backfill state machine; absent: no backfill is started. */
  startBackfill?: BackfillStarter;
  chunksPerExecution?: number;
  /** StartExecution of the index backfill state machine; absent: no index backfill is started (every table's indexes, `table` or not). */
  startIndexBackfill?: IndexBackfillStarter;
}

export async function scheduledCheck(catalog: Catalog, kafka: KafkaConnection, options: ScheduledCheckOptions = {}): Promise<ScheduledCheckResult> {
  const only = options.table !== undefined ? { table: options.table } : {};
  const retention = await checkRetention(catalog, kafka, { ...only, dueOnly: true });
  // a table that failed retention is tried again by discovery: each says why in its own words
  const discovered = await discoverPartitions(catalog, kafka, { ...only, failed: retention.failedTables });
  const backfills = options.startBackfill
    ? await resumeBackfills(catalog, options.startBackfill, { ...only, ...(options.chunksPerExecution !== undefined ? { chunksPerExecution: options.chunksPerExecution } : {}) })
    : [];
  const indexBackfills = options.startIndexBackfill ? await resumeIndexBackfills(catalog, options.startIndexBackfill) : [];
  return { ...retention, discovered, backfills, indexBackfills };
}
