/**
 * What both faces of the read API share: the request and response shapes, the error a
 * request gets wrong, and a file's bytes for GET or HEAD with one Range (src/reader/http.ts
 * and src/reader/s3.ts answer with it, so both count, cache and verify alike).
 */
import { createHash } from 'node:crypto';
import type { CatalogFile } from '../catalog/file-reads.js';
import type { TableRecord } from '../table/record.js';
import { FileExpiredError } from '../files/rebuild.js';
import { parseRange } from './range.js';
import { BudgetWaitError } from '../common/limit.js';
import type { FileServing, ReadMeter } from './read-api.js';

export interface ReaderRequest {
  method: string;
  /** The path, a query string may follow. */
  path: string;
  /** Header names in any case. */
  headers: Readonly<Record<string, string | undefined>>;
  /** Aborts when the client has gone: work queued for it is dropped. */
  signal?: AbortSignal;
  /**
   * The URL (scheme, host, port) the connection reached, as the server knows it and the
   * client cannot forge: the listening socket's own address (serve), the function URL's
   * domain (Lambda). Never taken from a header.
   */
  reachedAt?: string;
}

/**
 * A response body: bytes, or (a large range of a file) its pieces in order, produced as
 * they are sent. A piece is yielded only after it was checked; a stream that fails
 * midway must be cut off (the connection closed short of Content-Length), never padded.
 */
export type ResponseBody = Uint8Array | AsyncIterable<Uint8Array>;

export interface ReaderResponse {
  status: number;
  headers: Record<string, string>;
  body: ResponseBody;
}

/**
 * Ranges up to this many bytes are produced whole before the answer starts, so any
 * mismatch is still a 500 with its reason; larger ones stream row group by row group.
 */
export const bufferedRangeBytes = 16 * 1024 * 1024;

/** A body's bytes, produced to the end (a Lambda function URL in BUFFERED mode, tests). */
export async function bodyBytes(body: ResponseBody): Promise<Uint8Array> {
  if (body instanceof Uint8Array) return body;
  const pieces: Uint8Array[] = [];
  for await (const piece of body) pieces.push(piece);
  return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);
}

/** The pieces, produced to the end; a client that left stops the production (its bytes would go nowhere). */
async function producedPieces(body: AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<Uint8Array[]> {
  const pieces: Uint8Array[] = [];
  for await (const piece of body) {
    if (signal?.aborted) throw new ClientGoneError();
    pieces.push(piece);
  }
  return pieces;
}

/** The request's client went away before its answer was ready; nothing is sent. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
  constructor() {
    super('the client went away before its answer was ready');
  }
}

/**
 * The response's share of the byte budget, waited for at most `budget.waitMs`: then a
 * 503 with Retry-After (S3's SlowDown), since the shares may be held by clients that
 * stopped reading until the write deadline cuts them off.
 */
async function responseShare({ budget, meter }: FileServing, request: ReaderRequest, bytes: number): Promise<() => void> {
  try {
    return await budget.bytes.acquire(bytes, { waitMs: budget.waitMs, ...(request.signal ? { signal: request.signal } : {}) });
  } catch (error) {
    if (error instanceof BudgetWaitError && error.reason === 'aborted') throw new ClientGoneError();
    if (error instanceof BudgetWaitError) {
      meter.count('busy');
      throw new HttpError(503, `the server is busy: no room for this response came free within ${Math.round(error.waitedMs / 1000)} s (what responses in flight may hold is taken); try again after the Retry-After seconds`, { 'retry-after': String(retryAfterSeconds) });
    }
    throw error;
  }
}

/** What a 503 asks the client to wait: long enough for a stalled response to be cut off or finish. */
const retryAfterSeconds = 1;

export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
  }
}

export const empty = new Uint8Array(0);

/** A precondition (If-Match, If-Unmodified-Since) that does not hold: 412. */
export class PreconditionFailedError extends HttpError {
  constructor(readonly condition: 'If-Match' | 'If-Unmodified-Since') {
    super(412, `the precondition ${condition} does not hold for this file`);
  }
}

/** Entity tags of an If-Match / If-None-Match list; `weak`: W/"x" counts as "x" (If-None-Match compares weakly). */
function tagsMatch(list: string, etag: string, weak: boolean): boolean {
  for (const raw of list.split(',')) {
    const tag = raw.trim();
    if (tag === '*') return true;
    if (tag === etag || (weak && tag.startsWith('W/') && tag.slice(2) === etag)) return true;
  }
  return false;
}

