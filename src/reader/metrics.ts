import type { HistogramSample, MetricFamily } from '../common/exposition.js';

/** Counters of the read path, as one plain object (GET /metrics as JSON, printed by bench), and as exposition families. */
export interface ReaderMetrics {
  requests: number;
  /** Files rebuilt whole from Kafka (each verified against size, footer and sha256): files without granules. */
  rebuilds: number;
  /** Row groups rebuilt with all their columns (a whole-file or wide read of a file with granules). */
  granuleRebuilds: number;
  /** Row groups rebuilt for some of their columns only. */
  partialGranuleRebuilds: number;
  /** Column chunks answered from the cache, and rebuilt. */
  chunkCacheHits: number;
  chunkCacheMisses: number;
  /** Reads of records answered with nothing asked of Kafka: records held or being fetched for another read (a granule's other columns, another file of its range). */
  granuleRecordHits: number;
  /** Row groups or chunks whose rebuild did not match the catalog's checksum: never served. */
  chunkMismatches: number;
  /** Rebuilds whose bytes did not match the catalog: never served. */
  mismatches: number;
  /** Reads refused because the page index and footer the catalog keeps are not the bytes the file was built with (src/files/stored-pieces.ts). */
  storedPieceMismatches: number;
  cacheHits: number;
  cacheMisses: number;
  /** Range requests answered from the catalog's footer, without Kafka. */
  footerHits: number;
  /** Committed records and their key + value + header bytes read from Kafka. */
  kafkaRecords: number;
  kafkaBytes: number;
  bytesServed: number;
  expired: number;
  /** Responses refused with a 503 because no room in the response budget came free within the bounded wait. */
  busy: number;
  /** Responses dropped before they were sent because their client had gone. */
  abandoned: number;
  /** Responses cut off because their client took less than the least rate (or nothing) in a window of the write deadline. */
  writeTimeouts: number;
}

export function newMetrics(): ReaderMetrics {
  return { requests: 0, rebuilds: 0, granuleRebuilds: 0, partialGranuleRebuilds: 0, chunkCacheHits: 0, chunkCacheMisses: 0, granuleRecordHits: 0, chunkMismatches: 0, mismatches: 0, storedPieceMismatches: 0, cacheHits: 0, cacheMisses: 0, footerHits: 0, kafkaRecords: 0, kafkaBytes: 0, bytesServed: 0, expired: 0, busy: 0, abandoned: 0, writeTimeouts: 0 };
}

/** The read path's counters and rebuild durations as exposition families (GET /metrics's default answer). */
export function readerFamilies(metrics: ReaderMetrics, rebuildDurations: { file: HistogramSample; granule: HistogramSample }, cache: { entries: number; bytes: number }, heldRecords: { entries: number; bytes: number }): MetricFamily[] {
  const counter = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: 'counter', samples: [{ value }] });
  return [
    counter('offsetlake_read_requests_total', 'HTTP and S3 requests the read API received, /metrics included.', metrics.requests),
    counter('offsetlake_read_kafka_records_total', 'Committed records read from Kafka to rebuild files (a read shared by several files or columns counts once).', metrics.kafkaRecords),
    counter('offsetlake_read_kafka_bytes_total', 'Key + value + header bytes of the committed records read from Kafka to rebuild files.', metrics.kafkaBytes),
    counter('offsetlake_read_served_bytes_total', 'Bytes of data files sent to clients (file bodies; not manifests or metadata).', metrics.bytesServed),
    { name: 'offsetlake_read_rebuilds_total', help: 'Rebuilds from Kafka: whole files (without granules), row groups with all their columns, row groups with some.', type: 'counter', samples: [
      { labels: { kind: 'file' }, value: metrics.rebuilds },
      { labels: { kind: 'granule' }, value: metrics.granuleRebuilds },
      { labels: { kind: 'partial_granule' }, value: metrics.partialGranuleRebuilds },
    ] },
    counter('offsetlake_read_rebuild_mismatches_total', 'Rebuilds (whole files, row groups or chunks) whose bytes did not match the catalog: never served.', metrics.mismatches + metrics.chunkMismatches),
    counter('offsetlake_read_stored_piece_mismatches_total', 'Reads refused because the page index and footer the catalog keeps are not the bytes the file was built with: never served.', metrics.storedPieceMismatches),
    counter('offsetlake_read_chunk_cache_hits_total', 'Column chunks answered from the cache.', metrics.chunkCacheHits),
    counter('offsetlake_read_chunk_cache_misses_total', 'Column chunks not in the cache, rebuilt.', metrics.chunkCacheMisses),
    counter('offsetlake_read_file_cache_hits_total', 'Whole files (without granules) answered from the cache.', metrics.cacheHits),
    counter('offsetlake_read_file_cache_misses_total', 'Whole files (without granules) not in the cache, rebuilt.', metrics.cacheMisses),
    counter('offsetlake_read_held_record_hits_total', 'Reads of records answered by records held or being fetched for another read, with no Kafka read of their own.', metrics.granuleRecordHits),
    counter('offsetlake_read_footer_hits_total', 'Range requests answered from the catalog\'s footer, without Kafka.', metrics.footerHits),
    counter('offsetlake_read_expired_total', 'Requests for files whose offsets Kafka no longer holds (410).', metrics.expired),
    counter('offsetlake_read_busy_total', 'Responses refused with a 503 because no room in the response budget came free in time.', metrics.busy),
    counter('offsetlake_read_abandoned_total', 'Responses dropped before they were sent because their client had gone.', metrics.abandoned),
    counter('offsetlake_read_write_timeouts_total', 'Responses cut off because their client took less than the least rate (or nothing) in a window of the write deadline.', metrics.writeTimeouts),
    { name: 'offsetlake_read_cache_entries', help: 'Entries in the cache of rebuilt chunks and files.', type: 'gauge', samples: [{ value: cache.entries }] },
    { name: 'offsetlake_read_cache_bytes', help: 'Bytes held by the cache of rebuilt chunks and files.', type: 'gauge', samples: [{ value: cache.bytes }] },
    { name: 'offsetlake_read_held_record_bytes', help: 'Bytes of records held for the reads that share them (a range\'s other files, a row group\'s other columns), in their share of the cache budget.', type: 'gauge', samples: [{ value: heldRecords.bytes }] },
    { name: 'offsetlake_rebuild_duration_seconds', help: 'Time to rebuild from Kafka and verify a whole file (kind="file") or a row group\'s columns (kind="granule").', type: 'histogram', samples: [rebuildDurations.file, rebuildDurations.granule] },
  ];
}
