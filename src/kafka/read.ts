/**
 * The committed read: a partition's committed records in [fromOffset, untilOffset), read
 * once with read_committed Fetch requests, without a consumer group (no JoinGroup, no
 * offsets committed, no fetch session).
 *
 * It sends Fetch itself (the library's `fetchV*` request codec, on the connection's
 * reader client) rather than through `Consumer.fetch`, because:
 * - Consumer.fetch keeps one incremental fetch session per broker (KIP-227), which
 *   concurrent reads of several partitions through one client would race on;
 * - its aborted-transaction filter is incomplete (see committed.ts and the report);
 *   here every response is filtered by committed.ts, Kafka's own rule.
 *
 * It decodes the response itself (fetch-response.ts, batch-header.ts, record-batch.ts):
 * record batches are read where they lie, checked against their CRC-32C, decompressed by
 * native code, and a record's key, value and header values are views into those bytes. The library's decoder
 * made a JavaScript object and Buffers per record and decompressed LZ4 in WebAssembly;
 * bench/kafka-read.ts compares the two (docs/measurements.md, "The committed read's Fetch decoding").
 *
 * The reader stops at `untilOffset` exactly, or at the partition's last stable offset as
 * the last fetch reported it, whichever comes first (it never waits for a transaction to
 * finish). `position` is then the next fetch position: every offset below it was read
 * past, committed or not.
 */
import * as kafkaLibrary from '@platformatic/kafka';
import { FetchIsolationLevels, kGetApi, type Admin, type API, type Connection, type fetchV17 } from '@platformatic/kafka';
import { committedSlice, type AbortedTransaction, type CommittedSlice } from './committed.js';
import type { KafkaConnection } from './connect.js';
import {
  isRetriableLibraryError,
  KafkaRequestError,
  OFFSET_OUT_OF_RANGE,
  OffsetOutOfRangeError,
  partitionName,
  protocolErrorCodes,
  ReadStalledError,
  staleMetadataCodes,
  TopicRecreatedError,
} from './errors.js';
import { FETCH_MAX_VERSION, FETCH_MIN_VERSION, parseFetchResponse, type FetchResponse } from './fetch-response.js';
import { earliestOffset, highWatermark } from './offsets.js';
import { parseRecordBatches, type RecordBatch } from './batch-header.js';
import { partitionLeader, type PartitionLeader } from './topics.js';
import { doubling, pause } from '../common/retry.js';

/** Pauses between Fetch retries: 100 ms doubling, at most 2 s. */
const fetchPauses = doubling(100, 2000);

export interface ReadOptions {
  /** Bytes asked for per Fetch (Kafka returns at least one whole batch even if larger). Default 4 MiB: 1-8 MiB read equally fast; 32 MiB is 2-3x slower (decoding and GC of large responses). */
  maxBytes?: number;
  /** Send the next Fetch while the caller handles the current batch. Default true. */
  prefetch?: boolean;
  /**
   * Retries of a Fetch that fails with a retriable error (leader moved, connection lost).
   * Default 8: with fetchPauses, 9.1 s of pauses, longer than a failover after a broker
   * died (the controller moves its leaders once its session with it times out,
   * broker.session.timeout.ms, 9 s by default and on MSK). At 5 (3.1 s), a read of a
   * partition whose leader was SIGKILLed failed before a new leader was elected
   * (bench/chaos broker-kill: serve answered a client 500).
   */
  retries?: number;
  /** Empty answers below the LSO tolerated before ReadStalledError (e.g. tiered storage warming). Default 20. */
  stallLimit?: number;
  signal?: AbortSignal;
  /** The topic id the read must find (a table's, with the table's name): another one is a TopicRecreatedError. Default: the first fetch's. */
  topicId?: { id: string; table: string };
  /**
   * End the read (`end` = 'limit') after the Fetch whose committed records bring the read
   * to this many records or bytes (key + value + headers), whichever comes first. The read
   * then ends where that Fetch's batches end, so a next read from `position` fetches none
   * of them again; no Fetch is sent past it (no prefetch), and no Fetch asks for much
   * more than the bytes left (or the records left, at the mean size read so far). Bytes
   * asked are Kafka's (compressed, framed); the limit counts decoded record bytes.
   */
  stopAfter?: ReadLimit;
  /** The most bytes one batch's records may decompress to; a larger batch is a BatchTooLargeError (batch-decompress.ts). Default: no limit. */
  maxBatchBytes?: number;
}

export interface ReadLimit {
  records?: number;
  bytes?: number;
}

