/**
 * Which engine reads which page compression (docs/operations.md, "Which engine reads which
 * compression"): one table per codec a table may choose, the same committed records in
 * each, read whole through serve's Iceberg REST catalog and S3 face by engines no one here
 * wrote (test/integration/codec_engines.py): pyiceberg, polars, DuckDB 1.4.4, pyarrow,
 * DataFusion, Spark 4.1 with Iceberg's runtime and Daft (in its own environment); and Trino
 * 476 (test/helpers/trino.ts), configured by docs/engines.md's Trino catalog file as
 * written (serve's address the one string changed). Each must count the rows, and sum the
 * offsets and the value lengths, that a read_committed consumer we did not write reads
 * from the topic, or fail, with one of the messages the table quotes in that cell; what
 * each did must be what the table in docs/operations.md says, and every engine that table
 * names must read the default.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce } from '../../src/kafka/produce.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { readerHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import type { Engine } from '../../src/runtime/engine.js';
import { type Compression, compressions, defaultSettings, resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { encoderForCompression } from '../../src/parquet/index.js';
import { testedBlocks } from '../helpers/docs-blocks.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { sparkAnswer, startSpark } from '../helpers/iceberg-spark.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { daftPython } from '../helpers/project-python.js';
import { listeningReader, type ListeningReader } from '../helpers/reader-server.js';
import { startTrino, TrinoQueryError, type Trino } from '../helpers/trino.js';

// the token and key pair of docs/engines.md's Trino catalog file, so that it runs as written
const keys = { accessKeyId: 'reader', secretAccessKey: 's3cret' };
const bucket = 'offsetlake';
const token = 'secret';
const t0 = Date.UTC(2026, 10, 2, 9, 0);

/** Each engine this test runs, by the name its row in docs/operations.md's table starts with. */
const engines = { pyarrow: 'pyarrow', duckdb: 'DuckDB', polars: 'polars', datafusion: 'DataFusion', spark: 'Spark', pyiceberg: 'pyiceberg', trino: 'Trino', daft: 'Daft' } as const;
type EngineName = keyof typeof engines;
type Answer = [number, number, number] | { error: string; trace?: string };

let engine: Engine;
let reader: ListeningReader | undefined;
let trino: Promise<Trino> | undefined;
let topic: string;
const tableOf = (codec: Compression): string => `codec_${codec}`;
let seen: Record<string, Partial<Record<EngineName, Answer>>> = {};
let expected: [number, number, number];

function python<T>(script: string, job: unknown, timeoutMs: number, interpreter = 'python3'): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const child = execFile(interpreter, [fileURLToPath(new URL(`./${script}`, import.meta.url))], { maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs }, (error, out, err) =>
      (error ? reject(new Error(`${script} failed: ${err.slice(-4000) || error.message}`)) : resolve(JSON.parse(out.trim().split('\n').at(-1)!) as T)));
    child.stdin!.end(JSON.stringify(job));
  });
}

/** What a cell of docs/operations.md's table says: whether the engine reads the codec, and else the messages it quotes (in backticks). */
interface Cell {
  reads: boolean;
  messages: string[];
}

/**
 * docs/operations.md's table of engines and codecs: per engine row (by its first word), per
 * codec column (by the codec's name in backticks in the header), what the cell says.
 */
function documentedTable(): Map<string, Map<string, Cell>> {
  const text = readFileSync(fileURLToPath(new URL('../../docs/operations.md', import.meta.url)), 'utf8');
  const start = text.indexOf('| engine | ');
  expect(start, 'docs/operations.md has a table whose header starts "| engine | "').toBeGreaterThan(0);
  const lines = text.slice(start).split('\n');
  const cells = (line: string): string[] => line.split('|').slice(1, -1).map((cell) => cell.trim());
  const codecs = cells(lines[0]!).slice(1).map((cell) => /`([a-z0-9_]+)`/.exec(cell)?.[1] ?? cell);
  const table = new Map<string, Map<string, Cell>>();
  for (const line of lines.slice(2)) {
    if (!line.startsWith('|')) break;
    const [name, ...answers] = cells(line);
    table.set(name!.split(' ')[0]!, new Map(codecs.map((codec, k) => {
      const text = answers[k] ?? '';
      return [codec, { reads: /^(\*\*)?yes\b/i.test(text), messages: [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!) }];
    })));
  }
  return table;
}

/** Trino's answer for one table: the same sums as codec_engines.py's, every page of _offset and _value decompressed, or Trino's refusal. */
async function trinoReads(started: Trino, table: string): Promise<Answer> {
  try {
    const { rows } = await started.query(`SELECT count(*), sum(_offset), sum(length(to_utf8(_value))) FROM lake.main.${table}`);
    return rows[0]!.map(Number) as [number, number, number];
  } catch (error) {
    if (error instanceof TrinoQueryError) return { error: error.message };
    throw error;
  }
}

