/**
 * The HTTP read API as one pure function, `(request) → response`, so `offsetlake serve`
 * (node:http) and the Lambda function URL entry answer identically:
 *
 *   GET  /tables                         the tables
 *   GET  /tables/:t/files                the manifest: offsets, bucket, statistics, sizes
 *   HEAD /tables/:t/files/:id.parquet    Content-Length, Accept-Ranges, ETag (sha256)
 *   GET  /tables/:t/files/:id.parquet    the bytes; one Range (first-last, first-, -suffix);
 *                                        another unit, an unparsable header or several ranges: the whole file
 *   GET  /metrics                        the read path's counters: Prometheus's text format, or JSON
 *                                        when the Accept header ranks application/json first
 *   GET  /tables/:t/metadata/:name       a mounted catalog's files (Iceberg: metadata, manifest lists, manifests)
 *   /iceberg/v1/…                        a mounted catalog (the read-only Iceberg REST catalog, src/iceberg/rest.ts)
 *   /console, /console/api/…             the console, when mounted (src/console/face.ts): its page without the token, its JSON with it
 *
 * A range inside the file's footer (its last footer_size bytes: FileMetaData, its length
 * and PAR1) is answered from the catalog without touching Kafka: that is what engines
 * read first. Any other byte comes from a rebuild that was checked against size, footer
 * and sha256; a mismatch is a 500 with the differences, never bytes. Errors are JSON
 * `{error}` with a reason.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { CatalogFile } from '../catalog/file-reads.js';
import { checkTableName, TableError, TableNameError, type TableRecord } from '../table/record.js';
import { FileExpiredError, RebuildMismatchError } from '../files/rebuild.js';
import { GranuleMismatchError } from '../files/granules.js';
import { StoredPieceMismatchError } from '../files/stored-pieces.js';
import type { CatalogReads, ReaderParts, ReadStatus } from './read-api.js';
import { isS3Request, s3Handler, type ListedObject, type S3FaceOptions } from './s3.js';
import { empty, fileResponse, header, HttpError, type ReaderRequest, type ReaderResponse } from './file-response.js';
import { kafkaPerServed } from '../catalog/reader-counters.js';
import { expositionContentType, prefersJson, renderExposition } from '../common/exposition.js';
import { lagFamilies, type PartitionLag } from '../common/lag-metrics.js';
import { readerFamilies } from './metrics.js';
import { log } from '../common/log.js';

export type { ReaderRequest, ReaderResponse, ResponseBody } from './file-response.js';
export { bodyBytes } from './file-response.js';

export interface ReaderHandlerOptions {
  /**
   * The bearer token every request must carry; `checkedBefore`: every request that reaches
   * the handler had its token checked by the caller, against those accepted now (the Lambda
   * reader checks with `authorizationRefusal` before it starts the reader, so a stranger
   * costs no I/O; each request is checked once); `null` turns authentication off (local
   * use only).
   */
  token: string | { checkedBefore: true } | null;
  /** Largest body one response may carry (a Lambda function URL buffers at most 6 MB, streams at most 200 MB). */
  maxBodyBytes?: number;
  /** Why there is such a limit, said in the 413. */
  maxBodyReason?: string;
  /** The S3-compatible face (src/reader/s3.ts): requests under /<bucket>/ or signed for S3 go there. */
  s3?: S3FaceOptions;
  /** A table catalog served under a path of its own, such as the Iceberg REST catalog under /iceberg (src/iceberg/rest.ts). */
  catalog?: MountedCatalog;
  /** Each partition's lag, for /metrics (`serve` gives its console's next status sample; without it no lag is published). */
  lag?: () => Promise<readonly PartitionLag[]>;
  /** The console in the browser (src/console/face.ts), when mounted. */
  console?: ConsoleRoutes;
}

/**
 * Routes beside the API under a path of their own: each request they claim has its bearer
 * token checked unless it is `open` (a page, which a browser opens without sending one),
 * and their errors are this API's JSON errors.
 */
export interface ConsoleRoutes {
  claims(request: ReaderRequest): boolean;
  open(request: ReaderRequest): boolean;
  answer(request: ReaderRequest): Promise<ReaderResponse>;
}

/**
 * A catalog for engines beside the files (src/iceberg/rest.ts implements it): it answers
 * the requests it claims, after the bearer token is checked, and renders their errors,
 * the token's refusal too, in its clients' own form; and it serves the files its tables'
 * metadata names, below tables/<table>/metadata/ on both faces.
 */
export interface MountedCatalog {
  claims(request: ReaderRequest): boolean;
  answer(request: ReaderRequest): Promise<ReaderResponse>;
  refusal(request: ReaderRequest, error: HttpError): ReaderResponse;
  metadataFile(request: ReaderRequest, table: TableRecord, name: string): Promise<ReaderResponse>;
  metadataListing(request: ReaderRequest, table: TableRecord): Promise<ListedObject[]>;
}

