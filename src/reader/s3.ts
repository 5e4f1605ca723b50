/**
 * The read API's S3-compatible face, path style, read only, for engines that speak S3 and
 * send no other headers (polars, DataFusion, pyarrow's S3FileSystem, DuckDB's s3://):
 *
 *   HEAD /<bucket>                                   HeadBucket
 *   GET  /<bucket>?location                          GetBucketLocation (the face's region, us-east-1 unless configured)
 *   GET  /<bucket>?list-type=2[&prefix][&delimiter][&continuation-token][&start-after][&max-keys]
 *                                                    ListObjectsV2 (encoding-type=url honoured), data files
 *                                                    and, with the Iceberg catalog, each table's metadata files
 *   HEAD /<bucket>/tables/<table>/files/<id>.parquet HeadObject
 *   GET  /<bucket>/tables/<table>/files/<id>.parquet GetObject, one Range
 *   GET  /<bucket>/tables/<table>/metadata/<name>    GetObject of an Iceberg metadata file (HEAD too)
 *
 * Keys are the HTTP face's paths without the leading slash, so a DuckLake whose data path
 * is s3://<bucket>/ finds every file. Objects are served by the HTTP face's own file
 * response (same rebuild, verification, cache and metrics). Requests are authenticated
 * with AWS Signature Version 4 against one access key pair (src/reader/sigv4.ts); errors
 * are S3's XML with S3's codes and our words, every answer with x-amz-request-id and
 * x-amz-id-2. Expired files are not listed and are NoSuchKey.
 */
import { randomBytes } from 'node:crypto';
import { TableError, type TableRecord } from '../table/record.js';
import type { LiveFileKey } from '../catalog/file-reads.js';
import { fileResponse, HttpError, PreconditionFailedError, type ReaderRequest, type ReaderResponse } from './file-response.js';
import { RebuildMismatchError } from '../files/rebuild.js';
import { GranuleMismatchError } from '../files/granules.js';
import { StoredPieceMismatchError } from '../files/stored-pieces.js';
import type { ReaderParts } from './read-api.js';
import { defaultS3Region, S3AuthError, verifySigV4, type S3Credentials } from './sigv4.js';

export interface S3FaceOptions {
  bucket: string;
  /** The key pair requests must be signed with; null: unsigned requests pass (serve --no-auth). */
  credentials: S3Credentials | null;
  /** The server's clock, for the signature's 15-minute window. */
  now?: () => number;
  /** The region requests must be signed for, and GetBucketLocation names (default us-east-1). */
  region?: string;
}

/** Requests for the bucket, and any request signed for S3 (so that a wrong bucket gets S3's answer, not JSON). */
export function isS3Request(request: ReaderRequest, bucket: string): boolean {
  const first = request.path.split('?')[0]!.split('/')[1] ?? '';
  if (first === bucket) return true;
  for (const [name, value] of Object.entries(request.headers)) {
    if (name.toLowerCase() === 'authorization' && value?.startsWith('AWS4-HMAC-SHA256')) return true;
    if (name.toLowerCase() === 'x-amz-date' || name.toLowerCase() === 'x-amz-content-sha256') return true;
  }
  return false;
}

/** `details`: elements S3 adds to this error's XML after Message (Region, Condition, HeadersNotSigned). */
class S3Error extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly headers: Record<string, string> = {}, readonly details: Record<string, string> = {}) {
    super(message);
  }
}

const xmlHeader = '<?xml version="1.0" encoding="UTF-8"?>\n';
const namespace = 'http://s3.amazonaws.com/doc/2006-03-01/';

