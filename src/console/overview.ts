/**
 * What the console's page shows at once, as one JSON-able value made from what the rest
 * of the system already computes: `status` per partition, the catalog's lost intervals,
 * the index reports, the tables' settings and the reader's counters, with the console's
 * own history for the lag in seconds and the charts. Pure.
 */
import type { PartitionStatus } from '../table-topic/status.js';
import { formatSettings } from '../table/settings.js';
import type { TableRecord } from '../table/record.js';
import { kafkaPerServed } from '../catalog/reader-counters.js';
import type { ReaderMetrics } from '../reader/metrics.js';
import type { IndexMetrics } from '../reader/read-api.js';
import { chartPoints, lagSeconds, partitionKey, type Sample } from './history.js';

export interface OverviewInput {
  sampledAt: number;
  sampleEveryMs: number;
  historySamples: number;
  rows: readonly PartitionStatus[];
  tables: readonly TableRecord[];
  lost: readonly { table: string; partition: number; intervals: number; offsets: bigint }[];
  indexes: readonly IndexMetrics[];
  reader: ReaderMetrics;
  history: readonly Sample[];
}

/** Hits over lookups of the chunk cache and the whole-file cache together; null before any lookup. */
export function cacheHitRatio(m: Pick<ReaderMetrics, 'cacheHits' | 'cacheMisses' | 'chunkCacheHits' | 'chunkCacheMisses'>): number | null {
  const hits = m.cacheHits + m.chunkCacheHits;
  const lookups = hits + m.cacheMisses + m.chunkCacheMisses;
  return lookups === 0 ? null : Math.round((hits / lookups) * 1000) / 1000;
}

export function overview(input: OverviewInput) {
  const lost = new Map(input.lost.map((l) => [partitionKey(l.table, l.partition), l.intervals]));
  const rowsOf = (table: string) => input.rows.filter((r) => r.table === table);
  return {
    sampledAt: new Date(input.sampledAt).toISOString(),
    sampleEveryMs: input.sampleEveryMs,
    historySamples: input.historySamples,
    tables: input.tables.map((t) => ({
      name: t.name,
      topic: t.topic,
      format: t.format,
      settings: formatSettings(t.settings),
      partitions: rowsOf(t.name).map((r) => {
        const key = partitionKey(r.table, r.partition);
        const behind = lagSeconds(input.history, key, r.indexedEnd, r.lastStableOffset, input.sampledAt);
        return {
          partition: r.partition,
          indexedStart: r.indexedStart,
          indexedEnd: r.indexedEnd,
          lastStableOffset: r.lastStableOffset,
          lsoError: r.lsoError,
          lag: r.lag,
          lagSeconds: behind && Math.round(behind.seconds * 10) / 10,
          lagSecondsAtLeast: behind?.atLeast ?? false,
          lease: r.leaseOwner === null ? null : { owner: r.leaseOwner, epoch: r.leaseEpoch, live: r.leaseLive },
          openRange: r.openRangeRecords > 0n ? { records: r.openRangeRecords, bytes: r.openRangeBytes, since: r.openRangeSince?.toISOString() ?? null, holderGone: !r.leaseLive } : null,
          waitingReason: r.waitingReason,
          files: r.files,
          expiredFiles: r.expiredFiles,
          errorRows: r.errorRows,
          backfill: r.backfillCursor === null || r.backfillTarget === null ? null : { cursor: r.backfillCursor, target: r.backfillTarget, left: r.backfillCursor > r.backfillTarget ? r.backfillCursor - r.backfillTarget : 0n },
          earliestOffset: r.earliestOffset,
          lostOffsets: r.lostOffsets,
          lostIntervals: lost.get(key) ?? 0,
          topicProblem: r.topicProblem,
        };
      }),
    })),
    indexes: input.indexes,
    reader: {
      cacheHitRatio: cacheHitRatio(input.reader),
      kafkaBytesPerServedByte: kafkaPerServed(input.reader.kafkaBytes, input.reader.bytesServed),
      requests: input.reader.requests,
      bytesServed: input.reader.bytesServed,
      kafkaBytes: input.reader.kafkaBytes,
      cacheHits: input.reader.cacheHits + input.reader.chunkCacheHits,
      cacheMisses: input.reader.cacheMisses + input.reader.chunkCacheMisses,
      mismatches: input.reader.mismatches + input.reader.chunkMismatches,
    },
    chart: chartPoints(input.history),
  };
}
