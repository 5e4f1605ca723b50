/**
 * Kafka errors: the protocol's error table (reused from @platformatic/kafka) and the typed
 * errors offsetlake raises. Every message names the topic-partition, and where two values
 * disagree (an offset and a bound) the error carries both.
 */
import { GenericError, MultipleErrors, protocolErrors, protocolErrorsCodesById } from '@platformatic/kafka';

export interface KafkaErrorInfo {
  /** The protocol's numeric error code (1 = OFFSET_OUT_OF_RANGE, 3 = UNKNOWN_TOPIC_OR_PARTITION, …). */
  code: number;
  /** The protocol's name for it. */
  name: string;
  /** Whether the same request may succeed if sent again (possibly after a metadata refresh). */
  retriable: boolean;
  message: string;
}

/** Looks a Kafka error code up in the protocol's error table. */
export function kafkaErrorInfo(code: number): KafkaErrorInfo {
  const name = protocolErrorsCodesById[code];
  const definition = name === undefined ? undefined : protocolErrors[name];
  if (name === undefined || definition === undefined) {
    return { code, name: `UNKNOWN_ERROR_CODE_${code}`, retriable: false, message: `Kafka error code ${code}` };
  }
  return { code, name, retriable: definition.canRetry, message: definition.message };
}

/** Error codes after which the partition's leader must be looked up again before retrying. */
export const staleMetadataCodes: ReadonlySet<number> = new Set([
  3, // UNKNOWN_TOPIC_OR_PARTITION (a topic just created, or a partition that moved)
  5, // LEADER_NOT_AVAILABLE
  6, // NOT_LEADER_OR_FOLLOWER
  74, // FENCED_LEADER_EPOCH
  75, // UNKNOWN_LEADER_EPOCH
  100, // UNKNOWN_TOPIC_ID (Fetch v13+ names topics by id; the topic was deleted or recreated)
  103, // INCONSISTENT_TOPIC_ID
]);

export const OFFSET_OUT_OF_RANGE = 1;
export const UNKNOWN_TOPIC_OR_PARTITION = 3;

export { BatchTooLargeError, CorruptRecordBatchError, KafkaError, partitionName } from './batch-errors.js';
import { KafkaError, partitionName } from './batch-errors.js';

/** The topic does not exist (or this client may not see it). */
export class UnknownTopicError extends KafkaError {
  override name = 'UnknownTopicError';
  constructor(readonly topic: string, options?: ErrorOptions) {
    super(`Kafka topic "${topic}" does not exist`, options);
  }
}

/** The topic exists but has no such partition. */
export class UnknownPartitionError extends KafkaError {
  override name = 'UnknownPartitionError';
  constructor(readonly topic: string, readonly partition: number, readonly partitionCount: number) {
    super(`Kafka topic "${topic}" has no partition ${partition}: it has ${partitionCount} partition${partitionCount === 1 ? '' : 's'} (0 to ${partitionCount - 1})`);
  }
}

/**
 * A read from an offset Kafka no longer (or not yet) holds. `bound` is `below-earliest`
 * when retention deleted the offset (`earliest` is the first offset still held), or
 * `beyond-end` when the offset is past the partition's end (`end` is its high watermark).
 */
export class OffsetOutOfRangeError extends KafkaError {
  override name = 'OffsetOutOfRangeError';
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly offset: bigint,
    readonly earliest: bigint,
    readonly end: bigint,
    readonly bound: 'below-earliest' | 'beyond-end',
  ) {
    super(
      bound === 'below-earliest'
        ? `fetch from offset ${offset} is below the earliest offset ${earliest} of ${partitionName(topic, partition)} (retention deleted offsets ${offset} to ${earliest - 1n})`
        : `fetch from offset ${offset} is beyond the end offset ${end} of ${partitionName(topic, partition)}`,
    );
  }
}

