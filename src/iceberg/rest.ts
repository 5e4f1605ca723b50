/**
 * A read-only Iceberg REST catalog (apache/iceberg, open-api/rest-catalog-open-api.yaml),
 * mounted on the read API (readerHandler's `catalog`: serve, the Lambda reader) under
 * /iceberg, so the catalog URI is http://HOST:PORT/iceberg:
 *
 *   GET       /iceberg/v1/config                                  defaults, overrides (prefix), endpoints
 *   GET       /iceberg/v1/{prefix}/namespaces                     one namespace, main (pageToken, pageSize)
 *   GET HEAD  /iceberg/v1/{prefix}/namespaces/main
 *   GET       /iceberg/v1/{prefix}/namespaces/main/tables         identifiers (pageToken, pageSize)
 *   GET HEAD  /iceberg/v1/{prefix}/namespaces/main/tables/{t}     LoadTable (snapshots=all|refs; ETag, If-None-Match → 304)
 *
 * and, on both faces, the files table metadata names, computed on request and never
 * stored (src/iceberg/files.ts): tables/{t}/metadata/{name} below the table's location.
 * Every write is refused (403 ForbiddenException) and none is advertised, so clients
 * refuse writes before sending them. A missing table or namespace is said as Iceberg's own
 * catalogs say it ("Table does not exist: ns.t", which clients and the REST Compatibility
 * Kit match on), then what there is. Errors are Iceberg's JSON, {"error": {message,
 * type, code}}, with the types clients map (NoSuchTableException,
 * NoSuchNamespaceException, ForbiddenException, NotAuthorizedException,
 * BadRequestException).
 *
 * Where files are: with the S3 face on, s3://<bucket>/tables/<t>/… and LoadTable's
 * config gives the S3 FileIO its endpoint (this server's public URL), path-style access
 * and the face's key pair; otherwise the HTTP face's own URLs (<public URL>/tables/<t>/…),
 * read with serve's bearer token. The public URL is configured (serve --public-url) or
 * else the address the connection reached (the listening socket's, a function URL's
 * domain): never a request header, so a forged Host or X-Forwarded-Proto cannot point a
 * client, with the key pair beside it, at a server of the forger's choosing.
 */
import { createHash } from 'node:crypto';
import { TableError, TableNameError, type TableRecord } from '../table/record.js';
import { bytesResponse, header, HttpError, type ReaderRequest, type ReaderResponse } from '../reader/file-response.js';
import type { CatalogReads } from '../reader/read-api.js';
import type { Catalog } from '../catalog/db.js';
import type { ByteBoundedCache } from '../reader/cache.js';
import type { MountedCatalog } from '../reader/http.js';
import type { ListedObject } from '../reader/s3.js';
import type { S3Credentials } from '../reader/sigv4.js';
import { IcebergFiles, type Root } from './files.js';
import { defaultMaxSnapshots, defaultSnapshotIntervalMs } from './snapshots.js';

export interface IcebergOptions {
  /**
   * The URL clients reach this server at (scheme, host and port, such as
   * https://lake.example.com): the S3 endpoint and the HTTP face's file locations. Without
   * it, the address each connection reached (ReaderRequest.reachedAt).
   */
  publicUrl?: string;
  /** The least time between two snapshots that only add files (ms; default 60 s). */
  snapshotIntervalMs?: number;
  /** Snapshots the history keeps at most (default 100). */
  maxSnapshots?: number;
}

/** The S3 face, when serve has one: files are then given as s3:// locations. */
export interface IcebergS3Face {
  bucket: string;
  region: string;
  credentials: S3Credentials | null;
}

/** The one namespace: tables are flat, as in the DuckLake attach (schema main). */
export const namespaceName = 'main';
/** The catalog's prefix (config's overrides): its paths are /iceberg/v1/<prefix>/…. */
export const catalogPrefix = 'offsetlake';

/** An error a client maps by its Iceberg type. */
export class IcebergError extends Error {
  constructor(readonly status: number, readonly type: string, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
  }
}

const errorTypes: Record<number, string> = { 400: 'BadRequestException', 401: 'NotAuthorizedException', 403: 'ForbiddenException', 404: 'NotFoundException', 406: 'UnsupportedOperationException', 416: 'BadRequestException', 503: 'ServiceUnavailableException' };

