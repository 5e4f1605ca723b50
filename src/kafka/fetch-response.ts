/**
 * Pure: a Fetch response body (after the response header), versions 4 to 17, with each
 * partition's records left as a view of the bytes they lie in (batch-header.ts reads
 * them). Error codes are returned, never thrown: the caller decides what each means.
 *
 *   Fetch Response (v4-v17) => throttle_time_ms [error_code session_id](v7+) [responses] TAG_BUFFER(v12+)
 *     responses => topic(v4-v12: STRING, COMPACT_STRING from v12) | topic_id(v13+: UUID)
 *                  [partitions] TAG_BUFFER(v12+)
 *       partitions => partition_index INT32, error_code INT16, high_watermark INT64,
 *                     last_stable_offset INT64, log_start_offset INT64 (v5+),
 *                     [aborted_transactions: producer_id INT64, first_offset INT64, TAG_BUFFER(v12+)] (nullable),
 *                     preferred_read_replica INT32 (v11+), records (nullable RECORDS),
 *                     TAG_BUFFER(v12+: 0 diverging_epoch, 1 current_leader, 2 snapshot_id)
 *     top-level TAG_BUFFER (v16+): 0 node_endpoints [node_id INT32, host COMPACT_STRING, port INT32, rack COMPACT_NULLABLE_STRING]
 *
 * From v12 on ("flexible") arrays, strings and records carry their length + 1 as an
 * unsigned varint (0: null) and structures end in tagged fields; before, lengths are
 * INT32 (arrays, records) or INT16 (strings), -1 for null.
 */
import { MalformedResponseError } from './errors.js';

export const FETCH_MIN_VERSION = 4;
export const FETCH_MAX_VERSION = 17;

export interface FetchAbortedTransaction {
  producerId: bigint;
  firstOffset: bigint;
}

export interface FetchPartitionResponse {
  partition: number;
  errorCode: number;
  highWatermark: bigint;
  lastStableOffset: bigint;
  /** -1 before v5. */
  logStartOffset: bigint;
  /** Null when the broker sends none (read_uncommitted, or nothing aborted overlaps). */
  abortedTransactions: FetchAbortedTransaction[] | null;
  /** -1 before v11, or when the leader is to be read from. */
  preferredReadReplica: number;
  /** The partition's record batches as they lie in the response (the last may be cut); null when absent. */
  records: Buffer | null;
  /** v12+ tagged fields, when sent. */
  divergingEpoch?: { epoch: number; endOffset: bigint };
  currentLeader?: { leaderId: number; leaderEpoch: number };
  snapshotId?: { endOffset: bigint; epoch: number };
}

export interface FetchTopicResponse {
  /** The topic's name (up to v12), or null. */
  topic: string | null;
  /** The topic's id (v13+, as 8-4-4-4-12 hex), or null. */
  topicId: string | null;
  partitions: FetchPartitionResponse[];
}

export interface FetchResponse {
  version: number;
  throttleTimeMs: number;
  /** 0 before v7. */
  errorCode: number;
  sessionId: number;
  responses: FetchTopicResponse[];
  /** v16+: brokers the response names (e.g. a new leader's address). */
  nodeEndpoints: { nodeId: number; host: string; port: number; rack: string | null }[];
}

class Cursor {
  at = 0;
  constructor(readonly bytes: Buffer, readonly version: number) {}

  fail(what: string): never {
    throw new MalformedResponseError('Fetch', this.version, this.at, this.bytes.length, what);
  }

  need(n: number, what: string): void {
    if (this.at + n > this.bytes.length) this.fail(`${what} (${n} bytes) runs past the end`);
  }

  int8(what: string): number {
    this.need(1, what);
    return this.bytes.readInt8(this.at++);
  }

  int16(what: string): number {
    this.need(2, what);
    const v = this.bytes.readInt16BE(this.at);
    this.at += 2;
    return v;
  }

  int32(what: string): number {
    this.need(4, what);
    const v = this.bytes.readInt32BE(this.at);
    this.at += 4;
    return v;
  }

  int64(what: string): bigint {
    this.need(8, what);
    const v = this.bytes.readBigInt64BE(this.at);
    this.at += 8;
    return v;
  }