export type ReaderHandler = (request: ReaderRequest) => Promise<ReaderResponse>;

const fileName = /^([0-9]{1,19})\.parquet$/;

/**
 * The table a request names, for the faces in JSON (this API, the console): a name that
 * cannot be a table's is a 400 (checked before any SQL), a table that does not exist a 404.
 */
export async function servedTable(reader: Pick<CatalogReads, 'table'>, name: string): Promise<TableRecord> {
  try {
    checkTableName(name);
    return await reader.table(name);
  } catch (error) {
    if (error instanceof TableNameError) throw new HttpError(400, error.message);
    if (error instanceof TableError) throw new HttpError(404, error.message);
    throw error;
  }
}

export function json(status: number, value: unknown, headers: Record<string, string> = {}): ReaderResponse {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: Buffer.from(`${text}\n`) };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Throws the 401 for a missing or malformed bearer token, or (when `token` is given) one that is none of them. */
function checkToken(request: ReaderRequest, token: string | readonly string[] | undefined): void {
  const given = header(request, 'authorization');
  const challenge = { 'www-authenticate': 'Bearer realm="offsetlake"' };
  if (!given) throw new HttpError(401, 'this server needs a bearer token: send "Authorization: Bearer <token>"', challenge);
  const match = /^Bearer\s+(\S+)\s*$/i.exec(given);
  if (!match) throw new HttpError(401, 'the Authorization header must be "Bearer <token>"', challenge);
  // Compare digests so the comparison takes the same time whatever the token's length.
  const presented = digest(match[1]!);
  if (token !== undefined && !(typeof token === 'string' ? [token] : token).map((t) => timingSafeEqual(presented, digest(t))).includes(true)) throw new HttpError(401, 'the bearer token is not valid for this server', challenge);
}

/** An error as the body `{"error": message}`; a HEAD gets the headers only. */
function errorResponse(request: ReaderRequest, status: number, message: string, headers: Record<string, string> = {}): ReaderResponse {
  const response = json(status, { error: message }, headers);
  return request.method === 'HEAD' ? { ...response, body: empty } : response;
}

/** The process's memory (bytes): where a reader's resident set goes (JS heap, Buffers) without attaching a profiler. */
function processMemory(): { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number } {
  const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapTotal, heapUsed, external, arrayBuffers };
}

/**
 * The 401 for a request without a well-formed bearer token or, when `token` is given, with
 * another one; null when the request may pass. Pure: a deployment refuses strangers with it
 * before any I/O, and looks its own token up only for requests that carry one.
 */
export function authorizationRefusal(request: ReaderRequest, token?: string | readonly string[]): ReaderResponse | null {
  try {
    checkToken(request, token);
    return null;
  } catch (error) {
    if (error instanceof HttpError) return errorResponse(request, error.status, error.message, error.headers);
    throw error;
  }
}

/**
 * One file of the manifest. Counts and sizes of one file fit a JSON number (a double holds
 * every integer below 2^53) and are numbers; ids and offsets are 64-bit and stay decimal
 * strings, as do statistics bounds (their text is the catalog's exact text). Times are
 * RFC 3339 in UTC.
 */
export function fileEntry(table: TableRecord, file: CatalogFile) {
  return {
    id: file.dataFileId.toString(),
    path: `/tables/${table.name}/files/${file.dataFileId}.parquet`,
    partition: file.partition,
    startOffset: file.startOffset.toString(),
    endOffset: file.endOffset.toString(),
    bucket: file.bucket.toISOString(),
    records: Number(file.recordCount),
    sizeBytes: Number(file.fileSizeBytes),
    footerBytes: file.footer.byteLength,
    sha256: file.sha256.toString('hex'),
    sealReason: file.sealReason,
    schemaVersion: file.schemaVersion,
    encoderVersion: file.encoderVersion,
    source: file.source,
    createdAt: file.createdAt.toISOString(),
    columns: file.columns.map((c) => ({
      name: c.columnName,
      valueCount: Number(c.valueCount),
      nullCount: Number(c.nullCount),
      nanCount: Number(c.nanCount),
      min: c.min,
      max: c.max,
    })),
  };
}