function json(status: number, value: unknown, headers: Record<string, string> = {}): ReaderResponse {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: Buffer.from(JSON.stringify(value)) };
}

/** Iceberg's error body for any error of a request under /iceberg (a HEAD gets the status and headers only). */
export function icebergErrorResponse(request: ReaderRequest, error: unknown): ReaderResponse {
  const known = error instanceof IcebergError ? error
    : error instanceof HttpError ? new IcebergError(error.status, errorTypes[error.status] ?? 'ServiceFailureException', error.message, error.headers)
      : new IcebergError(500, 'ServiceFailureException', `internal error: ${(error as Error).message}`);
  const response = json(known.status, { error: { message: known.message, type: known.type, code: known.status } }, known.headers);
  return request.method === 'HEAD' ? { ...response, body: new Uint8Array(0) } : response;
}

const endpoints = [
  'GET /v1/{prefix}/namespaces',
  'GET /v1/{prefix}/namespaces/{namespace}',
  'HEAD /v1/{prefix}/namespaces/{namespace}',
  'GET /v1/{prefix}/namespaces/{namespace}/tables',
  'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}',
];

const paths = `/iceberg/v1/config, /iceberg/v1/${catalogPrefix}/namespaces[/${namespaceName}[/tables[/<table>]]]`;

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new IcebergError(400, 'BadRequestException', `path segment "${segment}" is not valid percent-encoding`);
  }
}

function query(request: ReaderRequest): URLSearchParams {
  return new URLSearchParams(request.path.split('?')[1] ?? '');
}

/** One page of names after the page token; the next token when more follow. */
function page(names: readonly string[], request: ReaderRequest): { names: string[]; next: string | null } {
  const params = query(request);
  const sizeText = params.get('pageSize');
  let size = Infinity;
  if (sizeText !== null && sizeText !== '') {
    if (!/^\d{1,6}$/.test(sizeText) || Number(sizeText) < 1) throw new IcebergError(400, 'BadRequestException', `pageSize must be a whole number from 1 to 999999, got "${sizeText}"`);
    size = Number(sizeText);
  }
  const token = params.get('pageToken');
  let after: string | undefined;
  if (token !== null && token !== '') {
    const decoded = Buffer.from(token, 'base64url').toString('utf8');
    if (!decoded.startsWith('after:')) throw new IcebergError(400, 'BadRequestException', 'pageToken is not one this catalog gave: send the next-page-token of the page before, or none for the first page');
    after = decoded.slice('after:'.length);
  }
  const rest = after === undefined ? [...names] : names.filter((name) => name > after);
  const taken = rest.slice(0, size);
  return { names: taken, next: rest.length > taken.length ? Buffer.from(`after:${taken.at(-1)}`).toString('base64url') : null };
}

/**
 * pyiceberg has no FileIO that reads http locations: against a catalog without the S3 face
 * it loads a table and fails at the first file with "Unrecognized filesystem type in URI:
 * http". The catalog's defaults give it this as its FileIO class instead (only pyiceberg
 * reads `py-io-impl`; a client's own setting wins over defaults), which no module is
 * named, so pyiceberg's load_table stops with "Could not initialize FileIO: " and these words.
 */
const pyIcebergFileIo = 'py-io-impl';
export const noS3FaceForPyIceberg = 'this catalog names its files by http URLs (serve has no S3 face), and pyiceberg reads no http location: start serve with --s3-access-key-id and --s3-secret-access-key (its S3 face), and the catalog names s3 locations pyiceberg reads.';

/** The parts of the reader the Iceberg catalog takes: table records, the catalog (snapshots, manifests' files), and the byte budget its manifests are kept in. */
export interface IcebergReader {
  readonly records: Pick<CatalogReads, 'table' | 'tables'>;
  readonly catalog: Catalog;
  readonly cache: ByteBoundedCache<Uint8Array>;
}

export class IcebergCatalog implements MountedCatalog {
  readonly files: IcebergFiles;
  private readonly publicUrl: string | undefined;