/** A request Kafka answered with an error code for one partition (after retries, when retriable). */
export class KafkaRequestError extends KafkaError {
  override name = 'KafkaRequestError';
  readonly code: number;
  readonly errorName: string;
  readonly retriable: boolean;
  constructor(
    readonly operation: string,
    readonly topic: string,
    readonly partition: number | undefined,
    code: number,
    options?: ErrorOptions,
  ) {
    const info = kafkaErrorInfo(code);
    const where = partition === undefined ? `topic "${topic}"` : partitionName(topic, partition);
    super(`${operation} of ${where} failed: ${info.name} (Kafka error ${code}: ${info.message})`, options);
    this.code = code;
    this.errorName = info.name;
    this.retriable = info.retriable;
  }
}

/** The broker sent records in a format this reader does not decode (message format v0/v1). */
export class UnsupportedRecordFormatError extends KafkaError {
  override name = 'UnsupportedRecordFormatError';
  constructor(readonly topic: string, readonly partition: number, readonly offset: bigint, readonly magic: number) {
    super(`the record batch at offset ${offset} of ${partitionName(topic, partition)} uses message format v${magic}; only v2 (Kafka 0.11+) is supported`);
  }
}

/** A broker's response that does not parse as its API and version say (cut short, a length past its end). */
export class MalformedResponseError extends KafkaError {
  override name = 'MalformedResponseError';
  constructor(readonly api: string, readonly version: number, readonly at: number, readonly size: number, what: string) {
    super(`the ${api} v${version} response is malformed at byte ${at} of ${size}: ${what}`);
  }
}

/**
 * The topic was deleted and created again: during a read, or (`since` a table's) after the
 * table was made on it. Its offsets started over: they are another topic's.
 */
export class TopicRecreatedError extends KafkaError {
  override name = 'TopicRecreatedError';
  constructor(readonly topic: string, readonly topicId: string, readonly newTopicId: string, readonly since?: { table: string }) {
    super(since
      ? `Kafka topic "${topic}" was deleted and created again since table ${since.table} was made on it (topic id ${topicId}, now ${newTopicId}): its offsets are another topic's`
      : `Kafka topic "${topic}" was deleted and created again during a read (topic id ${topicId}, now ${newTopicId}); its offsets started over`);
  }
}

/** A read that stopped making progress below the last stable offset. */
export class ReadStalledError extends KafkaError {
  override name = 'ReadStalledError';
  constructor(readonly topic: string, readonly partition: number, readonly offset: bigint, readonly lastStableOffset: bigint, attempts: number) {
    super(`fetching ${partitionName(topic, partition)} from offset ${offset} returned no records ${attempts} times although its last stable offset is ${lastStableOffset}`);
  }
}

/** The Kafka protocol error codes inside an error thrown by @platformatic/kafka (a ResponseError holds one per failed partition). */
export function protocolErrorCodes(error: unknown): number[] {
  const codes: number[] = [];
  const visit = (e: unknown, depth: number): void => {
    if (depth > 5 || e === null || typeof e !== 'object') return;
    const apiCode = (e as { apiCode?: unknown }).apiCode;
    if (typeof apiCode === 'number') codes.push(apiCode);
    if (e instanceof AggregateError) for (const inner of e.errors) visit(inner, depth + 1);
    const cause = (e as { cause?: unknown }).cause;
    if (cause) visit(cause, depth + 1);
  };
  visit(error, 0);
  return codes;
}

/** Whether @platformatic/kafka says the error may go away when the request is retried (network errors, leader moves). */
export function isRetriableLibraryError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (GenericError.isGenericError(error) || MultipleErrors.isMultipleErrors(error)) {
    // Retriable only when nothing in the chain says otherwise, as the library itself decides.
    const lib = error as GenericError;
    return lib.findBy('canRetry', false) === null && (lib.findBy('canRetry', true) !== null || lib.code === 'PLT_KFK_NETWORK');
  }
  return false;
}

/** The library's message for an unknown topic, raised from its metadata request. */
export function isUnknownTopicLibraryError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (protocolErrorCodes(error).includes(UNKNOWN_TOPIC_OR_PARTITION)) return true;
  const messages: string[] = [];
  const visit = (e: unknown, depth: number): void => {
    if (depth > 5 || !(e instanceof Error)) return;
    messages.push(e.message);
    if (e instanceof AggregateError) for (const inner of e.errors) visit(inner, depth + 1);
    if (e.cause) visit(e.cause, depth + 1);
  };
  visit(error, 0);
  return messages.some((m) => /^Unknown topic /.test(m));
}
