/**
 * Every engine reads every column (issue 47): pyiceberg 0.12, DuckDB 1.4.4's iceberg
 * extension, polars (`scan_iceberg`), Daft (`daft.read_iceberg`) and Spark 4.1 (one session)
 * read the engine tables (test/helpers/engine-tables.ts: json, avro, protobuf and json-schema
 * tables with DEFAULT settings, produced by confluent-kafka, served with the S3 face and the
 * Iceberg REST catalog) through the catalog, each with its own reader
 * (test/integration/iceberg_engines.py; Spark's in the tests' one Spark, test/helpers/iceberg-spark.ts). `SELECT *` must equal what a read_committed consumer
 * and fastavro / protobuf / json decode (types normalized, never values); when it does not,
 * each column is read alone and the test names every column the engine cannot read, with the
 * engine's own message. A column an engine cannot read fails here, never a skip. Also: a
 * field of a struct in a struct read directly (`addr.geo.lat`), a filter inside one hour,
 * the metadata tables (files, snapshots) and time travel to the older snapshot where the
 * engine has them.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { engineTableNames, startEngineTables, type EngineFormat, type EngineTables } from '../helpers/engine-tables.js';
import { sparkAnswer, startSpark } from '../helpers/iceberg-spark.js';
import { daftPython } from '../helpers/project-python.js';

const engines = ['pyiceberg', 'duckdb', 'polars', 'daft', 'spark'] as const;
type EngineName = (typeof engines)[number];

interface Failed {
  error: string;
  trace?: string;
}
type Problems = Record<string, string | unknown>;
interface TableAnswer {
  select: ({ rows: number; problems: Problems } & Partial<Failed>) | Failed;
  columns?: Record<string, string | Problems>;
  nested?: { rows: number; problems: Problems } | Failed;
  window: { rows: number; expectedRows: number; problems: Problems } | Failed;
  metadata?: { files: string[]; snapshots: (number | string)[] } | Failed;
  timeTravel: { snapshot: number; rows: number; expectedRows: number } | Failed;
}
type EngineAnswer = Record<string, TableAnswer> | Failed;

const script = fileURLToPath(new URL('./iceberg_engines.py', import.meta.url));

function runEngines(python: string, names: readonly EngineName[], job: unknown): Promise<Record<string, EngineAnswer>> {
  return new Promise((resolve) => {
    const child = execFile(python, [script, names.join(',')], { maxBuffer: 256 * 1024 * 1024, timeout: 600_000 }, (error, out, err) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(last) as Record<string, EngineAnswer>);
      } catch {
        // the process itself failed: every engine it ran fails with what it said
        resolve(Object.fromEntries(names.map((name) => [name, { error: `iceberg_engines.py ${name} failed: ${err.slice(-4000) || error?.message}` }])));
      }
    });
    child.stdin!.end(JSON.stringify(job));
  });
}

let fixture: EngineTables;
const answers = {} as Record<EngineName, EngineAnswer>;
const tables = Object.entries(engineTableNames) as [EngineFormat, string][];

/** Spark's answer, from the tests' one Spark (test/helpers/iceberg-spark.ts), or what stopped it. */
async function sparkEngine(job: { catalogUri: string; token: string }): Promise<Record<string, EngineAnswer>> {
  try {
    const answer = await sparkAnswer<Record<string, EngineAnswer> | Failed>(script, 'spark', { ...job, uri: job.catalogUri }, 600_000);
    return failed(answer) ? { spark: answer } : answer;
  } catch (error) {
    return { spark: { error: `Spark did not answer: ${(error as Error).message}` } };
  }
}

beforeAll(async () => {
  startSpark().catch(() => {}); // Spark starts (if no other test file has) while the tables are made; awaited below
  const started = Date.now();
  fixture = await startEngineTables();
  const fixtureMs = Date.now() - started;
  const job = { catalogUri: fixture.catalogUri, token: fixture.token, s3: fixture.s3, tables: fixture.tables, expectedFile: fixture.expectedFile, window: fixture.window };
  const [readers, daft, spark] = await Promise.all([
    runEngines('python3', ['pyiceberg', 'duckdb', 'polars'], job),
    runEngines(daftPython(), ['daft'], job),
    sparkEngine(job),
  ]);
  Object.assign(answers, readers, daft, spark);
  process.stderr.write(`iceberg-engines: fixture ${fixtureMs} ms, engines ${Date.now() - started - fixtureMs} ms\n`);
}, 900_000);

afterAll(async () => {
  await fixture?.stop();
});

function answerOf(engine: EngineName): Record<string, TableAnswer> {
  const answer = answers[engine];
  expect((answer as Failed | undefined)?.error, `${engine} did not start: ${(answer as Failed | undefined)?.trace ?? ''}`).toBeUndefined();
  return answer as Record<string, TableAnswer>;
}