  constructor(private readonly reader: IcebergReader, options: IcebergOptions = {}, private readonly s3?: IcebergS3Face) {
    this.publicUrl = options.publicUrl?.replace(/\/+$/, '');
    this.files = new IcebergFiles(reader.catalog, reader.cache, {
      intervalMs: options.snapshotIntervalMs ?? defaultSnapshotIntervalMs,
      maxSnapshots: options.maxSnapshots ?? defaultMaxSnapshots,
    });
  }

  /** Where this request's client finds the files: the S3 face's bucket, else this server's own address. */
  root(request: ReaderRequest): Root {
    if (this.s3) return { base: `s3://${this.s3.bucket}` };
    return { base: this.address(request) };
  }

  /** This server's URL for clients: the configured public URL, else the address the connection reached; never a header the client sent. */
  private address(request: ReaderRequest): string {
    const url = this.publicUrl ?? request.reachedAt;
    if (!url) throw new IcebergError(500, 'ServiceFailureException', 'this server has no public URL to name file locations by: start it with one (serve --public-url)');
    return url;
  }

  /** LoadTable's config: what the client's FileIO needs to read the files. */
  private fileIoConfig(request: ReaderRequest): Record<string, string> {
    if (!this.s3) return {};
    // With the S3 face unauthenticated (serve --no-auth) any signature passes: clients still want a key pair to sign with.
    const keys = this.s3.credentials ?? { accessKeyId: 'offsetlake', secretAccessKey: 'offsetlake' };
    return {
      's3.endpoint': this.address(request),
      's3.path-style-access': 'true',
      's3.access-key-id': keys.accessKeyId,
      's3.secret-access-key': keys.secretAccessKey,
      's3.region': this.s3.region,
      'client.region': this.s3.region,
    };
  }

  private async table(name: string): Promise<TableRecord> {
    try {
      return await this.reader.records.table(name);
    } catch (error) {
      if (error instanceof TableNameError) throw new IcebergError(400, 'BadRequestException', `${error.message}; no table of this catalog is so named`);
      if (error instanceof TableError) {
        throw new IcebergError(404, 'NoSuchTableException', `Table does not exist: ${namespaceName}.${name} (GET /iceberg/v1/${catalogPrefix}/namespaces/${namespaceName}/tables lists the tables)`);
      }
      throw error;
    }
  }

  private namespace(segment: string): void {
    const name = decode(segment);
    if (name !== namespaceName) {
      throw new IcebergError(404, 'NoSuchNamespaceException', `Namespace does not exist: ${name.split('\u001f').join('.')} (this catalog has one namespace, ${namespaceName}, holding every table)`);
    }
  }

  /** Requests whose path starts with /iceberg. */
  claims(request: ReaderRequest): boolean {
    return /^\/iceberg(\/|\?|$)/.test(request.path);
  }

  /** Iceberg clients read a refused token as Iceberg's error JSON too. */
  refusal(request: ReaderRequest, error: HttpError): ReaderResponse {
    return icebergErrorResponse(request, error);
  }

  /** A request it claims (authenticated already). */
  async answer(request: ReaderRequest): Promise<ReaderResponse> {
    try {
      return await this.respond(request);
    } catch (error) {
      return icebergErrorResponse(request, error);
    }
  }

