/**
 * Pure: the committed records of one read_committed Fetch response, and the reader's next
 * fetch position.
 *
 * A read_committed fetch stops at the last stable offset, but it still returns the
 * record batches of aborted transactions, together with the list of aborted transactions
 * (producer id, first offset) that overlap the returned data, and the control batches
 * (COMMIT / ABORT markers). Kafka's own consumer drops them on the client; so does this,
 * with the same rule (Java client, `CompletedFetch.nextFetchedRecord`):
 *
 * - Walk the batches in offset order. Before each batch that has a producer id, every
 *   aborted transaction whose first offset ≤ the batch's last offset makes its producer
 *   "aborting".
 * - A control batch is never returned; if it is an ABORT marker, its producer stops
 *   aborting.
 * - A transactional data batch of an aborting producer is dropped.
 *
 * The next fetch position is one past the last offset of the last batch looked at
 * (aborted batches and markers included), never the last committed record's offset + 1,
 * and never beyond `untilOffset`: offsets with no committed record belong to the range
 * that read past them.
 */
import { batchLastOffset, isControlBatch, isTransactionalBatch, type RecordBatch } from './batch-header.js';
import { appendRecords, countRecords, isAbortMarker, type BatchRecord } from './record-batch.js';
import { UnsupportedRecordFormatError } from './errors.js';

export { batchLastOffset, isControlBatch, isTransactionalBatch, type RecordBatch } from './batch-header.js';
export { isAbortMarker } from './record-batch.js';

/**
 * The engine's record (timestamps in ms: the record's CreateTime, or the batch's
 * LogAppendTime when the topic uses it), with Buffers: views into the Fetch response, or
 * into its batch decompressed (record-batch.ts).
 */
export interface CommittedRecord extends BatchRecord {
  offset: bigint;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  /** In the record's order; names are UTF-8, as every Kafka client writes them. */
  headers: [string, Buffer | null][];
}

export interface AbortedTransaction {
  producerId: bigint;
  firstOffset: bigint;
}

export interface CommittedSlice {
  records: CommittedRecord[];
  /** Where the next fetch starts: ≥ fromOffset, ≤ untilOffset. */
  nextOffset: bigint;
  /** Sum of key, value and header name and value bytes of `records`. */
  bytes: number;
  /** Records dropped because their transaction was aborted (within [from, until)). */
  abortedRecords: number;
  /** Control batches (transaction markers) passed over (within [from, until)). */
  controlBatches: number;
}

/**
 * The committed records of `batches` (one partition of one read_committed Fetch response)
 * with offsets in [fromOffset, untilOffset), and the next fetch position.
 */
export function committedSlice(
  batches: readonly RecordBatch[],
  abortedTransactions: readonly AbortedTransaction[] | null | undefined,
  fromOffset: bigint,
  untilOffset: bigint,
  where: { topic: string; partition: number } = { topic: '?', partition: -1 },
): CommittedSlice {
  const pending = [...(abortedTransactions ?? [])].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  let nextPending = 0;
  const aborting = new Set<bigint>();
  const records: CommittedRecord[] = [];
  let bytes = 0;
  let abortedRecords = 0;
  let controlBatches = 0;
  let nextOffset = fromOffset;

  for (const batch of batches) {
    if (batch.baseOffset >= untilOffset) break;
    if (batch.magic !== 2) throw new UnsupportedRecordFormatError(where.topic, where.partition, batch.baseOffset, batch.magic);
    const lastOffset = batchLastOffset(batch);
    const inRange = lastOffset >= fromOffset;
    const end = lastOffset + 1n;
    if (end > nextOffset) nextOffset = end < untilOffset ? end : untilOffset;

    if (batch.producerId >= 0n) {
      while (nextPending < pending.length && pending[nextPending]!.firstOffset <= lastOffset) aborting.add(pending[nextPending++]!.producerId);
      if (isControlBatch(batch)) {
        if (isAbortMarker(batch, where)) aborting.delete(batch.producerId);
      } else if (isTransactionalBatch(batch) && aborting.has(batch.producerId)) {
        if (inRange) abortedRecords += countRecords(batch, where, fromOffset, untilOffset);
        continue;
      }
    }
    if (isControlBatch(batch)) {
      if (inRange) controlBatches++;
      continue;
    }
    if (!inRange) continue;
    bytes += appendRecords(batch, where, fromOffset, untilOffset, records);
  }
  return { records, nextOffset, bytes, abortedRecords, controlBatches };
}