export function readerHandler({ records, serving, status }: ReaderParts, options: ReaderHandlerOptions): ReaderHandler {
  const maxBody = options.maxBodyBytes ?? Infinity;

  const tableNamed = (name: string) => servedTable(records, name);

  async function fileNamed(request: ReaderRequest, table: TableRecord, idText: string): Promise<ReaderResponse> {
    const match = fileName.exec(idText);
    if (!match) throw new HttpError(400, `"${idText}" is not a file name: expected <id>.parquet with a numeric id, as the manifest lists`);
    const id = BigInt(match[1]!);
    if (id > 9223372036854775807n) throw new HttpError(400, `file id ${id} is out of range`);
    const file = await records.file(table, id);
    if (!file) throw new HttpError(404, `table ${table.name} has no file ${id}`);
    return fileResponse(serving, request, table, file, maxBody, options.maxBodyReason);
  }

  const mounted = options.catalog;

  async function route(request: ReaderRequest): Promise<ReaderResponse> {
    const path = request.path.split('?')[0]!;
    const parts = path.split('/').slice(1);
    const allow = (methods: string) => {
      if (!methods.split(', ').includes(request.method)) throw new HttpError(405, `${request.method} is not allowed on ${path}; use ${methods}`, { allow: methods });
    };
    if (parts.length === 1 && parts[0] === 'tables') {
      allow('GET, HEAD');
      const tables = await records.tables();
      return json(200, { tables: tables.map((t) => ({ name: t.name, topic: t.topic, format: t.format, files: `/tables/${t.name}/files` })) });
    }
    if (parts.length === 1 && parts[0] === 'metrics') {
      allow('GET, HEAD');
      const metrics = status.metrics;
      if (!prefersJson(header(request, 'accept'))) return exposition(status, await options.lag?.());
      return json(200, { ...metrics, kafkaBytesPerServedByte: kafkaPerServed(metrics.kafkaBytes, metrics.bytesServed), cache: status.cache.size, heldRecords: status.heldRecords.size, memory: processMemory(), lostOffsets: await status.lostOffsets(), indexes: await status.indexes() });
    }
    if (mounted && parts[0] === 'tables' && parts[2] === 'metadata' && parts.length === 4) {
      allow('GET, HEAD');
      return mounted.metadataFile(request, await tableNamed(decodeSegment(parts[1]!)), decodeSegment(parts[3]!));
    }
    if (parts[0] === 'tables' && parts[2] === 'files' && (parts.length === 3 || parts.length === 4)) {
      const table = await tableNamed(decodeSegment(parts[1]!));
      if (parts.length === 3) {
        allow('GET, HEAD');
        const files = await records.files(table);
        return json(200, { table: table.name, topic: table.topic, format: table.format, granularity: table.settings.granularity, files: files.map((f) => fileEntry(table, f)) });
      }
      allow('GET, HEAD');
      return fileNamed(request, table, decodeSegment(parts[3]!));
    }
    throw new HttpError(404, `no such path: ${path} (paths: /tables, /tables/:table/files, /tables/:table/files/:id.parquet, /metrics${mounted ? ', /tables/:table/metadata/:name, /iceberg/v1/config' : ''}${options.console ? ', /console' : ''})`);
  }

  const s3 = options.s3 ? s3Handler({ records, serving }, options.s3, maxBody, mounted && { get: (request, table, name) => mounted.metadataFile(request, table, name), list: (request, table) => mounted.metadataListing(request, table) }) : undefined;

  return async (request) => {
    serving.meter.count('requests');
    if (s3 && isS3Request(request, options.s3!.bucket)) return s3(request);
    if (mounted?.claims(request)) {
      try {
        if (typeof options.token === 'string') checkToken(request, options.token);
      } catch (error) {
        if (error instanceof HttpError) return mounted.refusal(request, error);
        throw error;
      }
      return mounted.answer(request);
    }
    try {
      const face = options.console?.claims(request) ? options.console : undefined;
      if (typeof options.token === 'string' && !face?.open(request)) checkToken(request, options.token);
      const response = face ? await face.answer(request) : await route(request);
      // HEAD: the headers GET would send (a file's Content-Length is set by fileResponse), no body.
      if (request.method === 'HEAD' && response.body instanceof Uint8Array && response.body.byteLength > 0) return { ...response, headers: { ...response.headers, 'content-length': String(response.body.byteLength) }, body: empty };
      return response;
    } catch (error) {
      const answer = (status: number, message: string, headers: Record<string, string> = {}) => errorResponse(request, status, message, headers);
      if (error instanceof HttpError) return answer(error.status, error.message, error.headers);
      if (error instanceof RebuildMismatchError) return answer(500, `${error.message}; the bytes were not served`);
      if (error instanceof GranuleMismatchError || error instanceof StoredPieceMismatchError) return answer(500, error.message);
      if (error instanceof FileExpiredError) return answer(410, error.message);
      log('error', `${request.method} ${request.path.split('?')[0]}: internal error: ${(error as Error).message}`);
      return answer(500, `internal error: ${(error as Error).message}`);
    }
  };
}

/** GET /metrics in Prometheus's text exposition format (version 0.0.4). */
function exposition(status: ReadStatus, lag: readonly PartitionLag[] | undefined): ReaderResponse {
  const { file, granule } = status.rebuildDurations;
  const families = [...readerFamilies(status.metrics, { file: file.snapshot({ kind: 'file' }), granule: granule.snapshot({ kind: 'granule' }) }, status.cache.size, status.heldRecords.size), ...(lag ? lagFamilies(lag) : [])];
  return { status: 200, headers: { 'content-type': expositionContentType }, body: Buffer.from(renderExposition(families)) };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `path segment "${segment}" is not valid percent-encoding`);
  }
}
