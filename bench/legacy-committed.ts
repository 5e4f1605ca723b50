/**
 * The committed filter as it was before issue 27 (src/kafka/committed.ts at 0dd0689), on
 * @platformatic/kafka's decoded batches (`fetchV*.parseResponse`): what the benches compare
 * our own decoding with. Same rule, same output.
 */
import type { RecordsBatch } from '@platformatic/kafka';
import type { AbortedTransaction, CommittedRecord, CommittedSlice } from '../src/kafka/committed.js';
import { UnsupportedRecordFormatError } from '../src/kafka/errors.js';

// Batch attribute bits (Kafka's DefaultRecordBatch).
const TIMESTAMP_TYPE_LOG_APPEND = 1 << 3;
const TRANSACTIONAL = 1 << 4;
const CONTROL = 1 << 5;
// Control record types, in the control record's key (int16 version, int16 type).
const ABORT_MARKER = 0;

function isControlBatch(batch: RecordsBatch): boolean {
  return (batch.attributes & CONTROL) !== 0;
}

function isTransactionalBatch(batch: RecordsBatch): boolean {
  return (batch.attributes & TRANSACTIONAL) !== 0;
}

function batchLastOffset(batch: RecordsBatch): bigint {
  return batch.firstOffset + BigInt(batch.lastOffsetDelta);
}

/** Whether a control batch holds an ABORT marker (a COMMIT marker otherwise). */
function isAbortMarker(batch: RecordsBatch): boolean {
  const key = batch.records[0]?.key;
  return key !== null && key !== undefined && key.length >= 4 && key.readInt16BE(2) === ABORT_MARKER;
}

/**
 * The committed records of `batches` (one partition of one read_committed Fetch response)
 * with offsets in [fromOffset, untilOffset), and the next fetch position.
 */
export function legacyCommittedSlice(
  batches: readonly RecordsBatch[],
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
    if (batch.firstOffset >= untilOffset) break;
    if (batch.magic !== 2) throw new UnsupportedRecordFormatError(where.topic, where.partition, batch.firstOffset, batch.magic);
    const lastOffset = batchLastOffset(batch);
    const inRange = lastOffset >= fromOffset;
    const end = lastOffset + 1n;
    if (end > nextOffset) nextOffset = end < untilOffset ? end : untilOffset;

    if (batch.producerId >= 0n) {
      while (nextPending < pending.length && pending[nextPending]!.firstOffset <= lastOffset) aborting.add(pending[nextPending++]!.producerId);
      if (isControlBatch(batch)) {
        if (isAbortMarker(batch)) aborting.delete(batch.producerId);
      } else if (isTransactionalBatch(batch) && aborting.has(batch.producerId)) {
        if (inRange) {
          for (const record of batch.records) {
            const offset = batch.firstOffset + BigInt(record.offsetDelta);
            if (offset >= fromOffset && offset < untilOffset) abortedRecords++;
          }
        }
        continue;
      }
    }
    if (isControlBatch(batch)) {
      if (inRange) controlBatches++;
      continue;
    }
    if (!inRange) continue;

    const logAppendTime = (batch.attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
    for (const record of batch.records) {
      const offset = batch.firstOffset + BigInt(record.offsetDelta);
      if (offset < fromOffset) continue;
      if (offset >= untilOffset) break;
      const headers: [string, Buffer | null][] = new Array(record.headers.length);
      let headerBytes = 0;
      for (let i = 0; i < record.headers.length; i++) {
        const [name, value] = record.headers[i]!;
        headers[i] = [name === null ? '' : name.toString('utf8'), value];
        headerBytes += (name?.length ?? 0) + (value?.length ?? 0);
      }
      bytes += (record.key?.length ?? 0) + (record.value?.length ?? 0) + headerBytes;
      records.push({
        offset,
        timestamp: Number(logAppendTime ? batch.maxTimestamp : batch.firstTimestamp + record.timestampDelta),
        key: record.key,
        value: record.value,
        headers,
      });
    }
  }
  return { records, nextOffset, bytes, abortedRecords, controlBatches };
}