beforeAll(async () => {
  startSpark().catch(() => {}); // Spark starts (if no other test file has) while the tables are made; awaited below
  engine = await testEngine('codecs');
  const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes: 16 * 1024 * 1024 });
  reader = await listeningReader(readerHandler(service, { token, s3: { bucket, credentials: keys }, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }, { bucket, region: 'us-east-1', credentials: keys }) }));
  // Trino starts (tens of seconds) while the records are produced and indexed
  trino = startTrino({ catalogs: { lake: testedBlocks('docs/engines.md').get('trino')!.code.replaceAll('127.0.0.1:8642', new URL(reader.url).host) } });
  trino.catch(() => {}); // awaited below; a failed start fails there
  topic = await newTopic(engine, 2, 'codecs');
  for (const codec of compressions) {
    await createTableFromTopic(engine, { name: tableOf(codec), topic, format: 'json', settings: resolveSettings({ compression: codec, file_bytes: '20000' }) });
  }
  // two transactions, the second aborted: nowhere in any table
  for (const abort of [false, true, false]) {
    await produce(engine.kafka, topic, Array.from({ length: 60 }, (_, j) => ({
      key: `k${j % 7}`,
      value: j % 9 === 0 ? 'not json' : JSON.stringify({ j, text: 'abcé'.repeat(j % 20), abort }),
      partition: j % 2,
      timestamp: t0 + j * 1000,
    })), { transactionalId: `codecs-${topic}`, abort });
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  const indexed = await engine.catalog.query<{ partition_id: number; indexed_end: bigint }>(
    `SELECT p.partition_id, p.indexed_end FROM offsetlake.lake_partition p JOIN offsetlake.lake_table t USING (table_id) WHERE t.table_name = $1 ORDER BY p.partition_id`, [tableOf(compressions[0]!)]);
  const records = (await readCommittedIndependently(engine.config.kafkaBrokers, indexed.rows.map((p) => ({ topic, partition: p.partition_id, start: 0n, end: BigInt(p.indexed_end) })))).flat();
  const valid = records.filter((r) => {
    try {
      JSON.parse(r.value!.toString('utf8'));
      return true;
    } catch {
      return false;
    }
  });
  expected = [records.length, records.reduce((n, r) => n + Number(r.offset), 0), valid.reduce((n, r) => n + r.value!.byteLength, 0)];
  const job = { uri: `${reader.url}/iceberg`, token, tables: compressions.map(tableOf) };
  const trinoSeen = async (): Promise<typeof seen> => {
    const started = await trino!;
    const answers: typeof seen = {};
    for (const codec of compressions) answers[tableOf(codec)] = { trino: await trinoReads(started, tableOf(codec)) };
    return answers;
  };
  const sparkSeen = async (): Promise<typeof seen> => {
    const answer = await sparkAnswer<typeof seen | { error: string; trace: string }>(fileURLToPath(new URL('./codec_engines.py', import.meta.url)), 'spark', job, 400_000);
    if (typeof answer.error === 'string') throw new Error(`codec_engines.py's spark failed: ${answer.error}\n${String(answer.trace)}`);
    return answer as typeof seen;
  };
  const answers = await Promise.all([
    python<typeof seen>('codec_engines.py', job, 300_000),
    sparkSeen(),
    python<typeof seen>('codec_engines.py', { ...job, daft: true }, 300_000, daftPython()),
    trinoSeen(),
  ]);
  seen = Object.fromEntries(compressions.map((codec) => [tableOf(codec), Object.assign({}, ...answers.map((each) => each[tableOf(codec)]))]));
}, 600_000);

afterAll(async () => {
  await trino?.then((started) => started.stop(), () => {});
  await reader?.stop();
  await engine?.close();
});

describe('which engine reads which page compression', () => {
  it('each table holds the records, in files of its own codec', async () => {
    expect(expected[0]).toBe(120);
    for (const codec of compressions) {
      const { rows } = await engine.catalog.query<{ table_id: bigint }>('SELECT table_id FROM offsetlake.lake_table WHERE table_name = $1', [tableOf(codec)]);
      const files = await listFiles(engine.catalog, rows[0]!.table_id);
      expect(files.length, codec).toBeGreaterThan(1);
      expect(new Set(files.map((f) => f.encoderVersion)), codec).toEqual(new Set([encoderForCompression[codec]]));
    }
  });

  it.each(compressions)('%s: each engine reads what the table of docs/operations.md says it reads, and then the same rows as a read_committed consumer', (codec) => {
    const documented = documentedTable();
    for (const [name, row] of Object.entries(engines) as [EngineName, string][]) {
      const answer = seen[tableOf(codec)]?.[name];
      const says = documented.get(row)?.get(codec);
      expect(says, `docs/operations.md's table has a row "${row}" with a column \`${codec}\``).toBeDefined();
      if (says!.reads) expect(answer, `${row} reading a ${codec} table: ${JSON.stringify(answer)}`).toEqual(expected);
      else {
        expect(answer, `${row} read a ${codec} table, which docs/operations.md says it cannot`).toHaveProperty('error');
        // in its own words: one of the messages the cell quotes
        const error = (answer as { error: string }).error;
        expect(says!.messages.some((message) => error.includes(message)), `${row}'s refusal of a ${codec} table, ${JSON.stringify(error)}, quotes none of ${JSON.stringify(says!.messages)}`).toBe(true);
      }
    }
  });

  it(`every engine docs/operations.md names reads the default compression (${defaultSettings.compression})`, () => {
    for (const [row, codecs] of documentedTable()) expect(codecs.get(defaultSettings.compression)?.reads, `${row} and ${defaultSettings.compression}`).toBe(true);
  });
});