  private async respond(request: ReaderRequest): Promise<ReaderResponse> {
    const path = request.path.split('?')[0]!;
    const parts = path.split('/').slice(2);
    const read = request.method === 'GET' || request.method === 'HEAD';
    if (parts[0] === 'v1' && parts[1] === 'oauth' && parts[2] === 'tokens') {
      throw new IcebergError(400, 'BadRequestException', 'this catalog issues no OAuth tokens: give serve\'s bearer token as the client\'s token (token=…), not a credential');
    }
    if (!read) {
      throw new IcebergError(403, 'ForbiddenException', `${request.method} ${path} is refused: this Iceberg catalog is read only (its tables are Kafka topics; records reach a table by being produced to its topic)`);
    }
    if (parts[0] !== 'v1') throw new IcebergError(404, 'NotFoundException', `no such path: ${path} (paths: ${paths})`);
    if (parts.length === 2 && parts[1] === 'config') {
      return json(200, { defaults: this.s3 ? {} : { [pyIcebergFileIo]: noS3FaceForPyIceberg }, overrides: { prefix: catalogPrefix }, endpoints });
    }
    if (parts[1] !== catalogPrefix) {
      throw new IcebergError(404, 'NotFoundException', `no such path: ${path}; this catalog's paths carry the prefix ${catalogPrefix} that GET /iceberg/v1/config gives (paths: ${paths})`);
    }
    const rest = parts.slice(2);
    if (rest[0] !== 'namespaces' || rest.length > 4 || (rest.length >= 3 && rest[2] !== 'tables')) {
      throw new IcebergError(404, 'NotFoundException', `no such path: ${path} (paths: ${paths})`);
    }
    if (rest.length === 1) {
      const parent = query(request).get('parent');
      if (parent !== null && parent !== '') this.namespace(parent);
      const listed = page(parent ? [] : [namespaceName], request);
      return json(200, { namespaces: listed.names.map((name) => [name]), 'next-page-token': listed.next });
    }
    if (rest.length === 4 && decode(rest[1]!) !== namespaceName) {
      // A table in a namespace that does not exist does not exist: engines resolve metadata
      // tables (Spark: main.events.files) by loading main.events as a namespace's table
      // first, and fall back only when told there is no such table.
      throw new IcebergError(404, 'NoSuchTableException', `Table does not exist: ${[...decode(rest[1]!).split('\u001f'), decode(rest[3]!)].join('.')} (this catalog has one namespace, ${namespaceName}, holding every table)`);
    }
    this.namespace(rest[1]!);
    if (rest.length === 2) {
      return request.method === 'HEAD' ? { status: 204, headers: {}, body: new Uint8Array(0) } : json(200, { namespace: [namespaceName], properties: {} });
    }
    if (rest.length === 3) {
      const tables = (await this.reader.records.tables()).map((table) => table.name).sort();
      const listed = page(tables, request);
      return json(200, { identifiers: listed.names.map((name) => ({ namespace: [namespaceName], name })), 'next-page-token': listed.next });
    }
    const table = await this.table(decode(rest[3]!));
    if (request.method === 'HEAD') return { status: 204, headers: {}, body: new Uint8Array(0) };
    return this.loadTable(request, table);
  }

  private async loadTable(request: ReaderRequest, table: TableRecord): Promise<ReaderResponse> {
    const mode = query(request).get('snapshots') ?? 'all';
    if (mode !== 'all' && mode !== 'refs') throw new IcebergError(400, 'BadRequestException', `snapshots must be all or refs, got "${mode}"`);
    const loaded = await this.files.loadTable(table, this.root(request));
    const metadata = mode === 'refs' ? { ...loaded.metadata, snapshots: loaded.metadata.snapshots.filter((s) => s['snapshot-id'] === loaded.metadata['current-snapshot-id']) } : loaded.metadata;
    const body = Buffer.from(JSON.stringify({ 'metadata-location': loaded.location, metadata, config: this.fileIoConfig(request) }));
    // The answer never changes for one snapshot and client: a client that has it gets a 304.
    const etag = `"${createHash('sha256').update(body).digest('hex')}"`;
    const ifNoneMatch = header(request, 'if-none-match');
    if (ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim() === etag || tag.trim() === `W/${etag}` || tag.trim() === '*')) {
      return { status: 304, headers: { etag }, body: new Uint8Array(0) };
    }
    // Answered to a token holder (it may carry the S3 key pair): no shared cache may keep it.
    return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', etag, 'cache-control': 'private, no-cache' }, body };
  }

  /** The files below a table's metadata/ that metadataFile answers now, for the S3 face's listing. */
  async metadataListing(request: ReaderRequest, table: TableRecord): Promise<ListedObject[]> {
    return this.files.listing(table, this.root(request));
  }

  /** A file below a table's metadata/ (either face): its bytes, or HttpError 404 naming what is wrong. */
  async metadataFile(request: ReaderRequest, table: TableRecord, name: string): Promise<ReaderResponse> {
    const file = await this.files.file(table, name, this.root(request));
    return bytesResponse(request, file.bytes, file.contentType, file.modified);
  }
}