function xmlText(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

function xml(status: number, body: string, headers: Record<string, string> = {}): ReaderResponse {
  return { status, headers: { 'content-type': 'application/xml', ...headers }, body: Buffer.from(xmlHeader + body) };
}

/** What names one request in S3's answers (x-amz-request-id, x-amz-id-2), so a client's error report can be matched with serve's. */
interface RequestIds {
  requestId: string;
  hostId: string;
}

function newRequestIds(): RequestIds {
  return { requestId: randomBytes(8).toString('hex').toUpperCase(), hostId: randomBytes(24).toString('base64') };
}

function errorXml(request: ReaderRequest, error: S3Error, resource: string, ids: RequestIds): ReaderResponse {
  const details = Object.entries(error.details).map(([name, value]) => `<${name}>${xmlText(value)}</${name}>`).join('');
  const body = `<Error><Code>${error.code}</Code><Message>${xmlText(error.message)}</Message>${details}<Resource>${xmlText(resource)}</Resource><RequestId>${ids.requestId}</RequestId><HostId>${xmlText(ids.hostId)}</HostId></Error>`;
  const response = xml(error.status, body, error.headers);
  return request.method === 'HEAD' ? { ...response, body: new Uint8Array(0) } : response;
}

/** S3's code for a refusal of the shared file response. */
function fromHttp(error: HttpError): S3Error {
  if (error instanceof PreconditionFailedError) return new S3Error(412, 'PreconditionFailed', error.message, error.headers, { Condition: error.condition });
  const code: Record<number, string> = { 400: 'InvalidArgument', 404: 'NoSuchKey', 405: 'MethodNotAllowed', 410: 'NoSuchKey', 413: 'InvalidRequest', 416: 'InvalidRange', 503: 'SlowDown' };
  return new S3Error(error.status === 410 ? 404 : error.status, code[error.status] ?? 'InternalError', error.message, error.headers);
}

function parseQuery(query: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of query.split('&')) {
    if (part === '') continue;
    const at = part.indexOf('=');
    try {
      out.set(decodeURIComponent(at < 0 ? part : part.slice(0, at)), at < 0 ? '' : decodeURIComponent(part.slice(at + 1).replaceAll('+', ' ')));
    } catch {
      throw new S3Error(400, 'InvalidURI', `the query "${part}" is not valid percent-encoding`);
    }
  }
  return out;
}

const objectKey = /^tables\/([a-z_][a-z0-9_]{0,62})\/files\/([0-9]{1,19})\.parquet$/;

function keyOf(file: LiveFileKey): string {
  return `tables/${file.table}/files/${file.dataFileId}.parquet`;
}

/** The table a prefix is confined to, when it names one whole (`tables/<t>/…`): then only its files are listed. */
function tableOfPrefix(prefix: string): string | undefined {
  return /^tables\/([a-z_][a-z0-9_]{0,62})\//.exec(prefix)?.[1];
}

const compareKeys = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** An object as a listing names it. */
interface Listed {
  key: string;
  size: bigint | number;
  etag: string;
  modified: Date;
}

/** An object a listing names below a table's metadata/: its name there, length, ETag (sha256 hex, as GET answers it) and time. */
export interface ListedObject {
  name: string;
  size: number;
  etag: string;
  modified: Date;
}

/** Objects below a table's metadata/ (the Iceberg catalog's files, src/iceberg/files.ts): one by name, and all that answer now. */
export interface MetadataObjects {
  get(request: ReaderRequest, table: TableRecord, name: string): Promise<ReaderResponse>;
  list(request: ReaderRequest, table: TableRecord): Promise<ListedObject[]>;
}

const metadataKey = /^tables\/([a-z_][a-z0-9_]{0,62})\/metadata\/([^/]{1,200})$/;