/** An HTTP date in seconds; undefined for one that cannot be parsed (RFC 9110 ignores it then). */
function httpDateSeconds(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/**
 * The preconditions of a GET or HEAD in RFC 9110 §13.2.2's order, as S3 evaluates them
 * too: If-Match (else If-Unmodified-Since) false → 412; then If-None-Match (else
 * If-Modified-Since) false → 304. Null: serve the file. Dates have whole seconds, as
 * Last-Modified does.
 */
function failedPrecondition(request: ReaderRequest, etag: string, modified: Date): 304 | 'If-Match' | 'If-Unmodified-Since' | null {
  const modifiedSeconds = Math.floor(modified.getTime() / 1000);
  const ifMatch = header(request, 'if-match');
  if (ifMatch !== undefined) {
    if (!tagsMatch(ifMatch, etag, false)) return 'If-Match';
  } else {
    const unmodifiedSince = httpDateSeconds(header(request, 'if-unmodified-since'));
    if (unmodifiedSince !== undefined && modifiedSeconds > unmodifiedSince) return 'If-Unmodified-Since';
  }
  const ifNoneMatch = header(request, 'if-none-match');
  if (ifNoneMatch !== undefined) return tagsMatch(ifNoneMatch, etag, true) ? 304 : null;
  const modifiedSince = httpDateSeconds(header(request, 'if-modified-since'));
  if (modifiedSince !== undefined && modifiedSeconds <= modifiedSince) return 304;
  return null;
}

/** A request header by its name in lowercase, whatever case it was sent in. */
export function header(request: ReaderRequest, name: string): string | undefined {
  for (const [key, value] of Object.entries(request.headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

/**
 * Bytes held in memory that never change under their name (Iceberg's metadata files,
 * manifest lists and manifests: src/iceberg/), for GET or HEAD with the same
 * preconditions and one Range as a data file's: the ETag is their sha256. They are answered
 * to a token or key holder only, so no shared cache (a proxy, a CDN) may keep them: private.
 */
export function bytesResponse(request: ReaderRequest, bytes: Uint8Array, contentType: string, modified: Date): ReaderResponse {
  const etag = `"${createHash('sha256').update(bytes).digest('hex')}"`;
  const common = { 'accept-ranges': 'bytes', etag, 'last-modified': modified.toUTCString(), 'content-type': contentType, 'cache-control': 'private, max-age=31536000, immutable' };
  const failed = failedPrecondition(request, etag, modified);
  if (failed === 304) return { status: 304, headers: { etag, 'last-modified': common['last-modified'] }, body: empty };
  if (failed) throw new PreconditionFailedError(failed);
  let start = 0;
  let end = bytes.byteLength;
  let partial = false;
  const rangeHeader = header(request, 'range');
  if (rangeHeader !== undefined) {
    const range = parseRange(rangeHeader, bytes.byteLength);
    if (range.kind === 'unsatisfiable') throw new HttpError(416, range.reason, { 'content-range': `bytes */${bytes.byteLength}` });
    if (range.kind === 'range') {
      ({ start, end } = range);
      partial = true;
    }
  }
  const headers: Record<string, string> = { ...common, 'content-length': String(end - start) };
  if (partial) headers['content-range'] = `bytes ${start}-${end - 1}/${bytes.byteLength}`;
  return { status: partial ? 206 : 200, headers, body: request.method === 'HEAD' ? empty : bytes.subarray(start, end) };
}

/**
 * A file's bytes for GET or HEAD, with one Range honoured: the footer from the catalog,
 * anything else from a verified rebuild. Shared by the HTTP and the S3 faces, so both
 * count, cache and verify alike. Throws HttpError for what the request got wrong.
 */
export async function fileResponse(serving: FileServing, request: ReaderRequest, table: TableRecord, file: CatalogFile, maxBody: number, maxBodyReason?: string): Promise<ReaderResponse> {
  const { meter } = serving;
  if (file.expiredAt) {
    meter.count('expired');
    throw new HttpError(410, new FileExpiredError(file.dataFileId, file.expiredAt).message);
  }
  const size = Number(file.fileSizeBytes);
  const etag = `"${file.sha256.toString('hex')}"`;
  const common = { 'accept-ranges': 'bytes', etag, 'last-modified': file.createdAt.toUTCString(), 'content-type': 'application/vnd.apache.parquet' };
  // A file's bytes never change (the ETag is their sha256), so an engine revalidating what it
  // cached gets a 304 without a rebuild; a failed If-Match is a 412, before any Range.
  const failed = failedPrecondition(request, etag, file.createdAt);
  if (failed === 304) return { status: 304, headers: { etag, 'last-modified': common['last-modified'] }, body: empty };
  if (failed) throw new PreconditionFailedError(failed);
  const rangeHeader = header(request, 'range');
  let start = 0;
  let end = size;
  let partial = false;
  if (rangeHeader !== undefined) {
    const range = parseRange(rangeHeader, size);
    if (range.kind === 'unsatisfiable') throw new HttpError(416, range.reason, { 'content-range': `bytes */${size}` });
    if (range.kind === 'range') {
      ({ start, end } = range);
      partial = true;
    }
  }
  const headers: Record<string, string> = { ...common, 'content-length': String(end - start) };
  if (partial) headers['content-range'] = `bytes ${start}-${end - 1}/${size}`;
  const status = partial ? 206 : 200;
  if (request.method === 'HEAD') return { status, headers, body: empty };
  if (end - start > maxBody) {
    throw new HttpError(413, `${partial ? 'the range asks for' : 'the file has'} ${end - start} bytes, more than the ${maxBody} one response of this endpoint may carry${maxBodyReason ? ` (${maxBodyReason})` : ''}; read it with Range requests of at most ${maxBody} bytes`);
  }
  const footerStart = size - file.footer.byteLength;
  if (start >= footerStart) {
    // No Kafka read either way. A file served by granules has its footer checked with its
    // page index against the sha256 taken when it was built (range() does, before any byte);
    // one without granules has its footer as the indexer wrote it (no reader role may
    // write that column, and a whole rebuild is compared with it).
    meter.count('footerHits');
    const body = file.hasGranules ? await bodyBytes(serving.range(table, file, start, end)) : file.footer.subarray(start - footerStart, end - footerStart);
    meter.served(body.byteLength);
    return { status, headers, body };
  }
  // What responses in flight hold is bounded too (the cache bounds only what it keeps):
  // a response takes its bytes (a streamed one: what it may hold at once) from the
  // budget before anything is rebuilt, and gives them back once its body has
  // been written or abandoned; the others wait their turn, for at most the budget's
  // waitMs (then a 503 with Retry-After).
  let release: () => void;
  try {
    release = await responseShare(serving, request, Math.min(end - start, bufferedRangeBytes));
  } catch (error) {
    if (error instanceof ClientGoneError) meter.count('abandoned');
    throw error;
  }
  try {
    if (end - start <= bufferedRangeBytes) {
      // Produced (and checked) to the end before the answer starts, but kept as its pieces:
      // they are the cache's own chunks, so responses of one row group share its bytes
      // instead of each holding a copy (a concatenated 8 MiB file per response in flight
      // was most of serve's resident memory).
      const pieces = await producedPieces(serving.range(table, file, start, end), request.signal);
      meter.served(pieces.reduce((sum, piece) => sum + piece.byteLength, 0));
      return { status, headers, body: releasing(pieces, release) };
    }
    return { status, headers, body: releasing(await started(counted(meter, serving.range(table, file, start, end)), Math.max(0, 4 - start)), release) };
  } catch (error) {
    release();
    if (error instanceof ClientGoneError) meter.count('abandoned');
    throw error;
  }
}

/**
 * The body's pieces; the response's bytes go back to the budget when they have all been
 * taken, or the reader stopped, also before it began (a generator's finally does not run
 * when it is ended before its first step, and a client may leave before the body starts).
 */
function releasing(pieces: Iterable<Uint8Array> | AsyncIterable<Uint8Array>, release: () => void): AsyncIterableIterator<Uint8Array> {
  const inner = (async function* () {
    try {
      yield* pieces;
    } finally {
      release();
    }
  })();
  return {
    next: () => inner.next(),
    return: (value?: unknown) => {
      release();
      return inner.return(value as undefined);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/**
 * A stream whose first rebuilt bytes are already produced: a range that fails at once
 * (its first row group does not match, Kafka no longer holds it) is still an error status
 * with its reason rather than a response cut off after its headers. A file begins with
 * the 4-byte magic "PAR1", which needs no rebuild, so pieces are held until more than
 * `magicBytes` (the magic's part of the range) are in hand. Ending the stream early ends
 * the production too (yield* hands return() on).
 */
async function started(pieces: AsyncIterable<Uint8Array>, magicBytes: number): Promise<AsyncIterable<Uint8Array>> {
  const iterator = pieces[Symbol.asyncIterator]();
  const held: Uint8Array[] = [];
  let bytes = 0;
  let done = false;
  while (!done && bytes <= magicBytes) {
    const next = await iterator.next();
    if (next.done) done = true;
    else {
      held.push(next.value);
      bytes += next.value.byteLength;
    }
  }
  return (async function* () {
    yield* held;
    if (!done) yield* { [Symbol.asyncIterator]: () => iterator };
  })();
}

async function* counted(meter: ReadMeter, pieces: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  for await (const piece of pieces) {
    meter.served(piece.byteLength);
    yield piece;
  }
}

