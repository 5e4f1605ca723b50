/** Counters of the read path, as one plain object (served at GET /metrics, printed by bench). */
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
  /** Responses cut off because their client took nothing for the write deadline. */
  writeTimeouts: number;
}

export function newMetrics(): ReaderMetrics {
  return { requests: 0, rebuilds: 0, granuleRebuilds: 0, partialGranuleRebuilds: 0, chunkCacheHits: 0, chunkCacheMisses: 0, granuleRecordHits: 0, chunkMismatches: 0, mismatches: 0, cacheHits: 0, cacheMisses: 0, footerHits: 0, kafkaRecords: 0, kafkaBytes: 0, bytesServed: 0, expired: 0, busy: 0, abandoned: 0, writeTimeouts: 0 };
}
