/**
 * Trino 476 (test/helpers/trino.ts: from Maven Central, one small node on Java 24+) reads the
 * engine tables (test/helpers/engine-tables.ts: json, avro, protobuf and json-schema tables
 * with DEFAULT settings, produced by confluent-kafka, served with the S3 face and the Iceberg
 * REST catalog) through serve's catalog, configured by the Trino catalog file of
 * docs/engines.md exactly as written (OAuth2 with the token, native S3 at the S3 face, the
 * face's static keys; serve's address the one string changed). `SELECT *` of each table
 * must equal what a read_committed consumer and fastavro / protobuf / json decode
 * (test/integration/trino_rows.py turns Trino's JSON into test/helpers/engine_rows.py's
 * canonical form and compares); when it does not, each column is read alone and the test
 * names every column Trino cannot read, in Trino's words. Never a skip: a column Trino cannot
 * read fails here. Also: a field of a struct in a struct read directly, a filter inside one
 * hour, the metadata tables against the catalog, time travel by version and by time to the
 * older snapshot, and writes refused.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { engineT0, engineTableNames, startEngineTables, type EngineFormat, type EngineTables } from '../helpers/engine-tables.js';
import { testedBlocks } from '../helpers/docs-blocks.js';
import { startTrino, TrinoQueryError, type Trino, type TrinoResult } from '../helpers/trino.js';

const hour = 3_600_000;
const tables = Object.entries(engineTableNames) as [EngineFormat, string][];
const script = fileURLToPath(new URL('./trino_rows.py', import.meta.url));

let fixture: EngineTables;
let trino: Trino | undefined;

/** A snippet of docs/engines.md as run here: serve's address made the fixture's, and `clicks` its json table. */
function asRun(name: string): string {
  return testedBlocks('docs/engines.md').get(name)!.code
    .replaceAll('127.0.0.1:8642', new URL(fixture.s3.endpoint).host)
    .replaceAll('lake.main.clicks', `lake.main.${engineTableNames.json}`);
}

beforeAll(async () => {
  const started = Date.now();
  // the token and key pair docs/engines.md starts serve with, so that its catalog file runs as written
  fixture = await startEngineTables({ token: 'secret', accessKeyId: 'reader', secretAccessKey: 's3cret' });
  trino = await startTrino({ catalogs: { lake: asRun('trino') } });
  process.stderr.write(`trino: fixture ${Date.now() - started - trino.startMs} ms, Trino started in ${trino.startMs} ms on ${trino.java}\n`);
}, 900_000);

afterAll(async () => {
  await trino?.stop();
  await fixture?.stop();
});

interface Compared {
  rows: number;
  expectedRows: number;
  problems: Record<string, unknown>;
}

/** Trino's rows against the expected table (trino_rows.py): the problems, {} when equal. */
function compared(table: string, result: TrinoResult, options: { only?: string[]; window?: { from: number; to: number }; before?: number } = {}): Promise<Compared> {
  const job = { expectedFile: fixture.expectedFile, table, columns: result.columns, rows: result.rows, ...options };
  // integers past 2^53 go back to Python as the digits Trino sent
  const text = JSON.stringify(job, (_key, v: unknown) => (typeof v === 'bigint' ? (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(v.toString()) : v));
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [script], { maxBuffer: 256 * 1024 * 1024, timeout: 120_000 }, (error, out, err) =>
      (error ? reject(new Error(`trino_rows.py failed: ${err.slice(-4000) || error.message}`)) : resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Compared)));
    child.stdin!.end(text);
  });
}

/** The query's rows, or Trino's refusal in its own words. */
async function attempt(sql: string): Promise<TrinoResult | { error: string }> {
  try {
    return await trino!.query(sql);
  } catch (error) {
    if (error instanceof TrinoQueryError) return { error: error.message };
    throw error;
  }
}

async function expectedColumns(table: string): Promise<string[]> {
  const { readFile } = await import('node:fs/promises');
  return (JSON.parse(await readFile(fixture.expectedFile, 'utf8')) as { tables: Record<string, { columns: string[] }> }).tables[table]!.columns;
}

