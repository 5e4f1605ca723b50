/**
 * docs/engines.md, "Reading from your engine": every snippet marked `<!-- tested: NAME -->` is run
 * as written, with two strings changed: serve's address (127.0.0.1:8642) and the
 * catalog's connection string become the test's. Each must count the rows a
 * read_committed consumer we did not write sees (the Iceberg snippets read through serve's
 * Iceberg REST catalog, which hands out the S3 face's settings).
 */
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { findTable } from '../../src/catalog/tables.js';
import { libpqConnectionString } from '../../src/cli/attach.js';
import { indexedRowsIndependently } from '../helpers/independent-kafka.js';
import { DuckdbSession } from '../helpers/duckdb-session.js';
import { asStackReader } from '../helpers/database.js';
import { testedBlocks } from '../helpers/docs-blocks.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';

const snippets = () => testedBlocks('docs/engines.md');

let engine: Engine;
let reader: ListeningReader | undefined;
let address: string;
let expected: number;

beforeAll(async () => {
  engine = await testEngine('engines_doc');
  const topic = await newTopic(engine, 2, 'engines-doc');
  for (const [name, format] of [['clicks', 'json'], ['clicks_raw', 'raw']] as const) {
    await createTableFromTopic(engine, { name, topic, format, settings: resolveSettings({ file_bytes: '3000' }) });
  }
  const now = Date.now();
  await produce(engine.kafka, topic, Array.from({ length: 90 }, (_, i) => ({ key: `u${i % 9}`, value: JSON.stringify({ page: `/p/${i % 4}`, ms: i }), partition: i % 2, timestamp: now - 60_000 + i })));
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  const table = await findTable(engine.catalog, 'clicks');
  expected = (await indexedRowsIndependently(engine, table)).rows;
  const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka));
  // as docs/engines.md starts it: token "secret", S3 key pair reader / s3cret, bucket offsetlake
  reader = await listeningReader(readerHandler(service, { token: 'secret', s3: { bucket: 'offsetlake', credentials: { accessKeyId: 'reader', secretAccessKey: 's3cret' } }, catalog: new IcebergCatalog(service, {}, { bucket: 'offsetlake', region: 'us-east-1', credentials: { accessKeyId: 'reader', secretAccessKey: 's3cret' } }) }));
  address = `127.0.0.1:${reader.port}`;
}, 120_000);

afterAll(async () => {
  await reader?.stop();
  await engine?.close();
});

/** The snippet with serve's address and the catalog's connection string made the test's. */
function asRun(code: string): string {
  return code
    .replaceAll('127.0.0.1:8642', address)
    .replaceAll('host=127.0.0.1 port=25432 dbname=offsetlake user=offsetlake_reader password=READER_PASSWORD', libpqConnectionString(asStackReader(engine.config.databaseUrl)));
}

function python(code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-'], { timeout: 120_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${stderr || error.message}\n${code}`)) : resolve(stdout.trim())));
    child.stdin!.end(code);
  });
}

describe('docs/engines.md "Reading from your engine", as written', () => {
  it('marks the snippets of every engine it documents', () => {
    // trino and trino-query are run by test/integration/trino.test.ts, which starts the one Trino node
    expect([...snippets().keys()].sort()).toEqual(['datafusion', 'duckdb-ducklake-http', 'duckdb-ducklake-s3', 'duckdb-iceberg', 'duckdb-s3', 'polars', 'pyarrow', 'pyiceberg', 'trino', 'trino-query']);
    expect(expected).toBe(90);
  });

  for (const name of ['duckdb-ducklake-http', 'duckdb-ducklake-s3', 'duckdb-s3', 'duckdb-iceberg']) {
    it(`${name}: a new DuckDB session (extensions from PyPI) runs the SQL and counts the committed rows`, async () => {
      const session = await DuckdbSession.open();
      try {
        expect(await session.row(asRun(snippets().get(name)!.code))).toEqual({ n: expected });
      } finally {
        await session.close();
      }
    });
  }

  for (const name of ['polars', 'pyarrow', 'datafusion', 'pyiceberg']) {
    it(`${name}: the Python runs and prints the count of committed rows`, async () => {
      expect(await python(asRun(snippets().get(name)!.code))).toBe(String(expected));
    });
  }
});