export interface CommittedBatch extends CommittedSlice {
  /** Offset this fetch started from. */
  fromOffset: bigint;
  /**
   * Bytes of the record batches this Fetch brought and decoded, as Kafka stores them (each
   * batch's length + its 12-byte offset and length fields), also those outside the read's
   * span and aborted ones: summed over a read, what it fetched, to compare with the log's size.
   */
  fetchedBytes: number;
  /** The partition's bounds as this fetch saw them. */
  lastStableOffset: bigint;
  highWatermark: bigint;
  logStartOffset: bigint;
}

export type ReadEnd = 'until' | 'lso' | 'limit';

/** Bytes a Fetch asks for unless told otherwise (see ReadOptions.maxBytes). */
export const defaultMaxBytes = 4 * 1024 * 1024;
const NO_SESSION_ID = 0;
const FINAL_EPOCH = -1; // with session id 0: a sessionless fetch, no broker-side state

type FetchRequestTopic = fetchV17.FetchRequestTopic;

type FetchArgs = [maxWaitMs: number, minBytes: number, maxBytes: number, isolationLevel: number, sessionId: number, sessionEpoch: number, topics: FetchRequestTopic[], forgotten: never[], rackId: string];
type FetchApi = API<FetchArgs, unknown>;

interface FetchCodec {
  version: number;
  createRequest: (...args: FetchArgs) => ReturnType<typeof fetchV17.createRequest>;
}

/** The highest Fetch version both the broker and the library speak (the library's own choice), with its request codec. */
function getFetchCodec(client: Admin): Promise<FetchCodec> {
  return new Promise((resolve, reject) => {
    client[kGetApi]<FetchArgs, unknown>('Fetch', (error, api?: FetchApi) => {
      const codec = api ? (kafkaLibrary as unknown as Record<string, Partial<FetchCodec> | undefined>)[`fetchV${api.version}`] : undefined;
      if (error || !api || !codec?.createRequest) reject(error ?? new Error(`no Fetch codec for version ${api?.version}`));
      else if (api.version < FETCH_MIN_VERSION || api.version > FETCH_MAX_VERSION) reject(new Error(`Fetch v${api.version} is not decoded here (v${FETCH_MIN_VERSION} to v${FETCH_MAX_VERSION} are)`));
      else resolve({ version: api.version, createRequest: codec.createRequest });
    });
  });
}

/**
 * Sends one Fetch and returns its response body as one contiguous Buffer. The connection
 * collects a response as the socket's chunks (64 KiB each); one copy of them lets the
 * parsers index the body directly (the library's reader looked every read up from the
 * first chunk: O(size²), see the report).
 */
function sendFetch(connection: Connection, codec: FetchCodec, args: FetchArgs): Promise<Buffer> {
  const flexible = codec.version >= 12; // request and response headers carry tagged fields from v12 on
  return new Promise((resolve, reject) => {
    connection.send(
      1,
      codec.version,
      () => codec.createRequest(...args),
      (_correlationId, _apiKey, _apiVersion, reader) => reader.buffer.slice(reader.position, reader.length),
      flexible,
      flexible,
      (error, body) => (error ? reject(error) : resolve(body as Buffer)),
    );
  });
}

/** One partition's part of a Fetch response, its record batches parsed (not yet decompressed). */
interface FetchedPartition {
  batches: RecordBatch[];
  abortedTransactions: AbortedTransaction[] | null;
  lastStableOffset: bigint;
  highWatermark: bigint;
  logStartOffset: bigint;
}

/** Reads committed records of one partition. Iterate it, or call `next()` until it returns null. */
export class CommittedReader implements AsyncIterable<CommittedBatch> {
  readonly topic: string;
  readonly partition: number;
  readonly untilOffset: bigint;
  /** `maxBatchBytes`: read by the batch decoder, to which this reader is the batches' source. */
  readonly maxRecordBytes: number | undefined;
  #position: bigint;
  #end: ReadEnd | undefined;
  #pending: Promise<CommittedBatch | null> | undefined;
  #leader: PartitionLeader | undefined;
  /** The broker the last Fetch went to (for what a retry says). */
  #triedOn: number | undefined;
  #topicId: string | undefined;
  readonly #options: Required<Omit<ReadOptions, 'signal' | 'topicId' | 'stopAfter' | 'maxBatchBytes'>> & { signal: AbortSignal | undefined };
  /** What `stopAfter` leaves (records, bytes); Infinity without one. */
  #recordsLeft: number;
  #bytesLeft: number;
  #recordsRead = 0;
  #bytesRead = 0;
  /**
   * The highest LSO a Fetch of this read reported. A lower one later comes from a new
   * leader whose high watermark has not caught up yet: offsets below this one are stable,
   * so the read waits for them instead of ending there.
   */
  #stableSeen = -1n;
  readonly #table: string | undefined;
  readonly #kafka: KafkaConnection;