/** `SELECT *` compared; when it fails or differs, every column alone, each with Trino's error or its first difference. */
async function selectAll(table: string): Promise<Record<string, unknown>> {
  const all = await attempt(`SELECT * FROM lake.main.${table}`);
  if (!('error' in all)) {
    const { problems } = await compared(table, all);
    if (Object.keys(problems).length === 0) return {};
  }
  const columns: Record<string, unknown> = { 'SELECT *': 'error' in all ? all.error : 'rows differ' };
  for (const column of await expectedColumns(table)) {
    if (column === '_kafka_partition' || column === '_offset') continue;
    const read = await attempt(`SELECT _kafka_partition, _offset, "${column}" FROM lake.main.${table}`);
    if ('error' in read) columns[column] = read.error;
    else {
      const problem = (await compared(table, read, { only: ['_kafka_partition', '_offset', column] })).problems;
      if (Object.keys(problem).length > 0) columns[column] = problem;
    }
  }
  return columns;
}

describe('Trino 476 through the Iceberg REST catalog, configured as docs/engines.md says', () => {
  it('sees the namespace and the tables, and runs the query of docs/engines.md', async () => {
    expect((await trino!.query('SHOW SCHEMAS FROM lake')).rows.flat()).toContain('main');
    expect((await trino!.query('SHOW TABLES FROM lake.main')).rows.flat().sort()).toEqual(Object.values(engineTableNames).sort());
    const read = await attempt(asRun('trino-query'));
    const rows = 'error' in read ? read : read.objects;
    const expected = (await compared(engineTableNames.json, { columns: [], rows: [], objects: [], stats: { processedRows: 0, processedBytes: 0 } })).expectedRows;
    expect(rows).toEqual([{ n: expected }]);
  });

  for (const [format, table] of tables) {
    describe(`${format} (${table})`, () => {
      it('SELECT * equals what a read_committed consumer and the independent decoders read: every column Trino cannot read is named', async () => {
        expect(await selectAll(table)).toEqual({});
      });

      if (format !== 'json') {
        it('reads a field of a struct in a struct directly (addr.geo.lat)', async () => {
          const read = await attempt(`SELECT _kafka_partition, _offset, addr.geo.lat AS "addr.geo.lat" FROM lake.main.${table}`);
          expect('error' in read ? read : (await compared(table, read, { only: ['addr.geo.lat'] })).problems).toEqual({});
        });
      }

      it("a filter inside one hour reads the rows of that window, every column as expected, and scans that hour's files only", async () => {
        const { from, to } = fixture.window;
        const stamp = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC');
        const read = await attempt(`SELECT * FROM lake.main.${table} WHERE _timestamp >= TIMESTAMP '${stamp(from)}' AND _timestamp < TIMESTAMP '${stamp(to)}'`);
        if ('error' in read) expect(read).toEqual({ rows: 'read' });
        else {
          const answer = await compared(table, read, { window: fixture.window });
          expect(answer.expectedRows).toBeGreaterThan(0);
          expect(answer.problems).toEqual({});
          // the window lies in the third hour: the hour partition leaves every other hour's files out
          const hourStart = engineT0 + Math.floor((from - engineT0) / hour) * hour;
          const inHour = (await compared(table, { ...read, rows: [] }, { window: { from: hourStart, to: hourStart + hour } })).expectedRows;
          expect(read.stats.processedRows).toBeGreaterThanOrEqual(answer.expectedRows);
          expect(read.stats.processedRows).toBeLessThanOrEqual(inHour);
        }
      });

      it('metadata tables: $files lists the catalog files with their record counts and sizes, $partitions the hours, $snapshots and $history the kept snapshots', async () => {
        const record = await findTable(fixture.engine.catalog, table);
        const files = await listFiles(fixture.engine.catalog, record.tableId);
        const listed = (await trino!.query(`SELECT file_path, record_count, file_size_in_bytes FROM lake.main."${table}$files"`)).rows;
        expect(listed.map(([path, count, size]) => [path, Number(count), Number(size)]).sort()).toEqual(
          files.map((f) => [`s3://offsetlake/tables/${table}/files/${f.dataFileId}.parquet`, Number(f.recordCount), Number(f.fileSizeBytes)]).sort());
        const partitions = (await trino!.query(`SELECT record_count, file_count FROM lake.main."${table}$partitions"`)).objects;
        expect(partitions.length).toBe(4); // hours 0 to 3
        expect(partitions.reduce((sum, p) => sum + Number(p.record_count), 0)).toBe(files.reduce((sum, f) => sum + Number(f.recordCount), 0));
        expect(partitions.reduce((sum, p) => sum + Number(p.file_count), 0)).toBe(files.length);
        const kept = await fixture.engine.catalog.query<{ snapshot_id: string }>(
          'SELECT snapshot_id::text FROM offsetlake.iceberg_snapshot WHERE table_id = $1 AND dropped_sequence IS NULL ORDER BY sequence_number', [record.tableId]);
        expect(kept.rows.length).toBe(2);
        const snapshots = (await trino!.query(`SELECT snapshot_id, operation FROM lake.main."${table}$snapshots" ORDER BY committed_at`)).rows;
        expect(snapshots.map(([id, operation]) => [String(id), operation])).toEqual(kept.rows.map((r) => [r.snapshot_id, 'append']));
        const history = (await trino!.query(`SELECT snapshot_id, is_current_ancestor FROM lake.main."${table}$history" ORDER BY made_current_at`)).rows;
        expect(history.map(([id, current]) => [String(id), current])).toEqual(kept.rows.map((r) => [r.snapshot_id, true]));
      });

      it('time travel: FOR VERSION AS OF and FOR TIMESTAMP AS OF the older snapshot read its rows (hours 0 and 1), every column as expected', async () => {
        const [[oldest, committed]] = (await trino!.query(`SELECT snapshot_id, CAST(committed_at AS varchar) FROM lake.main."${table}$snapshots" ORDER BY committed_at LIMIT 1`)).rows as [[bigint | number, string]];
        for (const sql of [`SELECT * FROM lake.main.${table} FOR VERSION AS OF ${oldest}`, `SELECT * FROM lake.main.${table} FOR TIMESTAMP AS OF TIMESTAMP '${committed}'`]) {
          const read = await attempt(sql);
          if ('error' in read) expect({ sql, ...read }).toEqual({ sql, rows: 'read' });
          else {
            // the first snapshot holds every committed record of hours 0 and 1, and nothing later
            const answer = await compared(table, read, { before: engineT0 + 2 * hour });
            expect({ sql, ...answer }).toEqual({ sql, rows: answer.expectedRows, expectedRows: answer.expectedRows, problems: {} });
          }
        }
      });
    });
  }

  it('writes are refused: DDL by the catalog client (the catalog names no write endpoint), data writes at the S3 face saying it is read only; nothing is written', async () => {
    const table = `lake.main.${engineTableNames.json}`;
    const before = (await trino!.query(`SELECT count(*) AS n FROM ${table}`)).objects;
    const refusals: Record<string, string> = {};
    for (const sql of [
      'CREATE SCHEMA lake.other', 'CREATE TABLE lake.main.made (a integer)', `DROP TABLE ${table}`, `ALTER TABLE ${table} ADD COLUMN z integer`,
      // written without reading the table first: a data file to the S3 face, then a commit
      `INSERT INTO ${table} (_kafka_partition, _offset, _timestamp, _headers) VALUES (0, 999999, TIMESTAMP '2026-11-02 09:00:00.000000 UTC', CAST(ARRAY[] AS array(row(key varchar, value varbinary))))`,
      // every file at once: a commit alone
      `DELETE FROM ${table}`,
    ]) {
      const read = await attempt(sql);
      refusals[sql] = 'error' in read ? read.error : 'ran';
    }
    for (const [sql, refusal] of Object.entries(refusals)) {
      // DDL: Trino's Iceberg client refuses what `endpoints` does not name, before sending it;
      // INSERT's data file and DELETE's manifest reach the S3 face, whose refusal in our words is the error's cause
      if (/^(INSERT|DELETE)/.test(sql)) expect(refusal, sql).toMatch(/refused: offsetlake tables are read only/);
      else expect(refusal, sql).toMatch(/Server does not support endpoint/);
    }
    expect((await trino!.query(`SELECT count(*) AS n FROM ${table}`)).objects).toEqual(before);
    expect((await trino!.query('SHOW TABLES FROM lake.main')).rows.flat().sort()).toEqual(Object.values(engineTableNames).sort());
  });
});
