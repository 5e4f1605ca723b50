/**
 * The read API's HTTP and S3 faces over a reader held in memory (src/reader/read-api.ts):
 * no Postgres, no Kafka. A table with three files whose bytes are known; what each answer
 * must be comes from RFC 9110 (ranges, preconditions, HEAD) and from S3's ListObjectsV2
 * and GetObject documentation (keys in UTF-8 byte order, continuation, common prefixes,
 * error codes), written here from those texts. The same behaviour over the real stack is
 * test/integration/reader.test.ts and s3.test.ts.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readerHandler, type MountedCatalog, type ReaderRequest, type ReaderResponse } from '../../src/reader/http.js';
import { bodyBytes } from '../../src/reader/file-response.js';
import type { CatalogReads, FaceCounter, FileServing, IndexMetrics, LostOffsets, ReaderParts, ReadMeter, ReadStatus } from '../../src/reader/read-api.js';
import type { CatalogFile, LiveFileKey } from '../../src/catalog/file-reads.js';
import { TableError, type TableRecord } from '../../src/table/record.js';
import { defaultSettings } from '../../src/table/settings.js';
import { ByteBudget } from '../../src/common/limit.js';
import { Histogram } from '../../src/common/exposition.js';
import { GranuleMismatchError } from '../../src/files/granules.js';
import { newMetrics } from '../../src/reader/metrics.js';

const created = new Date('2026-11-30T10:00:00Z');

const table: TableRecord = { tableId: 1n, name: 'orders', topic: 'orders', format: 'json', settings: defaultSettings, createdAt: created, topicId: null };

/** A file of `size` bytes whose last `footerBytes` are its footer (what the catalog holds). */
function fileOf(id: bigint, size: number, footerBytes: number, expiredAt: Date | null = null): { file: CatalogFile; bytes: Uint8Array } {
  const bytes = new Uint8Array(size).map((_, i) => (i * 7 + Number(id)) % 251);
  const file: CatalogFile = {
    dataFileId: id, tableId: table.tableId, partition: 0, startOffset: 0n, endOffset: 10n, bucket: created, recordCount: 10n,
    fileSizeBytes: BigInt(size), footer: Buffer.from(bytes.subarray(size - footerBytes)), sha256: createHash('sha256').update(bytes).digest(),
    sealReason: 'bytes', schemaVersion: 1, encoderVersion: 'v1', source: 'live', createdAt: created, expiredAt, replacedBy: null, replacedAt: null, hasGranules: true, rangeFiles: 1, columns: [],
  };
  return { file, bytes };
}

/** The faces' reader over files in memory, every part in one object: it counts what it is asked, so a test can tell what needed a rebuild. */
class MemoryReader implements ReaderParts, CatalogReads, ReadMeter, ReadStatus {
  readonly counted = new Map<FaceCounter, number>();
  readonly produced: [bigint, number, number][] = [];
  bytesServed = 0;
  failWith: Error | null = null;
  readonly cache = { size: { entries: 0, bytes: 0 } };
  readonly heldRecords = { size: { entries: 0, bytes: 0 } };
  readonly rebuildDurations = { file: new Histogram(), granule: new Histogram() };
  readonly serving: FileServing;
  readonly records: CatalogReads = this;
  readonly status: ReadStatus = this;