/**
 * The columns where an engine's known bug shows on the engine tables (iceberg_engines.py
 * KNOWN_BUGS): pyiceberg 0.12 reads a null list of structs, or a null map, as []
 * (apache/iceberg-python issue 3833) on the error rows and tombstones. The json table has
 * no such column. When pyiceberg is fixed, these lists become empty and the test says so.
 */
const knownBugColumns: Partial<Record<EngineName, Partial<Record<EngineFormat, string[]>>>> = {
  pyiceberg: {
    avro: ['attrs', 'item_by_name', 'items'],
    protobuf: ['attrs', 'item_by_id', 'items', 'matrix'],
    'json-schema': ['attrs', 'items'],
  },
};

const failed = (x: unknown): x is Failed => typeof x === 'object' && x !== null && 'error' in x;

describe('every engine reads every column of the engine tables through the Iceberg catalog', () => {
  it('the engine tables hold what the engines are checked on: rows in four hours per table, error rows, tombstones, and an older snapshot with fewer rows', () => {
    const expected = JSON.parse(readFileSync(fixture.expectedFile, 'utf8')) as { tables: Record<string, { rows: Record<string, unknown>[]; firstSnapshotRows: number; columns: string[] }> };
    for (const [format, table] of tables) {
      const { rows, firstSnapshotRows, columns } = expected.tables[table]!;
      expect(new Set(rows.map((r) => String(r._timestamp).slice(0, 13))).size, table).toBe(4);
      expect(rows.filter((r) => r._error !== null).length, table).toBeGreaterThan(0);
      if (format !== 'json') expect(rows.filter((r) => r._error === null && r._value === null && columns.slice(7).every((c) => r[c] === null)).length, `${table}: tombstones`).toBeGreaterThan(0);
      expect(firstSnapshotRows, table).toBeGreaterThan(0);
      expect(firstSnapshotRows, table).toBeLessThan(rows.length);
    }
  });

  for (const engine of engines) {
    for (const [format, table] of tables) {
      it(`${engine}: SELECT * of the ${format} table equals the read_committed dump decoded independently, every column`, () => {
        const seen = answerOf(engine)[table]!;
        if (failed(seen.select)) {
          // which columns the engine cannot read, each alone, in its own words
          const columns = Object.entries(seen.columns ?? {}).filter(([, said]) => said !== 'ok').map(([column, said]) => `  ${column}: ${typeof said === 'string' ? said : JSON.stringify(said)}`);
          expect.fail(`${engine} cannot read ${table}: ${seen.select.error}\ncolumns it cannot read alone (${columns.length}):\n${columns.join('\n')}`);
        }
        // an engine's known bug (iceberg_engines.py KNOWN_BUGS, docs/engines.md) is held to exactly that bug, and noticed when fixed
        const known = Object.entries(seen.select.problems).filter(([column]) => column.includes(': known '));
        expect(Object.fromEntries(Object.entries(seen.select.problems).filter(([column]) => !column.includes(': known ')))).toEqual({});
        expect(known.map(([column]) => column.split(': known ')[0]).sort(), `${engine} ${table}: the columns its known bug reaches`).toEqual(knownBugColumns[engine]?.[format] ?? []);
        expect(seen.select.rows).toBeGreaterThan(100);
      });
    }

    it(`${engine}: a field of a struct in a struct read directly (addr.geo.lat), a filter inside one hour, the metadata tables and time travel to the older snapshot`, async () => {
      const answer = answerOf(engine);
      for (const [format, table] of tables) {
        const seen = answer[table]!;
        if (format !== 'json') {
          expect.soft(seen.nested, `${engine} ${table} addr.geo.lat`).toMatchObject({ problems: {} });
        }
        expect.soft(seen.window, `${engine} ${table}: the rows of the window inside the third hour`).toMatchObject({ problems: {} });
        if (!failed(seen.window)) expect.soft(seen.window.expectedRows).toBeGreaterThan(0);
        if (seen.metadata !== undefined) {
          const files = await listFiles(fixture.engine.catalog, (await findTable(fixture.engine.catalog, table)).tableId);
          expect.soft(seen.metadata, `${engine} ${table}: the files and snapshots tables`).toEqual({
            files: files.map((f) => `s3://${fixture.s3.bucket}/tables/${table}/files/${f.dataFileId}.parquet`).sort(),
            snapshots: [expect.anything(), expect.anything()],
          });
        }
        expect.soft(failed(seen.timeTravel) ? seen.timeTravel : seen.timeTravel.rows, `${engine} ${table}: the rows of the older snapshot`).toBe(failed(seen.timeTravel) ? undefined : seen.timeTravel.expectedRows);
        if (!failed(seen.timeTravel)) expect.soft(seen.timeTravel.expectedRows).toBeGreaterThan(50);
      }
    });
  }
});
