/**
 * Issue 46, must fix 1: the page index and footer the catalog keeps are sent as a file's
 * bytes, so a read checks them against the sha256 the indexer took when it built the file
 * before any of their bytes leaves, and `check` compares them with a rebuild. Where the
 * page index lies and what every piece hashes to come from pyarrow and hashlib over the
 * file as `offsetlake rebuild` wrote it before the catalog was changed
 * (test/integration/stored_pieces.py). The forgery is written with the catalog owner's
 * login, as a reader login could write it before migration 15 took that away.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import type { TableRecord } from '../../src/table/record.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { signS3Request } from '../../src/reader/sigv4.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { listeningReader } from '../helpers/reader-server.js';
import { runCli } from '../helpers/cli.js';

const run = promisify(execFile);
const keys = { accessKeyId: 'offsetlake-reader', secretAccessKey: 'pieces-secret' };
const bucket = 'offsetlake';

/** What pyarrow and hashlib say of a file (test/integration/stored_pieces.py). */
interface Pieces {
  size: number;
  sha256: string;
  dataEnd: number;
  footerStart: number;
  firstChunkEnd: number;
  firstChunkPath: string;
  pageIndex: string;
  pageIndexSha256: string;
  tailSha256: string;
  hasColumnIndex: boolean;
}

let engine: Engine;
let table: TableRecord;
let file: CatalogFile;
let folder: string;
let pieces: Pieces;
let rebuiltBytes: Buffer;

beforeAll(async () => {
  engine = await testEngine('stored_pieces');
  const topic = await newTopic(engine, 1, 'stored-pieces');
  const created = await createTableFromTopic(engine, { name: 'forged', topic, format: 'json', settings: resolveSettings({ granularity: 'day' }) });
  await produce(engine.kafka, topic, Array.from({ length: 3_000 }, (_, i) => ({
    key: `k${i}`, value: JSON.stringify({ i, text: 'x'.repeat(i % 50) }), timestamp: Date.UTC(2026, 10, 1, 12) + i,
  })));
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  table = await findTable(engine.catalog, created.name);
  const files = await listFiles(engine.catalog, table.tableId);
  expect(files.map((f) => f.hasGranules)).toEqual([true]);
  file = files[0]!;
  folder = mkdtempSync(join(tmpdir(), 'stored-pieces-'));
  const path = join(folder, 'before.parquet');
  const rebuilt = await cli('rebuild', 'forged', String(file.dataFileId), '-o', path);
  expect(rebuilt.code).toBe(0);
  rebuiltBytes = readFileSync(path);
  const script = fileURLToPath(new URL('./stored_pieces.py', import.meta.url));
  pieces = JSON.parse((await run('python3', [script, path])).stdout) as Pieces;
}, 180_000);

afterAll(async () => {
  if (folder) rmSync(folder, { recursive: true, force: true });
  await engine?.close();
});

function cli(...args: string[]) {
  return runCli(engine.config.databaseUrl, args);
}

/** A serve that never saw the file: nothing of it cached or remembered. */
async function freshServe() {
  const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { records: { ttlMs: 0 } });
  const reader = await listeningReader(readerHandler(service, { token: null, s3: { bucket, credentials: keys } }));
  const get = (headers: Record<string, string> = {}) => fetch(`${reader.url}/tables/forged/files/${file.dataFileId}.parquet`, { headers });
  const s3Get = async (range: string) => {
    const url = new URL(`${reader.url}/${bucket}/tables/forged/files/${file.dataFileId}.parquet`);
    return fetch(url, { headers: { ...(await signS3Request({ method: 'GET', url }, keys)), range } });
  };
  return { service, reader, get, s3Get };
}

const sha256 = (bytes: ArrayBuffer | Uint8Array) => createHash('sha256').update(new Uint8Array(bytes)).digest('hex');