export function s3Handler({ records, serving }: Pick<ReaderParts, 'records' | 'serving'>, options: S3FaceOptions, maxBody: number, metadataObjects?: MetadataObjects): (request: ReaderRequest) => Promise<ReaderResponse> {
  const now = options.now ?? Date.now;
  const region = options.region ?? defaultS3Region;

  /**
   * The keys below `prefix`: live data files, and each table's metadata objects when the
   * prefix reaches them. A delimiter that folds a table's whole metadata/ into one common
   * prefix spares building its files; otherwise they are built (and a due snapshot cut).
   */
  async function keysBelow(request: ReaderRequest, prefix: string, delimiter: string): Promise<{ objects: Listed[]; folded: string[] }> {
    const named = tableOfPrefix(prefix);
    // a prefix inside one table's metadata/ reaches none of its data files: they are not read
    const filesBase = named === undefined ? '' : `tables/${named}/files/`;
    const reachesFiles = filesBase.startsWith(prefix) || prefix.startsWith(filesBase);
    const objects: Listed[] = reachesFiles ? (await records.fileKeys(named)).map((file) => ({ key: keyOf(file), size: file.fileSizeBytes, etag: file.sha256.toString('hex'), modified: file.createdAt })) : [];
    const folded: string[] = [];
    if (!metadataObjects) return { objects, folded };
    for (const table of await records.tables()) {
      if (named !== undefined && table.name !== named) continue;
      const base = `tables/${table.name}/metadata/`;
      if (!base.startsWith(prefix) && !prefix.startsWith(base)) continue;
      const cut = delimiter === '' || !base.startsWith(prefix) ? -1 : base.indexOf(delimiter, prefix.length);
      if (cut >= 0) {
        folded.push(base.slice(0, cut + delimiter.length));
        continue;
      }
      for (const object of await metadataObjects.list(request, table)) objects.push({ key: base + object.name, size: object.size, etag: object.etag, modified: object.modified });
    }
    return { objects, folded };
  }

  async function listObjects(request: ReaderRequest, query: Map<string, string>): Promise<ReaderResponse> {
    if (query.get('list-type') !== '2') throw new S3Error(501, 'NotImplemented', 'only ListObjectsV2 (list-type=2) is implemented');
    const prefix = query.get('prefix') ?? '';
    const delimiter = query.get('delimiter') ?? '';
    const maxKeysText = query.get('max-keys') ?? '1000';
    if (!/^\d{1,7}$/.test(maxKeysText)) throw new S3Error(400, 'InvalidArgument', `max-keys must be a whole number, got "${maxKeysText}"`);
    const maxKeys = Math.min(1000, Number(maxKeysText));
    const urlEncoded = query.get('encoding-type') === 'url';
    if (query.has('encoding-type') && !urlEncoded) throw new S3Error(400, 'InvalidArgument', `encoding-type must be url, got "${query.get('encoding-type')}"`);
    const token = query.get('continuation-token');
    let after = query.get('start-after') ?? '';
    if (token !== undefined) {
      const decoded = Buffer.from(token, 'base64url').toString('utf8');
      if (!decoded.startsWith('k:')) throw new S3Error(400, 'InvalidArgument', 'the continuation token is not one this endpoint gave');
      after = decoded.slice(2);
    }
    const { objects, folded } = await keysBelow(request, prefix, delimiter);
    // Entries in key order: objects, and common prefixes (each once) when a delimiter folds keys.
    const unsorted: ({ kind: 'object'; key: string; object: Listed } | { kind: 'prefix'; key: string })[] = folded.map((key) => ({ kind: 'prefix', key }));
    for (const object of objects) {
      if (!object.key.startsWith(prefix)) continue;
      const cut = delimiter === '' ? -1 : object.key.indexOf(delimiter, prefix.length);
      unsorted.push(cut >= 0 ? { kind: 'prefix', key: object.key.slice(0, cut + delimiter.length) } : { kind: 'object', key: object.key, object });
    }
    const entries = unsorted.sort((a, b) => compareKeys(a.key, b.key)).filter((entry, i, all) => entry.kind === 'object' || all[i - 1]?.key !== entry.key);
    const remaining = entries.filter((entry) => compareKeys(entry.key, after) > 0);
    const page = remaining.slice(0, maxKeys);
    // max-keys=0 asks for no keys: an empty page that is not truncated (there is no key to continue after), as S3 answers.
    const truncated = page.length > 0 && remaining.length > page.length;
    const encode = (key: string) => xmlText(urlEncoded ? encodeURIComponent(key).replaceAll('%2F', '/') : key);
    const parts = [
      `<ListBucketResult xmlns="${namespace}">`,
      `<Name>${xmlText(options.bucket)}</Name>`,
      `<Prefix>${encode(prefix)}</Prefix>`,
      delimiter ? `<Delimiter>${encode(delimiter)}</Delimiter>` : '',
      `<MaxKeys>${maxKeys}</MaxKeys>`,
      urlEncoded ? '<EncodingType>url</EncodingType>' : '',
      `<KeyCount>${page.length}</KeyCount>`,
      `<IsTruncated>${truncated}</IsTruncated>`,
      token !== undefined ? `<ContinuationToken>${xmlText(token)}</ContinuationToken>` : '',
      query.has('start-after') ? `<StartAfter>${encode(query.get('start-after')!)}</StartAfter>` : '',
      truncated ? `<NextContinuationToken>${Buffer.from(`k:${page.at(-1)!.key}`).toString('base64url')}</NextContinuationToken>` : '',
      ...page.map((entry) =>
        entry.kind === 'prefix'
          ? `<CommonPrefixes><Prefix>${encode(entry.key)}</Prefix></CommonPrefixes>`
          : `<Contents><Key>${encode(entry.key)}</Key><LastModified>${entry.object.modified.toISOString()}</LastModified><ETag>&quot;${entry.object.etag}&quot;</ETag><Size>${entry.object.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
      ),
      '</ListBucketResult>',
    ];
    return xml(200, parts.join(''));
  }

  async function tableOfKey(key: string, name: string): Promise<TableRecord> {
    try {
      return await records.table(name);
    } catch (error) {
      if (error instanceof TableError) throw new S3Error(404, 'NoSuchKey', `no object ${key}: ${error.message}`);
      throw error;
    }
  }

  async function getObject(request: ReaderRequest, key: string): Promise<ReaderResponse> {
    const metadata = metadataObjects && metadataKey.exec(key);
    if (metadata) {
      const table = await tableOfKey(key, metadata[1]!);
      try {
        return await metadataObjects.get(request, table, metadata[2]!);
      } catch (error) {
        if (error instanceof HttpError) throw fromHttp(error);
        throw error;
      }
    }
    const match = objectKey.exec(key);
    if (!match) throw new S3Error(404, 'NoSuchKey', `no object ${key}: keys are tables/<table>/files/<id>.parquet${metadataObjects ? ' and tables/<table>/metadata/<name> (Iceberg)' : ''}`);
    const table = await tableOfKey(key, match[1]!);
    const file = await records.file(table, BigInt(match[2]!));
    if (!file) throw new S3Error(404, 'NoSuchKey', `no object ${key}: table ${table.name} has no file ${match[2]}`);
    try {
      const response = await fileResponse(serving, request, table, file, maxBody);
      // object_store (polars, DataFusion) needs Last-Modified on every object response
      return { ...response, headers: { ...response.headers, 'last-modified': file.createdAt.toUTCString() } };
    } catch (error) {
      if (error instanceof HttpError) throw fromHttp(error);
      throw error;
    }
  }

  return async (request) => {
    const ids = newRequestIds();
    const response = await answer(request, ids);
    return { ...response, headers: { ...response.headers, 'x-amz-request-id': ids.requestId, 'x-amz-id-2': ids.hostId } };
  };

  async function answer(request: ReaderRequest, ids: RequestIds): Promise<ReaderResponse> {
    const [path, rawQuery = ''] = request.path.split(/\?(.*)/s) as [string, string?];
    try {
      // Encoding first: the signature is checked over the decoded query, and a path or query
      // that does not decode is the client's mistake (400), whoever sent it.
      const segments = path.split('/');
      let bucket: string;
      let key: string;
      try {
        bucket = decodeURIComponent(segments[1] ?? '');
        key = decodeURIComponent(segments.slice(2).join('/'));
      } catch {
        throw new S3Error(400, 'InvalidURI', `the path ${path} is not valid percent-encoding`);
      }
      const query = parseQuery(rawQuery);
      // A write is refused before its signature is checked: whoever signed it, the answer is
      // the same, and an engine's upload (PUT, a multipart POST) is told why in these words.
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        throw new S3Error(405, 'MethodNotAllowed', `${request.method} ${path} is refused: offsetlake tables are read only (this S3 face answers GET and HEAD; a table's rows come from its Kafka topic, so write by producing records to the topic)`, { allow: 'GET, HEAD' });
      }
      if (options.credentials) {
        await verifySigV4(request, options.credentials, now(), region);
      }
      if (bucket === '') throw new S3Error(400, 'InvalidRequest', `name the bucket in the path (path-style addressing): /${options.bucket}/…`);
      if (bucket !== options.bucket) throw new S3Error(404, 'NoSuchBucket', `no bucket ${bucket}; this endpoint serves the bucket ${options.bucket}`);
      if (key === '') {
        if (request.method === 'HEAD') return { status: 200, headers: { 'x-amz-bucket-region': region }, body: new Uint8Array(0) };
        // S3 names us-east-1 by an empty constraint
        if (query.has('location')) return xml(200, region === 'us-east-1' ? `<LocationConstraint xmlns="${namespace}"/>` : `<LocationConstraint xmlns="${namespace}">${xmlText(region)}</LocationConstraint>`);
        return await listObjects(request, query);
      }
      return await getObject(request, key);
    } catch (error) {
      if (error instanceof S3AuthError) {
        // a refusal that names the region: its header too, which SDKs read to sign again (S3 sends it)
        const regionHeader: Record<string, string> = error.details.Region ? { 'x-amz-bucket-region': error.details.Region } : {};
        return errorXml(request, new S3Error(error.code === 'AuthorizationHeaderMalformed' ? 400 : 403, error.code, error.message, regionHeader, error.details), path, ids);
      }
      if (error instanceof S3Error) return errorXml(request, error, path, ids);
      if (error instanceof RebuildMismatchError) return errorXml(request, new S3Error(500, 'InternalError', `${error.message}; the bytes were not served`), path, ids);
      if (error instanceof GranuleMismatchError || error instanceof StoredPieceMismatchError) return errorXml(request, new S3Error(500, 'InternalError', error.message), path, ids);
      return errorXml(request, new S3Error(500, 'InternalError', `internal error: ${(error as Error).message}`), path, ids);
    }
  }
}