  constructor(kafka: KafkaConnection, topic: string, partition: number, fromOffset: bigint, untilOffset: bigint, options: ReadOptions = {}) {
    if (fromOffset < 0n) throw new Error(`a read of ${partitionName(topic, partition)} cannot start at negative offset ${fromOffset}`);
    if (untilOffset < fromOffset) throw new Error(`a read of ${partitionName(topic, partition)} cannot end (${untilOffset}) before it starts (${fromOffset})`);
    this.#kafka = kafka;
    this.topic = topic;
    this.partition = partition;
    this.untilOffset = untilOffset;
    this.maxRecordBytes = options.maxBatchBytes;
    this.#position = fromOffset;
    this.#options = {
      maxBytes: options.maxBytes ?? defaultMaxBytes,
      prefetch: options.prefetch ?? true,
      retries: options.retries ?? 8,
      stallLimit: options.stallLimit ?? 20,
      signal: options.signal,
    };
    if (!Number.isInteger(this.#options.maxBytes) || this.#options.maxBytes < 1 || this.#options.maxBytes > 0x7fffffff) {
      throw new Error(`maxBytes must be a whole number of bytes from 1 to 2^31-1, got ${options.maxBytes}`);
    }
    this.#recordsLeft = options.stopAfter?.records ?? Infinity;
    this.#bytesLeft = options.stopAfter?.bytes ?? Infinity;
    if (!(this.#recordsLeft > 0) || !(this.#bytesLeft > 0)) throw new Error(`stopAfter must leave a record and a byte to read, got ${JSON.stringify(options.stopAfter)}`);
    if (fromOffset === untilOffset) this.#end = 'until';
    this.#topicId = options.topicId?.id;
    this.#table = options.topicId?.table;
  }

  /** The next fetch position: offsets below it have been read past (and their committed records returned). */
  get position(): bigint {
    return this.#position;
  }

  /** Why the read ended (`until`: reached untilOffset; `lso`: reached the last stable offset first; `limit`: reached `stopAfter`), or undefined while it goes on. */
  get end(): ReadEnd | undefined {
    return this.#end;
  }

  /** Kafka's id of the topic this read started on (known after the first fetch). */
  get topicId(): string | undefined {
    return this.#topicId;
  }

  get done(): boolean {
    return this.#end !== undefined;
  }

  /** The next batch of committed records (possibly empty, when only aborted records or markers were passed), or null at the end. */
  async next(): Promise<CommittedBatch | null> {
    if (this.#end !== undefined) return null;
    const batch = await (this.#pending ?? this.#fetchFrom(this.#position));
    this.#pending = undefined;
    if (batch === null) return null;
    this.#position = batch.nextOffset;
    this.#recordsLeft -= batch.records.length;
    this.#bytesLeft -= batch.bytes;
    this.#recordsRead += batch.records.length;
    this.#bytesRead += batch.bytes;
    if (batch.nextOffset >= this.untilOffset) this.#end = 'until';
    else if (batch.nextOffset >= batch.lastStableOffset && batch.nextOffset >= this.#stableSeen) this.#end = 'lso';
    else if (this.#recordsLeft <= 0 || this.#bytesLeft <= 0) this.#end = 'limit';
    else if (this.#options.prefetch) {
      this.#pending = this.#fetchFrom(batch.nextOffset);
      this.#pending.catch(() => {}); // surfaced by the next next(); never unhandled if the caller stops early
    }
    return batch;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<CommittedBatch> {
    for (;;) {
      const batch = await this.next();
      if (batch === null) return;
      yield batch;
    }
  }

  /** One Fetch from `from` and its committed slice; null when the partition has nothing stable at or after `from`. */
  async #fetchFrom(from: bigint): Promise<CommittedBatch | null> {
    let empty = 0;
    for (;;) {
      const response = await this.#fetchOnce(from, empty === 0 ? 0 : Math.min(500, 10 * 2 ** empty));
      const until = response.lastStableOffset > from && response.lastStableOffset < this.untilOffset ? response.lastStableOffset : this.untilOffset;
      if (response.lastStableOffset > this.#stableSeen) this.#stableSeen = response.lastStableOffset;
      if (response.lastStableOffset <= from) {
        if (from < this.#stableSeen) {
          // A leader that moved reports less than this read already saw stable: asked again, after a pause.
          if (++empty >= this.#options.stallLimit) throw new ReadStalledError(this.topic, this.partition, from, response.lastStableOffset, empty);
          continue;
        }
        // Nothing stable at or after `from`: the read ends at the LSO.
        this.#end = 'lso';
        return null;
      }
      const slice = committedSlice(response.batches, response.abortedTransactions, from, until, this);
      if (slice.nextOffset > from) {
        let fetchedBytes = 0;
        for (const batch of response.batches) fetchedBytes += batch.batchLength + 12;
        return { ...slice, fromOffset: from, fetchedBytes, lastStableOffset: response.lastStableOffset, highWatermark: response.highWatermark, logStartOffset: response.logStartOffset };
      }
      if (++empty >= this.#options.stallLimit) throw new ReadStalledError(this.topic, this.partition, from, response.lastStableOffset, empty);
    }
  }

  async #fetchOnce(from: bigint, maxWaitMs: number): Promise<FetchedPartition> {
    const client = this.#kafka.reader();
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.#options.retries; attempt++) {
      this.#options.signal?.throwIfAborted();
      if (attempt > 0) {
        const wait = fetchPauses(attempt);
        this.#kafka.onRetry?.(`Fetch of ${partitionName(this.topic, this.partition)} from offset ${from}${this.#triedOn ? ` on broker ${this.#triedOn}` : ''} failed: ${(lastError as Error)?.message ?? lastError}; ${this.#leader ? '' : 'its leader looked up again, '}try ${attempt + 1} of ${this.#options.retries + 1} in ${wait} ms`);
        await pause(wait, this.#options.signal);
      }
      try {
        const leader = (this.#leader ??= await partitionLeader(client, this.topic, this.partition, attempt > 0));
        this.#triedOn = leader.leader;
        // A topic deleted and created again under the same name restarts its offsets: never read on into it.
        this.#topicId ??= leader.topicId;
        if (leader.topicId !== this.#topicId) throw new TopicRecreatedError(this.topic, this.#topicId, leader.topicId, this.#table === undefined ? undefined : { table: this.#table });
        if (leader.leader < 0) throw Object.assign(new Error(`${partitionName(this.topic, this.partition)} has no leader`), { retriable: true });
        const [connection, codec] = await Promise.all([client.connections.get({ host: leader.host, port: leader.port }), getFetchCodec(client)]);
        const byName = codec.version <= 12; // Fetch names topics by UUID from v13 on
        const maxBytes = this.#fetchBytes();
        const topics: FetchRequestTopic[] = [{
          topicId: byName ? this.topic : leader.topicId,
          partitions: [{ partition: this.partition, currentLeaderEpoch: leader.leaderEpoch, fetchOffset: from, lastFetchedEpoch: -1, partitionMaxBytes: maxBytes }],
        }];
        let response: FetchResponse;
        try {
          const body = await sendFetch(connection, codec, [maxWaitMs, 1, maxBytes, FetchIsolationLevels.READ_COMMITTED, NO_SESSION_ID, FINAL_EPOCH, topics, [], '']);
          response = parseFetchResponse(body, codec.version);
        } catch (error) {
          const code = protocolErrorCodes(error)[0];
          throw code === undefined ? error : await this.#codeError(from, code, error);
        }
        const topic = response.responses.find((t) => (byName ? t.topic === this.topic : t.topicId === leader.topicId));
        const part = topic?.partitions.find((p) => p.partition === this.partition);
        const code = response.errorCode !== 0 ? response.errorCode : (part?.errorCode ?? 0);
        if (code !== 0) throw await this.#codeError(from, code);
        if (!part) throw new Error(`Fetch of ${partitionName(this.topic, this.partition)} returned no answer for it`);
        return {
          batches: part.records ? parseRecordBatches(part.records, this) : [],
          abortedTransactions: part.abortedTransactions,
          lastStableOffset: part.lastStableOffset,
          highWatermark: part.highWatermark,
          logStartOffset: part.logStartOffset,
        };
      } catch (error) {
        if (!this.#retries(error)) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }

  /**
   * Bytes to ask of the next Fetch: the read's size, or, under `stopAfter`, not much more
   * than the bytes left (1/8 and 1 KiB more for the batches' framing, so that the Fetch
   * that reaches the limit is not followed by a tiny one). Kafka returns at least one
   * whole batch however few bytes are asked for.
   */
  #fetchBytes(): number {
    let left = this.#bytesLeft;
    // Records left, as bytes at the mean record size read so far.
    if (this.#recordsLeft !== Infinity && this.#recordsRead > 0) left = Math.min(left, (this.#recordsLeft * this.#bytesRead) / this.#recordsRead);
    if (left === Infinity) return this.#options.maxBytes;
    return Math.min(this.#options.maxBytes, Math.ceil(left + left / 8) + 1024);
  }

  /** The error a Kafka error code for this fetch is, in our words (OFFSET_OUT_OF_RANGE says which side). */
  async #codeError(from: bigint, code: number, cause?: unknown): Promise<Error> {
    if (code === OFFSET_OUT_OF_RANGE) return this.#outOfRange(from, cause);
    return new KafkaRequestError(`Fetch from offset ${from}`, this.topic, this.partition, code, cause === undefined ? undefined : { cause });
  }

  /**
   * The one place a failed Fetch is judged: whether to try again, and whether the
   * partition's leader must be looked up again first. An error code Kafka names is
   * retried as Kafka's table says (errors.ts), after a metadata refresh when it says the
   * leader moved; any other error only when marked retriable or when the client library
   * lost its connection, always after a refresh. Out of range and a recreated topic are
   * answers, never retried.
   */
  #retries(error: unknown): boolean {
    if (error instanceof OffsetOutOfRangeError || error instanceof TopicRecreatedError) return false;
    const refresh = error instanceof KafkaRequestError
      ? staleMetadataCodes.has(error.code)
      : (error as { retriable?: boolean }).retriable === true || isRetriableLibraryError(error);
    if (refresh) this.#leader = undefined;
    return refresh || (error instanceof KafkaRequestError && error.retriable);
  }

  /** OFFSET_OUT_OF_RANGE: below the earliest offset (retention) or past the end. Ask Kafka which. */
  async #outOfRange(from: bigint, cause: unknown): Promise<Error> {
    const [earliest, end] = await Promise.all([
      earliestOffset(this.#kafka, this.topic, this.partition),
      highWatermark(this.#kafka, this.topic, this.partition),
    ]);
    if (from < earliest) return new OffsetOutOfRangeError(this.topic, this.partition, from, earliest, end, 'below-earliest');
    if (from > end) return new OffsetOutOfRangeError(this.topic, this.partition, from, earliest, end, 'beyond-end');
    // The bounds moved between the fetch and the look-up; report what the fetch saw.
    return Object.assign(new KafkaRequestError(`Fetch from offset ${from}`, this.topic, this.partition, OFFSET_OUT_OF_RANGE, { cause }), { earliest, end });
  }
}

/**
 * Reads the committed records of `topic`-`partition` in [fromOffset, untilOffset).
 * Each batch is one Fetch's worth, in offset order, with `nextOffset` (the next fetch
 * position after it). Records at or after `untilOffset` are never returned; the read
 * ends at untilOffset or at the LSO, whichever is first (`reader.end` says which), and
 * `reader.position` is min(untilOffset, the last batch's last offset + 1).
 *
 * Throws OffsetOutOfRangeError when `fromOffset` is below the earliest offset (retention)
 * or beyond the high watermark.
 */
export function readCommitted(kafka: KafkaConnection, topic: string, partition: number, fromOffset: bigint, untilOffset: bigint, options: ReadOptions = {}): CommittedReader {
  return new CommittedReader(kafka, topic, partition, fromOffset, untilOffset, options);
}

export interface CommittedRange {
  records: CommittedSlice['records'];
  /** The next fetch position after the read: the end of the range it covers. */
  nextOffset: bigint;
  end: ReadEnd;
  bytes: number;
  abortedRecords: number;
  controlBatches: number;
}

/** The whole of `readCommitted` in memory (for tests, rebuilds of one file, and small ranges). */
export async function readCommittedRange(kafka: KafkaConnection, topic: string, partition: number, fromOffset: bigint, untilOffset: bigint, options: ReadOptions = {}): Promise<CommittedRange> {
  const reader = readCommitted(kafka, topic, partition, fromOffset, untilOffset, options);
  const records: CommittedSlice['records'] = [];
  let bytes = 0;
  let abortedRecords = 0;
  let controlBatches = 0;
  for await (const batch of reader) {
    for (const r of batch.records) records.push(r);
    bytes += batch.bytes;
    abortedRecords += batch.abortedRecords;
    controlBatches += batch.controlBatches;
  }
  return { records, nextOffset: reader.position, end: reader.end ?? 'until', bytes, abortedRecords, controlBatches };
}