  constructor(readonly held: { file: CatalogFile; bytes: Uint8Array }[], budget = new ByteBudget(64 * 1024 * 1024), waitMs = 10_000) {
    const reader = this;
    this.serving = {
      range: async function* (_table: TableRecord, file: CatalogFile, start: number, end: number) {
        reader.produced.push([file.dataFileId, start, end]);
        if (reader.failWith) throw reader.failWith;
        const { bytes } = reader.held.find((f) => f.file.dataFileId === file.dataFileId)!;
        // in pieces, as a rebuild yields them (magic, chunks, footer)
        for (let at = start; at < end; at += 16) yield bytes.subarray(at, Math.min(end, at + 16));
      },
      meter: this,
      budget: { bytes: budget, waitMs },
    };
  }
  count(counter: FaceCounter, by = 1): void {
    this.counted.set(counter, (this.counted.get(counter) ?? 0) + by);
  }
  served(bytes: number): void {
    this.bytesServed += bytes;
  }
  get metrics() {
    return { ...newMetrics(), requests: this.counted.get('requests') ?? 0, bytesServed: this.bytesServed, kafkaRecords: 0, kafkaBytes: 0, granuleRecordHits: 0 };
  }
  async tables(): Promise<TableRecord[]> {
    return [table];
  }
  async table(name: string): Promise<TableRecord> {
    if (name !== table.name) throw new TableError(`no table named ${name}`);
    return table;
  }
  async files(): Promise<CatalogFile[]> {
    return this.held.map((f) => f.file);
  }
  async fileKeys(): Promise<LiveFileKey[]> {
    return this.held.filter((f) => !f.file.expiredAt).map(({ file }) => ({ table: table.name, dataFileId: file.dataFileId, fileSizeBytes: file.fileSizeBytes, sha256: file.sha256, createdAt: file.createdAt }));
  }
  async file(_table: TableRecord, id: bigint): Promise<CatalogFile | undefined> {
    return this.held.find((f) => f.file.dataFileId === id)?.file;
  }
  async lostOffsets(): Promise<LostOffsets[]> {
    return [];
  }
  async indexes(): Promise<IndexMetrics[]> {
    return [];
  }
}

const get = (path: string, headers: Record<string, string> = {}, method = 'GET'): ReaderRequest => ({ method, path, headers });
const text = async (response: ReaderResponse) => Buffer.from(await bodyBytes(response.body)).toString('utf8');

