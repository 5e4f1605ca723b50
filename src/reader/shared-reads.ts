/**
 * Kafka reads the reader shares: a partition's committed records, once fetched, are held by
 * offset span for the reads that want them next, and a read is assembled from the spans
 * held (or being fetched) with only the gaps asked of Kafka. Two kinds of read want the
 * same records soon after one another:
 *
 * - the files of one range: one per time bucket, all over the range's offsets (a range
 *   that crosses an hour boundary with jittered timestamps has two), so each file's read
 *   would otherwise fetch the whole span again;
 * - the column chunks of one granule, which engines ask for one request at a time.
 *
 * A read says whether what it fetches is worth holding (`keep`); a span being fetched is
 * joined by any read that needs it, held or not. Held spans live in a byte-bounded cache
 * of their own, a share of the reader's budget (src/reader/service.ts `heldRecordsShare`),
 * least recently used going first, so that they never push out the rebuilt chunks.
 * Records of a span are the topic's committed records, whatever table asks: spans are
 * keyed by topic, topic id and partition.
 */
import type { CommittedSource, SourceReadOptions } from '../kafka/source.js';
import { recordBytes, type KafkaRecord } from '../kafka/record.js';
import { fetchBytesForPart } from '../kafka/fetch-size.js';
import type { ByteBoundedCache } from './cache.js';

/**
 * What a held record costs beyond its bytes (its object, offset, and the views of its key,
 * value and headers), so that the cache's budget bounds memory, not only payload.
 */
const recordOverheadBytes = 96;

/** A partition's committed records of [start, end), as one read brought them. */
export class HeldSpan {
  constructor(readonly start: bigint, readonly end: bigint, readonly records: readonly KafkaRecord[], readonly byteLength: number) {}
}

interface SpanEntry {
  start: bigint;
  end: bigint;
  key: string;
  /** While Kafka is asked for it; then the span is in the cache (or was not kept). */
  fetching?: Promise<HeldSpan>;
}

export interface SharedReads extends CommittedSource {
  /** Reads answered wholly from held spans or fetches already under way, with nothing asked of Kafka. */
  readonly heldReads: number;
}

/** `source` with its reads shared through `cache` (the reader's share for held records). */
export function sharedReads(source: CommittedSource, cache: ByteBoundedCache<HeldSpan>): SharedReads {
  const partitions = new Map<string, SpanEntry[]>();
  let heldReads = 0;

  /** The partition's spans, sorted by start; entries whose span the cache let go are dropped. */
  const entriesOf = (partitionKey: string): SpanEntry[] => {
    const entries = (partitions.get(partitionKey) ?? []).filter((entry) => entry.fetching || cache.has(entry.key));
    if (entries.length === 0) partitions.delete(partitionKey);
    else partitions.set(partitionKey, entries);
    return entries;
  };

  const fetchSpan = async (topic: string, partition: number, from: bigint, until: bigint, options: SourceReadOptions | undefined): Promise<HeldSpan> => {
    const records: KafkaRecord[] = [];
    let bytes = 0;
    let end = from;
    for await (const batch of source.read(topic, partition, from, until, options)) {
      for (const record of batch.records) records.push(record);
      // the committed read counts its records' bytes already (SourceBatch.bytes)
      if (batch.bytes !== undefined) bytes += batch.bytes;
      else for (const record of batch.records) bytes += recordBytes(record);
      bytes += batch.records.length * recordOverheadBytes;
      end = batch.nextOffset;
    }
    return new HeldSpan(from, end, records, bytes);
  };

  return {
    get heldReads() {
      return heldReads;
    },
    lastStableOffset: (topic, partition) => source.lastStableOffset(topic, partition),
    ...(source.cleanupPolicy ? { cleanupPolicy: (topic: string) => source.cleanupPolicy!(topic) } : {}),
    async *read(topic, partition, from, until, options) {
      const partitionKey = `${topic}\u0000${options?.topicId?.id ?? ''}\u0000${partition}`;
      let position = from;
      let fetched = false;
      while (position < until) {
        const entries = entriesOf(partitionKey);
        const next = entries.find((entry) => entry.end > position);
        let span: HeldSpan | undefined;
        let endsEarly = false;
        if (next && next.start <= position) {
          span = next.fetching ? await next.fetching.catch(() => undefined) : cache.get(next.key);
          if (!span) continue; // let go, or its fetch failed, meanwhile: looked up again, then fetched
        } else {
          const gapEnd = next && next.start < until ? next.start : until;
          const entry: SpanEntry = { start: position, end: gapEnd, key: `span:${partitionKey}:${position}-${gapEnd}` };
          const gapOptions = options?.fetchBytes ? { ...options, fetchBytes: fetchBytesForPart(options.fetchBytes, position, gapEnd, from, until) } : options;
          entry.fetching = fetchSpan(topic, partition, position, gapEnd, gapOptions);
          entries.push(entry);
          entries.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
          partitions.set(partitionKey, entries);
          fetched = true;
          try {
            span = await entry.fetching;
            entry.end = span.end;
            if (options?.keep && span.end > span.start) cache.set(entry.key, span);
          } finally {
            delete entry.fetching;
          }
          // The read ended at the partition's last stable offset before the gap's end: so does this one.
          endsEarly = span.end < gapEnd;
        }
        const upTo = span.end < until ? span.end : until;
        if (upTo > position) yield { records: recordsIn(span.records, position, upTo), nextOffset: upTo };
        position = upTo;
        if (endsEarly) break;
      }
      if (!fetched) heldReads += 1;
    },
  };
}

/** The records of `records` (in offset order) with offsets in [from, until). */
function recordsIn(records: readonly KafkaRecord[], from: bigint, until: bigint): KafkaRecord[] {
  const first = firstAtOrAfter(records, from);
  return records.slice(first, firstAtOrAfter(records, until, first));
}

function firstAtOrAfter(records: readonly KafkaRecord[], offset: bigint, low = 0): number {
  let high = records.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (records[mid]!.offset < offset) low = mid + 1;
    else high = mid;
  }
  return low;
}
