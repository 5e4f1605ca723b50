/**
 * serve's S3-compatible face, read by engines no one here wrote, each signing with its own
 * SigV4 implementation (test/integration/s3_engines.py): boto3, DuckDB s3:// and the
 * DuckLake with its own s3:// data path, polars, pyarrow's S3FileSystem, DataFusion. The
 * rows they count are checked against a read_committed consumer we did not write.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { request as httpRequest } from 'node:http';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '@aws-crypto/sha256-js';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { type TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { libpqConnectionString } from '../../src/cli/attach.js';
import { indexedRowsIndependently } from '../helpers/independent-kafka.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';

const run = promisify(execFile);
const keys = { accessKeyId: 'offsetlake-reader', secretAccessKey: 's3cret/with+chars' };
const bucket = 'offsetlake';

let engine: Engine;
let table: TableRecord;
let files: CatalogFile[];
let rawFiles: CatalogFile[];
let service: ReaderService;
let reader: ListeningReader | undefined;
let endpoint: string;

beforeAll(async () => {
  engine = await testEngine('s3');
  const topic = await newTopic(engine, 2, 's3');
  const created = await createTableFromTopic(engine, { name: 'events', topic, format: 'json', settings: resolveSettings({ file_bytes: '2000' }) });
  // the same records as a raw table, read by DataFusion beside the JSON table
  const raw = await createTableFromTopic(engine, { name: 'events_raw', topic, format: 'raw', settings: resolveSettings({ file_bytes: '2000' }) });
  const t0 = Date.UTC(2026, 10, 1, 12);
  for (let i = 0; i < 4; i += 1) {
    await produce(engine.kafka, topic, Array.from({ length: 40 }, (_, j) => ({
      key: `k${j}`, value: JSON.stringify({ i, j, text: 'x'.repeat(j) }), partition: j % 2, timestamp: t0 + i * 60_000 + j,
    })), { transactionalId: `s3-${topic}`, abort: i === 1 });
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  table = await findTable(engine.catalog, created.name);
  files = await listFiles(engine.catalog, table.tableId);
  rawFiles = await listFiles(engine.catalog, raw.tableId);
  service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 64 * 1024 * 1024 });
  reader = await listeningReader(readerHandler(service, { token: 'http-face-token', s3: { bucket, credentials: keys } }));
  endpoint = reader.url;
}, 120_000);

afterAll(async () => {
  await reader?.stop();
  await engine?.close();
});

type EngineAnswer = { rows: number; offsets: number; partitions: number; error?: string; trace?: string };

describe("serve's S3-compatible face", () => {
  it('boto3, DuckDB (s3:// and the DuckLake at its own s3:// data path), polars, pyarrow and DataFusion (also the raw table of the same records) each read the table with the rows a read_committed consumer sees; a wrong secret is refused', async () => {
    expect(files.length).toBeGreaterThan(3);
    const script = fileURLToPath(new URL('./s3_engines.py', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = execFile('python3', [script], { maxBuffer: 64 * 1024 * 1024, timeout: 240_000 }, (error, out, err) => (error ? reject(new Error(`s3_engines.py failed: ${err || error.message}`)) : resolve(out)));
      child.stdin!.end(JSON.stringify({ endpoint, bucket, key: keys.accessKeyId, secret: keys.secretAccessKey, table: table.name, rawTable: 'events_raw', libpq: libpqConnectionString(engine.config.databaseUrl) }));
    });
    const answers = JSON.parse(stdout) as Record<string, EngineAnswer & Record<string, unknown>>;
    for (const [name, answer] of Object.entries(answers)) expect(answer.error, `${name}: ${answer.trace ?? ''}`).toBeUndefined();

    const expected = await indexedRowsIndependently(engine, table);
    expect(expected.rows).toBe(120); // 3 committed transactions of 40; the aborted one is nowhere
    for (const name of ['duckdb', 'polars', 'pyarrow', 'datafusion']) {
      const { rows, offsets, partitions } = answers[name]!;
      expect({ rows, offsets, partitions }, name).toEqual(expected);
    }
    expect(answers.duckdb!.ducklake).toEqual(expected);
    expect(answers.datafusion!.raw).toEqual(expected);

    const boto = answers.boto3 as unknown as { refusals: Record<string, unknown>; keys: string[]; pages: number; tables: string[]; size: number; tail: string; wrongSecret: { code: string; status: number } };
    expect(boto.keys.sort()).toEqual(files.map((f) => `tables/events/files/${f.dataFileId}.parquet`).sort());
    expect(boto.pages).toBe(Math.ceil(files.length / 2));
    expect(boto.tables).toEqual(['tables/events/', 'tables/events_raw/']);
    expect(boto.tail).toBe('PAR1');
    expect(boto.wrongSecret).toEqual({ code: 'SignatureDoesNotMatch', status: 403 });
    expect(boto.refusals).toEqual({
      missingKey: { code: 'NoSuchKey', status: 404 },
      otherBucket: { code: 'NoSuchBucket', status: 404 },
      write: { code: 'MethodNotAllowed', status: 405 },
      beyondEnd: { code: 'InvalidRange', status: 416 },
    });

    // the same rebuild and verification as the HTTP face: every byte served came from a checked chunk, the page index or the footer
    expect(service.metrics.mismatches + service.metrics.chunkMismatches).toBe(0);
    expect(service.metrics.rebuilds).toBe(0);
    expect(service.metrics.granuleRebuilds + service.metrics.partialGranuleRebuilds).toBeGreaterThanOrEqual(files.length + rawFiles.length);
    expect(service.metrics.footerHits).toBeGreaterThan(0);
  }, 300_000);

  it("an unsigned request gets S3's error XML (AccessDenied, 403); the HTTP face beside it keeps its own token and JSON", async () => {
    const unsigned = await fetch(`${endpoint}/${bucket}/tables/events/files/${files[0]!.dataFileId}.parquet`);
    expect(unsigned.status).toBe(403);
    expect(unsigned.headers.get('content-type')).toBe('application/xml');
    const text = await unsigned.text();
    expect(text).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<Error><Code>AccessDenied<\/Code><Message>this endpoint needs requests signed with AWS Signature Version 4 and its access key<\/Message><Resource>\/offsetlake\/tables\/events\/files\/\d+\.parquet<\/Resource>/);
    // The HTTP face is unchanged beside it: its own token, its JSON.
    expect((await fetch(`${endpoint}/tables`, { headers: { authorization: 'Bearer http-face-token' } })).status).toBe(200);
    expect((await fetch(`${endpoint}/tables`)).status).toBe(401);
  });

  it('botocore: If-None-Match / If-Modified-Since give 304 and a failed If-Match / If-Unmodified-Since 412 PreconditionFailed naming the condition, in RFC 9110 order, before any Range, for GET and HEAD; MaxKeys=0 lists an empty page; a client signing for another region is told the right one', async () => {
    const file = files[0]!;
    const script = fileURLToPath(new URL('./s3_conditions.py', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = execFile('python3', [script], { timeout: 120_000 }, (error, out, err) => (error ? reject(new Error(`s3_conditions.py failed: ${err || error.message}`)) : resolve(out)));
      child.stdin!.end(JSON.stringify({ endpoint, bucket, key: keys.accessKeyId, secret: keys.secretAccessKey, object: `tables/events/files/${file.dataFileId}.parquet` }));
    });
    const seen = JSON.parse(stdout) as Record<string, Record<string, unknown>>;
    expect(seen.etagIsSha256OfBody).toBe(true);
    const notModified = { status: 304, code: '304' };
    const failed = (condition: string) => ({ status: 412, code: 'PreconditionFailed', condition, message: `the precondition ${condition} does not hold for this file` });
    expect(seen).toMatchObject({
      ifNoneMatchSame: notModified,
      ifNoneMatchOther: { status: 200 },
      ifNoneMatchAny: notModified,
      ifMatchSame: { status: 200 },
      ifMatchOther: failed('If-Match'),
      ifModifiedSinceLastModified: notModified,
      ifModifiedSinceDayBefore: { status: 200 },
      ifUnmodifiedSinceDayBefore: failed('If-Unmodified-Since'),
      ifUnmodifiedSinceLastModified: { status: 200 },
      // If-Match decides alone when it is there, and If-None-Match over If-Modified-Since (RFC 9110 §13.2.2; S3's documented pairs)
      ifMatchSameButUnmodifiedSinceDayBefore: { status: 200 },
      ifNoneMatchSameButModifiedSinceDayBefore: notModified,
      rangeIfMatchOther: failed('If-Match'),
      rangeIfNoneMatchSame: notModified,
      headIfNoneMatchSame: notModified,
      headIfMatchOther: { status: 412 },
      maxKeysZero: { status: 200, keyCount: 0, maxKeys: 0, isTruncated: false, contents: 0, next: null },
    });
    // botocore reads the region from S3's error, signs again for it, and gets the page
    expect(seen.otherRegion).toEqual({ attempts: [{ status: 400, code: 'AuthorizationHeaderMalformed', region: 'us-east-1' }, { status: 200 }], status: 200 });
  }, 180_000);

  it("SigV4 by the AWS SDK's signer: a signature whose SignedHeaders lack host is AccessDenied naming host, one scoped to another region is AuthorizationHeaderMalformed (400) naming ours; bad percent-encoding in the path or query is 400 InvalidURI, not a 500", async () => {
    const key = `tables/events/files/${files[0]!.dataFileId}.parquet`;
    const url = new URL(`${endpoint}/${bucket}/${key}`);
    const signed = async (options: { region?: string; withoutHost?: boolean }) => {
      const signer = new SignatureV4({ credentials: keys, region: options.region ?? 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false });
      const headers: Record<string, string> = { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...(options.withoutHost ? {} : { host: url.host }) };
      const request = await signer.sign({ method: 'GET', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname, query: {}, headers });
      return fetch(url, { headers: request.headers as Record<string, string> });
    };
    const accepted = await signed({});
    expect(accepted.status).toBe(200);
    await accepted.arrayBuffer();

    const noHost = await signed({ withoutHost: true });
    expect(noHost.status).toBe(403);
    const noHostXml = await noHost.text();
    expect(noHostXml).toContain('<Code>AccessDenied</Code>');
    expect(noHostXml).toContain('<HeadersNotSigned>host</HeadersNotSigned>');
    expect(noHostXml).toContain('<Message>SignedHeaders must include host: a signature that does not cover the Host header is not accepted</Message>');

    const otherRegion = await signed({ region: 'eu-west-1' });
    expect(otherRegion.status).toBe(400);
    expect(otherRegion.headers.get('content-type')).toBe('application/xml');
    expect(await otherRegion.text()).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<Error><Code>AuthorizationHeaderMalformed<\/Code><Message>the credential scope names region eu-west-1; this endpoint is in us-east-1: sign for us-east-1<\/Message><Region>us-east-1<\/Region>/);

    // Raw request lines: fetch would re-encode what it cannot parse.
    const raw = (path: string) => new Promise<{ status: number; body: string }>((resolve, reject) => {
      httpRequest({ host: url.hostname, port: url.port, path, headers: { authorization: `AWS4-HMAC-SHA256 Credential=${keys.accessKeyId}/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`, 'x-amz-date': '20260101T000000Z' } }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (piece: string) => (body += piece)).on('end', () => resolve({ status: response.statusCode!, body }));
      }).on('error', reject).end();
    });
    for (const path of [`/${bucket}?list-type=2&prefix=%E0%A4%A`, `/${bucket}?list-type=2&prefix=%ZZ`, `/${bucket}/tables/%ZZ/files/1.parquet`]) {
      const answer = await raw(path);
      expect({ path, status: answer.status, code: /<Code>(\w+)<\/Code>/.exec(answer.body)?.[1] }).toEqual({ path, status: 400, code: 'InvalidURI' });
      expect(answer.body).toMatch(/<Message>the (query|path) .* is not valid percent-encoding<\/Message>/);
    }
  });

  it("with the Iceberg catalog mounted, ListObjectsV2 (boto3, two keys a page) names every object below tables/<t>/metadata/ with the size and ETag GET and HEAD answer, and every file the newest metadata reaches (walked with fastavro), also after new records cut another snapshot; delimiters fold metadata/ as S3 would; every error carries x-amz-request-id and x-amz-id-2, a region refusal x-amz-bucket-region, a write says the table is read only", async () => {
    const s3 = { bucket, region: 'us-east-1', credentials: keys };
    const withCatalog = await listeningReader(readerHandler(service, { token: 'http-face-token', s3, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }, s3) }));
    try {
      const script = fileURLToPath(new URL('./s3_listing.py', import.meta.url));
      const listing = async () => {
        const stdout = await new Promise<string>((resolve, reject) => {
          const child = execFile('python3', [script], { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }, (error, out, err) => (error ? reject(new Error(`s3_listing.py failed: ${err || error.message}`)) : resolve(out)));
          child.stdin!.end(JSON.stringify({ endpoint: withCatalog.url, bucket, key: keys.accessKeyId, secret: keys.secretAccessKey, table: table.name }));
        });
        const seen = JSON.parse(stdout) as { answered: { key: string; listed: [number, string]; get: [number, string]; head: [number, string]; sha256: string }[]; pages: number; listedKeys: string[]; reachable: string[]; everything: string[]; tablePrefixes: string[]; top: string[]; errors: Record<string, Refusal>; otherRegion: { status: number; bucketRegion: string; requestId: string } };
        expect(seen.pages).toBe(Math.ceil(seen.listedKeys.length / 2));
        for (const answer of seen.answered) {
          expect(answer.get, answer.key).toEqual(answer.listed);
          expect(answer.head, answer.key).toEqual(answer.listed);
          expect(answer.listed[1], answer.key).toBe(answer.sha256);
        }
        expect(seen.reachable.filter((key) => !seen.listedKeys.includes(key))).toEqual([]);
        return seen;
      };
      type Refusal = { status: number; code: string; said: string; requestId: string; requestIdHeader: string; hostId: string; hostIdHeader: string; bucketRegion?: string };
      const count = (seen: { listedKeys: string[] }, pattern: RegExp) => seen.listedKeys.filter((k) => pattern.test(k)).length;
      const seen = await listing();
      // the metadata before any snapshot, and of the one snapshot the listing cut: its metadata, manifest list and manifests
      expect(count(seen, /\.metadata\.json$/)).toBe(2);
      expect(count(seen, /\/snap-\d+\.avro$/)).toBe(1);
      expect(count(seen, /\/m-[^/]+\.avro$/)).toBeGreaterThan(0);
      expect(seen.reachable.length).toBeGreaterThanOrEqual(3);
      // a listing of the whole bucket names the data files and the metadata of both tables, in key order
      const dataKeys = files.map((f) => `tables/events/files/${f.dataFileId}.parquet`);
      expect(seen.everything.filter((key) => key.startsWith('tables/events/'))).toEqual([...dataKeys].sort().concat(seen.listedKeys));
      expect(seen.everything.some((key) => key.startsWith('tables/events_raw/metadata/'))).toBe(true);
      expect(seen.tablePrefixes).toEqual(['tables/events/files/', 'tables/events/metadata/']);
      expect(seen.top).toEqual(['tables/']);

      for (const [name, refusal] of Object.entries(seen.errors)) {
        expect(refusal.requestIdHeader, name).toMatch(/^[0-9A-F]{16}$/);
        expect(refusal.requestId, name).toBe(refusal.requestIdHeader);
        expect(refusal.hostIdHeader, name).toBeTruthy();
        expect(refusal.hostId, name).toBe(refusal.hostIdHeader);
      }
      expect(seen.errors.wrongSecret).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
      expect(seen.errors.wrongSecret!.said).toContain("check the secret access key (serve's --s3-secret-access-key)");
      expect(seen.errors.wrongKey).toMatchObject({ status: 403, code: 'InvalidAccessKeyId' });
      expect(seen.errors.wrongKey!.said).toContain('the access key id someone-else is not known to this endpoint: sign with the key pair serve was started with (--s3-access-key-id and --s3-secret-access-key');
      expect(seen.errors.missingKey).toMatchObject({ status: 404, code: 'NoSuchKey' });
      expect(seen.errors.missingKey!.said).toContain(`table events has no metadata file 99999-1.metadata.json`);
      expect(seen.errors.write).toMatchObject({ status: 405, code: 'MethodNotAllowed' });
      expect(seen.errors.write!.said).toContain('offsetlake tables are read only');
      expect(seen.otherRegion).toMatchObject({ status: 400, bucketRegion: 'us-east-1' });
      expect(seen.otherRegion.requestId).toMatch(/^[0-9A-F]{16}$/);

      // more records, a new file: the next listing cuts a snapshot and names its files too, each as GET answers it
      await produce(engine.kafka, table.topic, Array.from({ length: 40 }, (_, j) => ({ key: `k${j}`, value: JSON.stringify({ i: 9, j, text: 'x'.repeat(40 + j) }), partition: j % 2, timestamp: Date.UTC(2026, 10, 1, 18) + j })), { transactionalId: `s3-more-${table.topic}` });
      await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
      const after = await listing();
      expect(count(after, /\.metadata\.json$/)).toBe(3);
      expect(count(after, /\/snap-\d+\.avro$/)).toBe(2);
      expect(after.listedKeys.filter((key) => seen.listedKeys.includes(key))).toEqual(seen.listedKeys);
    } finally {
      await withCatalog.stop();
    }
  }, 180_000);

  it('offsetlake serve turns the S3 face on with a key pair from its flags, and says where; without one there is no S3 face; half a pair is refused', async () => {
    const start = async (...flags: string[]) => {
      const child = spawn(process.execPath, ['bin/offsetlake.js', 'serve', '--port', '0', '--token', 't', ...flags], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl }, stdio: ['ignore', 'ignore', 'pipe'] });
      let said = '';
      for await (const chunk of child.stderr!) {
        said += String(chunk);
        if (said.includes('Ctrl-C stops')) break;
      }
      return { child, said, url: /serving (http:\/\/127\.0\.0\.1:\d+)\/tables/.exec(said)![1]! };
    };
    const withFace = await start('--s3-access-key-id', 'cli-key', '--s3-secret-access-key', 'cli-secret', '--s3-bucket', 'lakehouse');
    try {
      expect(withFace.said).toContain(`and S3 at endpoint ${withFace.url} bucket lakehouse (path style, signed with access key cli-key)`);
      const refused = await fetch(`${withFace.url}/lakehouse?list-type=2`);
      expect([refused.status, (await refused.text()).includes('<Code>AccessDenied</Code>')]).toEqual([403, true]);
    } finally {
      withFace.child.kill('SIGTERM');
    }
    const without = await start();
    try {
      expect(without.said).not.toContain('S3 at endpoint');
      expect((await fetch(`${without.url}/offsetlake?list-type=2`)).status).toBe(401);
    } finally {
      without.child.kill('SIGTERM');
    }
    const half = await run(process.execPath, ['bin/offsetlake.js', 'serve', '--token', 't', '--s3-access-key-id', 'k'], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl } }).catch((e: { code: number; stderr: string }) => e);
    expect((half as { code: number }).code).toBe(2);
    expect((half as { stderr: string }).stderr).toContain('the S3 face needs both --s3-access-key-id and --s3-secret-access-key');
  }, 60_000);
});