describe('the HTTP face over a reader in memory (RFC 9110)', () => {
  const nine = fileOf(9n, 300, 40);
  const ten = fileOf(10n, 200, 30);
  const path = (id: bigint) => `/tables/orders/files/${id}.parquet`;

  it('a Range inside the file is a 206 with Content-Range first-last/size and exactly those bytes, produced by the reader', async () => {
    const reader = new MemoryReader([nine, ten]);
    const response = await readerHandler(reader, { token: null })(get(path(9n), { range: 'bytes=5-104' }));
    expect(response.status).toBe(206);
    expect(response.headers['content-range']).toBe('bytes 5-104/300');
    expect(response.headers['content-length']).toBe('100');
    expect(Buffer.from(await bodyBytes(response.body))).toEqual(Buffer.from(nine.bytes.subarray(5, 105)));
    expect(reader.produced).toEqual([[9n, 5, 105]]);
    expect(reader.bytesServed).toBe(100);
  });

  it('a suffix Range inside the footer of a file without granules is answered from the catalog footer, with no rebuild', async () => {
    const legacy = fileOf(11n, 300, 40);
    legacy.file.hasGranules = false;
    const reader = new MemoryReader([legacy]);
    const response = await readerHandler(reader, { token: null })(get(path(11n), { range: 'bytes=-25' }));
    expect(response.status).toBe(206);
    expect(response.headers['content-range']).toBe('bytes 275-299/300');
    expect(Buffer.from(await bodyBytes(response.body))).toEqual(Buffer.from(legacy.bytes.subarray(275)));
    expect(reader.produced).toEqual([]);
    expect(reader.counted.get('footerHits')).toBe(1);
  });

  it('a suffix Range inside the footer of a file with granules goes through the reader, which checks the stored footer before sending it (issue 46)', async () => {
    const reader = new MemoryReader([nine]);
    const response = await readerHandler(reader, { token: null })(get(path(9n), { range: 'bytes=-25' }));
    expect(response.status).toBe(206);
    expect(Buffer.from(await bodyBytes(response.body))).toEqual(Buffer.from(nine.bytes.subarray(275)));
    expect(reader.produced).toEqual([[9n, 275, 300]]);
    expect(reader.counted.get('footerHits')).toBe(1);
  });

  it('a Range that starts at or past the end is a 416 naming the size (Content-Range bytes */size)', async () => {
    const response = await readerHandler(new MemoryReader([nine]), { token: null })(get(path(9n), { range: 'bytes=300-' }));
    expect(response.status).toBe(416);
    expect(response.headers['content-range']).toBe('bytes */300');
    expect(JSON.parse(await text(response)).error).toContain('300');
  });

  it('without a Range the whole file is a 200 with its sha256 as the ETag', async () => {
    const reader = new MemoryReader([ten]);
    const response = await readerHandler(reader, { token: null })(get(path(10n)));
    expect(response.status).toBe(200);
    expect(response.headers.etag).toBe(`"${createHash('sha256').update(ten.bytes).digest('hex')}"`);
    expect(Buffer.from(await bodyBytes(response.body))).toEqual(Buffer.from(ten.bytes));
  });

  it('If-None-Match with the ETag is a 304 and If-Match with another is a 412, neither rebuilding anything', async () => {
    const reader = new MemoryReader([nine]);
    const handler = readerHandler(reader, { token: null });
    const etag = `"${nine.file.sha256.toString('hex')}"`;
    expect((await handler(get(path(9n), { 'if-none-match': `W/${etag}` }))).status).toBe(304);
    expect((await handler(get(path(9n), { 'if-match': '"0000"', range: 'bytes=0-9' }))).status).toBe(412);
    expect((await handler(get(path(9n), { 'if-modified-since': new Date(created.getTime() + 1000).toUTCString() }))).status).toBe(304);
    expect(reader.produced).toEqual([]);
  });

  it('HEAD sends the headers GET would, Content-Length the file size, and no body', async () => {
    const reader = new MemoryReader([nine]);
    const response = await readerHandler(reader, { token: null })(get(path(9n), {}, 'HEAD'));
    expect(response.status).toBe(200);
    expect(response.headers['content-length']).toBe('300');
    expect((await bodyBytes(response.body)).byteLength).toBe(0);
    expect(reader.produced).toEqual([]);
  });

  it('an expired file is a 410 (counted), an unknown one a 404, a bad name a 400, another method a 405 with Allow', async () => {
    const expired = fileOf(11n, 100, 20, new Date('2026-11-30T12:00:00Z'));
    const reader = new MemoryReader([nine, expired]);
    const handler = readerHandler(reader, { token: null });
    expect((await handler(get(path(11n)))).status).toBe(410);
    expect(reader.counted.get('expired')).toBe(1);
    expect((await handler(get(path(12n)))).status).toBe(404);
    expect((await handler(get('/tables/nope/files/9.parquet'))).status).toBe(404);
    expect((await handler(get('/tables/orders/files/x.parquet'))).status).toBe(400);
    const post = await handler(get(path(9n), {}, 'POST'));
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('a body larger than the endpoint may carry is a 413 that says to read it with smaller Ranges, before any rebuild', async () => {
    const reader = new MemoryReader([nine]);
    const response = await readerHandler(reader, { token: null, maxBodyBytes: 100, maxBodyReason: 'a test limit' })(get(path(9n), { range: 'bytes=0-199' }));
    expect(response.status).toBe(413);
    const error = JSON.parse(await text(response)).error as string;
    expect(error).toContain('a test limit');
    expect(error).toContain('Range requests of at most 100 bytes');
    expect(reader.produced).toEqual([]);
  });

  it('a response that finds no room in the budget within the wait is a 503 with Retry-After, counted busy', async () => {
    const budget = new ByteBudget(1000);
    const held = await budget.acquire(1000);
    const reader = new MemoryReader([nine], budget, 30);
    const response = await readerHandler(reader, { token: null })(get(path(9n), { range: 'bytes=0-99' }));
    expect(response.status).toBe(503);
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    expect(reader.counted.get('busy')).toBe(1);
    expect(reader.produced).toEqual([]);
    held();
    const next = await readerHandler(reader, { token: null })(get(path(9n), { range: 'bytes=0-99' }));
    expect(next.status).toBe(206);
    // the response holds its share until its body has been taken
    expect(budget.inUse).toBe(100);
    await bodyBytes(next.body);
    expect(budget.inUse).toBe(0);
  });

  it('a rebuild that does not match the catalog is a 500 with its reason and no bytes', async () => {
    const reader = new MemoryReader([nine]);
    reader.failWith = new GranuleMismatchError(9n, 0, '_value', 'sha256 differs');
    const response = await readerHandler(reader, { token: null })(get(path(9n), { range: 'bytes=0-99' }));
    expect(response.status).toBe(500);
    expect(JSON.parse(await text(response)).error).toContain('the bytes were not served');
    expect(reader.bytesServed).toBe(0);
  });

  it('with a token set, a request without it is a 401 with a Bearer challenge, and one with it passes', async () => {
    const handler = readerHandler(new MemoryReader([nine]), { token: 's3cret' });
    const refused = await handler(get('/tables'));
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toBe('Bearer realm="offsetlake"');
    expect((await handler(get('/tables', { authorization: 'Bearer wrong' }))).status).toBe(401);
    const listed = await handler(get('/tables', { Authorization: 'Bearer s3cret' }));
    expect(JSON.parse(await text(listed))).toEqual({ tables: [{ name: 'orders', topic: 'orders', format: 'json', files: '/tables/orders/files' }] });
  });

  it('the manifest lists every file with its size, footer length and sha256', async () => {
    const manifest = JSON.parse(await text(await readerHandler(new MemoryReader([nine, ten]), { token: null })(get('/tables/orders/files'))));
    expect(manifest.files.map((f: { id: string; sizeBytes: number; footerBytes: number; sha256: string }) => [f.id, f.sizeBytes, f.footerBytes, f.sha256])).toEqual([
      ['9', 300, 40, nine.file.sha256.toString('hex')],
      ['10', 200, 30, ten.file.sha256.toString('hex')],
    ]);
  });
});

describe('the S3 face over a reader in memory (ListObjectsV2, GetObject)', () => {
  const files = [fileOf(9n, 300, 40), fileOf(10n, 200, 30), fileOf(100n, 120, 20), fileOf(7n, 90, 10, new Date('2026-11-30T12:00:00Z'))];
  const s3 = readerHandler(new MemoryReader(files), { token: 'unused-by-s3', s3: { bucket: 'lake', credentials: null } });
  const keys = (xml: string) => [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!);
  const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];

  it('lists live keys in UTF-8 byte order (10 before 100 before 9), without expired files, one page of max-keys at a time', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 5; page += 1) {
      const response = await s3(get(`/lake?list-type=2&prefix=tables/orders/files/&max-keys=2${token ? `&continuation-token=${token}` : ''}`));
      expect(response.status).toBe(200);
      const xml = await text(response);
      seen.push(...keys(xml));
      token = tag(xml, 'NextContinuationToken');
      expect(tag(xml, 'IsTruncated')).toBe(token ? 'true' : 'false');
      if (!token) break;
    }
    expect(seen).toEqual(['tables/orders/files/10.parquet', 'tables/orders/files/100.parquet', 'tables/orders/files/9.parquet']);
  });

  it('a delimiter folds keys below the prefix into common prefixes, each once', async () => {
    const xml = await text(await s3(get('/lake?list-type=2&prefix=tables/&delimiter=/')));
    expect(keys(xml)).toEqual([]);
    expect([...xml.matchAll(/<CommonPrefixes><Prefix>([^<]*)<\/Prefix><\/CommonPrefixes>/g)].map((m) => m[1])).toEqual(['tables/orders/']);
    expect(tag(xml, 'KeyCount')).toBe('1');
  });

  it('GetObject with a Range is a 206 with those bytes and a Last-Modified; an unknown key is NoSuchKey, another bucket NoSuchBucket', async () => {
    const response = await s3(get('/lake/tables/orders/files/10.parquet', { range: 'bytes=10-19' }));
    expect(response.status).toBe(206);
    expect(response.headers['last-modified']).toBe(created.toUTCString());
    expect(Buffer.from(await bodyBytes(response.body))).toEqual(Buffer.from(files[1]!.bytes.subarray(10, 20)));
    const missing = await s3(get('/lake/tables/orders/files/11.parquet'));
    expect(missing.status).toBe(404);
    expect(tag(await text(missing), 'Code')).toBe('NoSuchKey');
    const other = await s3(get('/other/tables/orders/files/10.parquet', { authorization: 'AWS4-HMAC-SHA256 Credential=x/20261130/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00' }));
    expect(other.status).toBe(404);
    expect(tag(await text(other), 'Code')).toBe('NoSuchBucket');
  });

  describe("with a table's Iceberg metadata mounted", () => {
    const metadata = [
      { name: '00000-uuid.metadata.json', size: 11, etag: 'a'.repeat(64), modified: created },
      { name: '00001-42.metadata.json', size: 22, etag: 'b'.repeat(64), modified: created },
      { name: 'm-5-1-0123456789abcdef.avro', size: 33, etag: 'c'.repeat(64), modified: created },
      { name: 'snap-42.avro', size: 44, etag: 'd'.repeat(64), modified: created },
    ];
    let listed = 0;
    const catalog: MountedCatalog = {
      claims: () => false,
      answer: () => Promise.reject(new Error('not asked')),
      refusal: () => { throw new Error('not asked'); },
      metadataFile: () => Promise.reject(new Error('not asked')),
      metadataListing: async () => {
        listed += 1;
        return metadata;
      },
    };
    const withMetadata = readerHandler(new MemoryReader(files), { token: 'unused-by-s3', s3: { bucket: 'lake', credentials: null }, catalog });
    const prefixes = (xml: string) => [...xml.matchAll(/<CommonPrefixes><Prefix>([^<]*)<\/Prefix><\/CommonPrefixes>/g)].map((m) => m[1]);

    it('a delimiter that folds metadata/ whole names it as a common prefix without building its files', async () => {
      listed = 0;
      const xml = await text(await withMetadata(get('/lake?list-type=2&prefix=tables/orders/&delimiter=/')));
      expect(prefixes(xml)).toEqual(['tables/orders/files/', 'tables/orders/metadata/']);
      expect(listed).toBe(0);
    });

    it("a prefix inside metadata/ lists its objects with their sizes and ETags; another delimiter folds at its own character, after the data files' keys", async () => {
      const xml = await text(await withMetadata(get('/lake?list-type=2&prefix=tables/orders/metadata/s')));
      expect(keys(xml)).toEqual(['tables/orders/metadata/snap-42.avro']);
      expect([tag(xml, 'Size'), tag(xml, 'ETag')]).toEqual(['44', `&quot;${'d'.repeat(64)}&quot;`]);
      const folded = await text(await withMetadata(get('/lake?list-type=2&prefix=tables/orders/metadata/&delimiter=-')));
      expect(prefixes(folded)).toEqual(['tables/orders/metadata/00000-', 'tables/orders/metadata/00001-', 'tables/orders/metadata/m-', 'tables/orders/metadata/snap-']);
      const all = await text(await withMetadata(get('/lake?list-type=2')));
      expect(keys(all)).toEqual(['tables/orders/files/10.parquet', 'tables/orders/files/100.parquet', 'tables/orders/files/9.parquet', ...metadata.map((m) => `tables/orders/metadata/${m.name}`)]);
    });
  });

  it('writing is refused with MethodNotAllowed: the bucket is read only', async () => {
    const response = await s3(get('/lake/tables/orders/files/10.parquet', {}, 'PUT'));
    expect(response.status).toBe(405);
    expect(tag(await text(response), 'Code')).toBe('MethodNotAllowed');
  });
});