async function storedPieces(): Promise<{ pageIndex: Buffer; tailSha256: Buffer | null }> {
  const row = await engine.catalog.query<{ page_index: Buffer; tail_sha256: Buffer | null }>('SELECT page_index, tail_sha256 FROM offsetlake.data_file WHERE data_file_id = $1', [file.dataFileId]);
  return { pageIndex: row.rows[0]!.page_index, tailSha256: row.rows[0]!.tail_sha256 };
}

describe('the page index and footer the catalog keeps (issue 46)', () => {
  it('the indexer records the sha256 of the page index and footer that pyarrow and hashlib find in the rebuilt file, and serve sends the bytes of the ETag', async () => {
    expect(pieces.hasColumnIndex).toBe(true);
    expect(pieces.footerStart).toBeGreaterThan(pieces.dataEnd);
    const stored = await storedPieces();
    expect(stored.pageIndex.toString('hex')).toBe(pieces.pageIndex);
    expect(stored.tailSha256?.toString('hex')).toBe(pieces.tailSha256);
    expect(file.sha256.toString('hex')).toBe(pieces.sha256);
    const serve = await freshServe();
    try {
      const whole = await serve.get();
      expect(whole.status).toBe(200);
      expect(whole.headers.get('etag')).toBe(`"${pieces.sha256}"`);
      expect(sha256(await whole.arrayBuffer())).toBe(pieces.sha256);
    } finally {
      await serve.reader.stop();
    }
  });

  it('a forged page index is refused by a fresh serve (whole file, a Range over the page index, the footer, the S3 face), counted, while the verified chunks still go; check exits 1 naming the file and the piece', async () => {
    const original = (await storedPieces()).pageIndex;
    const forged = Buffer.from(original);
    // one byte of a ColumnIndex bound changed: the same length, only its bytes differ
    forged[Math.floor(forged.byteLength / 2)]! ^= 0x01;
    await engine.catalog.query('UPDATE offsetlake.data_file SET page_index = $2 WHERE data_file_id = $1', [file.dataFileId, forged]);
    const serve = await freshServe();
    try {
      const refusal = new RegExp(`^file ${file.dataFileId}: its page index and footer in the catalog \\(bytes ${pieces.dataEnd} to ${pieces.size}\\) hash to sha256 [0-9a-f]{64}, not ${pieces.tailSha256} as the file built from Kafka did; the bytes were not served`);
      const whole = await serve.get();
      expect(whole.status).toBe(500);
      expect(((await whole.json()) as { error: string }).error).toMatch(refusal);
      const overIndex = await serve.get({ range: `bytes=${pieces.dataEnd - 10}-${pieces.footerStart + 10}` });
      expect(overIndex.status).toBe(500);
      expect(((await overIndex.json()) as { error: string }).error).toMatch(refusal);
      const footer = await serve.get({ range: 'bytes=-8' });
      expect(footer.status).toBe(500);
      await footer.arrayBuffer();
      const s3 = await serve.s3Get(`bytes=${pieces.dataEnd}-${pieces.footerStart - 1}`);
      expect(s3.status).toBe(500);
      const xml = await s3.text();
      expect(xml).toContain('<Code>InternalError</Code>');
      expect(xml).toContain(`not ${pieces.tailSha256} as the file built from Kafka did`);
      expect(serve.service.metrics.storedPieceMismatches).toBe(4);
      // the column chunks come from Kafka, each checked against its own sha256: they still go
      const chunk = await serve.get({ range: `bytes=0-${pieces.firstChunkEnd - 1}` });
      expect(chunk.status).toBe(206);
      expect(Buffer.from(await chunk.arrayBuffer()).equals(rebuiltBytes.subarray(0, pieces.firstChunkEnd))).toBe(true);

      const check = await cli('check', 'forged');
      expect(check.code).toBe(1);
      expect(check.stderr).toContain(
        `forged file ${file.dataFileId} (partition 0, offsets [${file.startOffset}, ${file.endOffset})) rebuilds byte for byte, but pieces the catalog keeps to serve it are not the rebuilt file's: `
        + `page index: the catalog's ${forged.byteLength} bytes are not the rebuilt file's ${pieces.footerStart - pieces.dataEnd} (bytes ${pieces.dataEnd} to ${pieces.footerStart})`,
      );
      expect(check.stdout).toBe("1 files checked: 0 rebuilt byte for byte with their statistics and stored pieces, 0 cannot be rebuilt, 1 with stored pieces that are not the file's (named above; reads of them are refused)\n");
      const json = JSON.parse((await cli('check', 'forged', '--json')).stdout) as { wrongPieces: { file: string; pieces: string[] }[] };
      expect(json.wrongPieces.map((c) => [c.file, c.pieces.length])).toEqual([[String(file.dataFileId), 1]]);
    } finally {
      await serve.reader.stop();
      await engine.catalog.query('UPDATE offsetlake.data_file SET page_index = $2 WHERE data_file_id = $1', [file.dataFileId, original]);
    }
    expect((await cli('check', 'forged')).code).toBe(0);
  });

  it('a forged checksum of a chunk is named by check too', async () => {
    const granule = await engine.catalog.query<{ chunk_sha256: Buffer }>('SELECT chunk_sha256 FROM offsetlake.granule WHERE data_file_id = $1 AND row_group = 0', [file.dataFileId]);
    const original = granule.rows[0]!.chunk_sha256;
    const forged = Buffer.from(original);
    forged.fill(7, 0, 32);
    await engine.catalog.query('UPDATE offsetlake.granule SET chunk_sha256 = $2 WHERE data_file_id = $1 AND row_group = 0', [file.dataFileId, forged]);
    try {
      const check = await cli('check', 'forged');
      expect(check.code).toBe(1);
      const chunk = sha256(rebuiltBytes.subarray(4, pieces.firstChunkEnd));
      expect(check.stderr).toContain(`granule 0, column ${pieces.firstChunkPath}: chunk sha256 ${'07'.repeat(32)} in the catalog, ${chunk} rebuilt`);
    } finally {
      await engine.catalog.query('UPDATE offsetlake.granule SET chunk_sha256 = $2 WHERE data_file_id = $1 AND row_group = 0', [file.dataFileId, original]);
    }
  });

  it('a page index stored without its sha256 (before migration 15) is never sent: the file is served whole, rebuilt and checked, and the rebuild records the page index and its sha256 again', async () => {
    const forged = Buffer.from((await storedPieces()).pageIndex);
    forged[0]! ^= 0x01;
    await engine.catalog.query('UPDATE offsetlake.data_file SET page_index = $2, tail_sha256 = NULL WHERE data_file_id = $1', [file.dataFileId, forged]);
    // and a granule past the file's last row group, as a reader login could insert one
    await engine.catalog.query('INSERT INTO offsetlake.granule (data_file_id, row_group, start_offset, end_offset, row_count, kafka_bytes, chunk_sha256) VALUES ($1, 99, 0, 1, 1, 1, $2)', [file.dataFileId, Buffer.alloc(32)]);
    const rowGroups = (await engine.catalog.query<{ n: number }>('SELECT count(*)::int AS n FROM offsetlake.granule WHERE data_file_id = $1', [file.dataFileId])).rows[0]!.n - 1;
    const serve = await freshServe();
    try {
      const whole = await serve.get();
      expect(whole.status).toBe(200);
      expect(sha256(await whole.arrayBuffer())).toBe(pieces.sha256);
      expect(serve.service.metrics.rebuilds).toBe(1);
    } finally {
      await serve.reader.stop();
    }
    const stored = await storedPieces();
    expect([stored.pageIndex.toString('hex'), stored.tailSha256?.toString('hex')]).toEqual([pieces.pageIndex, pieces.tailSha256]);
    const granules = await engine.catalog.query<{ row_group: number }>('SELECT row_group FROM offsetlake.granule WHERE data_file_id = $1 ORDER BY row_group', [file.dataFileId]);
    expect(granules.rows.map((row) => row.row_group)).toEqual(Array.from({ length: rowGroups }, (_, g) => g));
    expect((await cli('check', 'forged')).code).toBe(0);
  });

  it('check names a forged, a missing and an extra index entry of a file (query prunes by them), and passes once they are the rows\' again', async () => {
    const ddl = await cli('sql', 'CREATE INDEX by_key ON forged (_key) USING POSTINGS');
    expect(ddl.code, ddl.stderr).toBe(0);
    const run = await cli('run', '--once'); // drives the index to active: the file's entries, from its rebuilt rows
    expect(run.code, run.stderr).toBe(0);
    expect((await cli('check', 'forged')).code).toBe(0);
    const entries = await engine.catalog.query<{ index_id: string; scope: string; part: number; payload: Buffer }>(
      'SELECT index_id::text, scope, part, payload FROM offsetlake.index_entry WHERE data_file_id = $1 ORDER BY part', [file.dataFileId]);
    expect(entries.rows.length).toBeGreaterThan(1);
    const [first, second] = entries.rows as [typeof entries.rows[0], typeof entries.rows[0]];
    const forged = Buffer.from(first.payload);
    forged[forged.length - 1]! ^= 0x01;
    await engine.catalog.query('UPDATE offsetlake.index_entry SET payload = $2 WHERE data_file_id = $1 AND index_id = $3 AND scope = $4 AND part = $5', [file.dataFileId, forged, first.index_id, first.scope, first.part]);
    await engine.catalog.query('DELETE FROM offsetlake.index_entry WHERE data_file_id = $1 AND index_id = $2 AND scope = $3 AND part = $4', [file.dataFileId, second.index_id, second.scope, second.part]);
    await engine.catalog.query('INSERT INTO offsetlake.index_entry (index_id, scope, part, data_file_id, payload) VALUES ($2, $3, 999, $1, $4)', [file.dataFileId, first.index_id, first.scope, Buffer.from([1, 2, 3])]);
    try {
      const check = await cli('check', 'forged');
      expect(check.code).toBe(1);
      expect(check.stderr).toContain(`index by_key (${first.scope}) part ${first.part}: the catalog's ${forged.length} bytes are not the ${forged.length} the rebuilt rows give`);
      expect(check.stderr).toContain(`index by_key (${second.scope}) part ${second.part}: the rebuilt rows give it, but the catalog has no such entry`);
      expect(check.stderr).toContain(`index by_key (${first.scope}) part 999: in the catalog, but the rebuilt rows give no such entry`);
      expect(check.stdout).toBe("1 files checked: 0 rebuilt byte for byte with their statistics and stored pieces, 0 cannot be rebuilt, 1 with index entries that are not the file's (named above: query may skip rows they hold)\n");
      const json = JSON.parse((await cli('check', 'forged', '--json')).stdout) as { wrongIndexEntries: { file: string; indexEntries: string[] }[] };
      expect(json.wrongIndexEntries.map((c) => [c.file, c.indexEntries.length])).toEqual([[String(file.dataFileId), 3]]);
    } finally {
      await engine.catalog.query('UPDATE offsetlake.index_entry SET payload = $2 WHERE data_file_id = $1 AND index_id = $3 AND scope = $4 AND part = $5', [file.dataFileId, first.payload, first.index_id, first.scope, first.part]);
      await engine.catalog.query('INSERT INTO offsetlake.index_entry (index_id, scope, part, data_file_id, payload) VALUES ($2, $3, $4, $1, $5)', [file.dataFileId, second.index_id, second.scope, second.part, second.payload]);
      await engine.catalog.query('DELETE FROM offsetlake.index_entry WHERE data_file_id = $1 AND part = 999', [file.dataFileId]);
    }
    expect((await cli('check', 'forged')).code).toBe(0);
  });
});