  uvarint(what: string): number {
    let v = 0;
    for (let shift = 0; shift <= 28; shift += 7) {
      this.need(1, what);
      const b = this.bytes[this.at++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
    return this.fail(`${what}: unsigned varint longer than 5 bytes`);
  }

  /** A length: flexible (uvarint length + 1, 0 = null → -1) or INT32/INT16. */
  length(what: string, flexible: boolean, int16 = false): number {
    if (flexible) return this.uvarint(what) - 1;
    return int16 ? this.int16(what) : this.int32(what);
  }

  bytesOf(n: number, what: string): Buffer {
    if (n < 0) this.fail(`${what}: negative length ${n}`);
    this.need(n, what);
    const v = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return v;
  }

  string(what: string, flexible: boolean): string | null {
    const n = this.length(what, flexible, true);
    if (n < 0) return null;
    return this.bytesOf(n, what).toString('utf8');
  }

  uuid(what: string): string {
    const hex = this.bytesOf(16, what).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  array<T>(what: string, flexible: boolean, item: (i: number) => T): T[] | null {
    const n = this.length(`${what} count`, flexible);
    if (n < 0) return null;
    if (n > this.bytes.length - this.at) this.fail(`${what}: ${n} entries cannot fit in what is left`);
    const out: T[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = item(i);
    return out;
  }

  /** A TAG_BUFFER: calls `known` for each tag with a cursor over its bytes, skips the others. */
  tags(what: string, known: (tag: number, end: number) => void = () => {}): void {
    const count = this.uvarint(`${what} tag count`);
    for (let i = 0; i < count; i++) {
      const tag = this.uvarint(`${what} tag`);
      const size = this.uvarint(`${what} tag ${tag} size`);
      this.need(size, `${what} tag ${tag}`);
      const end = this.at + size;
      known(tag, end);
      this.at = end;
    }
  }
}

/** Parses a Fetch response body of `version` (4-17). Throws MalformedResponseError on bytes that do not parse. */
export function parseFetchResponse(body: Buffer, version: number): FetchResponse {
  if (!Number.isInteger(version) || version < FETCH_MIN_VERSION || version > FETCH_MAX_VERSION) {
    throw new RangeError(`Fetch v${version} is not parsed here (v${FETCH_MIN_VERSION} to v${FETCH_MAX_VERSION} are)`);
  }
  const c = new Cursor(body, version);
  const flexible = version >= 12;
  const throttleTimeMs = c.int32('throttle_time_ms');
  const errorCode = version >= 7 ? c.int16('error_code') : 0;
  const sessionId = version >= 7 ? c.int32('session_id') : 0;
  const responses = c.array('responses', flexible, () => {
    const topic = version <= 12 ? c.string('topic', flexible) : null;
    const topicId = version >= 13 ? c.uuid('topic_id') : null;
    const partitions = c.array('partitions', flexible, () => partitionResponse(c, version, flexible)) ?? [];
    if (flexible) c.tags('topic');
    return { topic, topicId, partitions };
  }) ?? [];
  const nodeEndpoints: FetchResponse['nodeEndpoints'] = [];
  if (flexible) {
    c.tags('response', (tag) => {
      if (tag !== 0) return;
      for (const endpoint of c.array('node_endpoints', true, () => {
        const nodeId = c.int32('node_id');
        const host = c.string('host', true) ?? '';
        const port = c.int32('port');
        const rack = c.string('rack', true);
        c.tags('node_endpoint');
        return { nodeId, host, port, rack };
      }) ?? []) nodeEndpoints.push(endpoint);
    });
  }
  if (c.at !== body.length) c.fail(`${body.length - c.at} bytes are left after the response`);
  return { version, throttleTimeMs, errorCode, sessionId, responses, nodeEndpoints };
}

function partitionResponse(c: Cursor, version: number, flexible: boolean): FetchPartitionResponse {
  const partition = c.int32('partition_index');
  const errorCode = c.int16('error_code');
  const highWatermark = c.int64('high_watermark');
  const lastStableOffset = c.int64('last_stable_offset');
  const logStartOffset = version >= 5 ? c.int64('log_start_offset') : -1n;
  const abortedTransactions = c.array('aborted_transactions', flexible, () => {
    const producerId = c.int64('producer_id');
    const firstOffset = c.int64('first_offset');
    if (flexible) c.tags('aborted_transaction');
    return { producerId, firstOffset };
  });
  const preferredReadReplica = version >= 11 ? c.int32('preferred_read_replica') : -1;
  const size = c.length('records size', flexible);
  const records = size < 0 ? null : c.bytesOf(size, 'records');
  const response: FetchPartitionResponse = { partition, errorCode, highWatermark, lastStableOffset, logStartOffset, abortedTransactions, preferredReadReplica, records };
  if (flexible) {
    c.tags('partition', (tag, end) => {
      if (tag === 0) response.divergingEpoch = { epoch: c.int32('diverging_epoch.epoch'), endOffset: c.int64('diverging_epoch.end_offset') };
      else if (tag === 1) response.currentLeader = { leaderId: c.int32('current_leader.leader_id'), leaderEpoch: c.int32('current_leader.leader_epoch') };
      else if (tag === 2) response.snapshotId = { endOffset: c.int64('snapshot_id.end_offset'), epoch: c.int32('snapshot_id.epoch') };
      if (c.at > end) c.fail(`partition tag ${tag} is longer than its size`);
    });
  }
  return response;
}
