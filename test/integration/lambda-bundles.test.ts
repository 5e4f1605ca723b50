/**
 * The bundles that deploy, not the sources: `cdk synth` bundles each function, and each
 * bundle is loaded by Node 22 from an empty folder (no node_modules anywhere up its path,
 * so not even the AWS SDK the nodejs22.x runtime ships) and called with an event of the
 * shape AWS sends (test/fixtures/events/), against the real broker and a catalog through
 * PgBouncer. Results are checked with tools we did not write: librdkafka for the records,
 * hyparquet for the files, botocore for the MSK IAM token's signature.
 *
 * The app is synthesized twice: as it deploys (arm64) and with `-c architecture=x86_64`.
 * The two differ only in the native compressors' binaries beside index.mjs (checked
 * below), so the handlers run natively from the x86_64 bundles, and the arm64 bundles run
 * under QEMU user-mode emulation with Node 22 for arm64: every bundle's compressors, and
 * the arm64 indexer and reader against the same broker and catalog, whose bytes must be
 * those of x86_64.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { readAsText } from '../helpers/table-audit.js';
import { compressSync as lz4Compress } from 'lz4-napi';
import { compressSync as snappyCompress } from 'snappy';
import { Encoder as ZstdEncoder } from '@toondepauw/node-zstd';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { backfillTask, type BackfillPlanState } from '../../src/backfill/tasks.js';
import type { SlotStepResult } from '../../src/backfill/slot.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { handleKafkaEvent, indexerFor } from '../../src/indexer/handler.js';
import { produce } from '../../src/kafka/produce.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import type { Engine } from '../../src/runtime/engine.js';
import { loadEvent } from '../fixtures/events.js';
import { indexPartition, newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { createIndex } from '../../src/catalog/index-ddl.js';
import { indexEntryParts } from '../../src/catalog/indexes.js';
import { parseInlineIndex } from '../../src/indexes/ddl.js';
import { HEADER_PART } from '../../src/indexes/header.js';
import { readCommittedIndependently, type IndependentRecord } from '../helpers/independent-kafka.js';
import { cpuOf, deployedCopy, deployedFunctions, functionUrlResponse, invokeBundle, nodeModulesAbove, synthesizeFunctions, type BundleRun, type DeployedFunction, type StreamedOutcome, type SynthesizedFunction } from '../helpers/lambda-bundles.js';
import { nativeBindings, type LambdaCpu } from '../../infra/lambda-native.js';
import { encoderOf } from '../../src/parquet/encoder.js';
import { defaultSettings } from '../../src/table/settings.js';
import { startSaslCaptureBroker } from '../helpers/sasl-capture-broker.js';
import { checkTable } from '../helpers/verify.js';
import { freshDatabase } from '../helpers/database.js';
import { latestCatalogVersion, migrations } from '../../src/catalog/migrations.js';
import pg from 'pg';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

let engine: Engine;
const assemblies: string[] = [];
/** The bundles by architecture: arm64 as `cdk deploy` deploys them, x64 from `-c architecture=x86_64`. */
const bundles = new Map<LambdaCpu, Map<DeployedFunction, SynthesizedFunction>>();
const copies: string[] = [];

beforeAll(async () => {
  const synth = async (cpu: LambdaCpu, context: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), 'offsetlake-synth-'));
    assemblies.push(dir);
    bundles.set(cpu, await synthesizeFunctions(dir, context));
  };
  [, , engine] = await Promise.all([synth('arm64', {}), synth('x64', { architecture: 'x86_64' }), testEngine('bundles')]);
});

afterAll(async () => {
  await engine?.close();
  for (const dir of [...assemblies, ...copies]) if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Packages a bundled dependency asks for inside a try/catch and does well without: the
 * only ones a bundle may look for outside itself. @platformatic/kafka tries the native
 * @node-rs/crc32 through a require of its own making (esbuild does not follow it) and
 * falls back to its wasm CRC-32C (our own CRC-32C, src/kafka/crc32c.ts, imports it and uses
 * the binary the bundle carries); `debug`,
 * which it uses, tries supports-color for 256-colour output.
 */
const optionalModules = new Set(['@node-rs/crc32', 'supports-color']);

/**
 * Runs the function's bundle of `cpu` (x86_64 unless said; arm64 is emulated) with the
 * template's plain environment plus `env`; checks it ran on Node 22 of that architecture,
 * loaded the native compressors' binaries it carries and looked for no package outside
 * itself but the optional ones.
 */
async function invokeDeployed(name: DeployedFunction, events: unknown[], env: Record<string, string>, cpu: LambdaCpu = 'x64') {
  const fn = bundles.get(cpu)!.get(name)!;
  const dir = deployedCopy(fn);
  copies.push(dir);
  const run = await invokeBundle(dir, events, { ...fn.environment, ...env }, { cpu, compress: page });
  expect([run.node.split('.')[0], run.arch], 'the nodejs22.x runtime on the function\'s architecture').toEqual(['22', cpu]);
  expect(run.outsideModules.filter((specifier) => !optionalModules.has(specifier)), `${name}: packages the bundle asked for that are not in it`).toEqual([]);
  expect(run.bundleFiles.sort(), `${name}: what it loaded from beside index.mjs`).toEqual(nativeBindings(cpu).map((b) => `./${b.bundleFile}`).sort());
  checkCompressed(`${cpu} ${name}`, run);
  expect(run.crc32c, `${name}: the record batches' CRC-32C`).toBe('native');
  return run.outcomes;
}

/** ELF e_machine of the two Lambda architectures. */
const elfMachine: Record<LambdaCpu, number> = { arm64: 183, x64: 62 };

/**
 * Every run of a bundle gives its native compressors (functions/native.ts, the bundle's own
 * copy) a 1 MiB page, as encoder v2 compresses them (its page size): the bytes must be
 * those this machine's snappy, lz4-napi and node-zstd (level 1) make of it, whatever the processor, and
 * uncompress to the page again.
 */
function checkCompressed(what: string, run: BundleRun): void {
  for (const codec of ['snappy', 'lz4', 'zstd'] as const) {
    expect(run.compressed?.[codec].roundTrip, `${what} ${codec}: the page back`).toBe(true);
    expect(run.compressed![codec].bytes.equals(expectedCompressed[codec]), `${what} ${codec}: this machine's bytes`).toBe(true);
  }
}

/** JSON values, repetitive and not, from a fixed seed. */
function knownPage(): Buffer {
  let seed = 20261201;
  const next = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < 1024 * 1024; i += 1) {
    const part = JSON.stringify({ i, user: `u${next() % 5000}`, kind: ['view', 'click', 'buy'][next() % 3], noise: (next() >>> 0).toString(36).repeat(1 + (next() % 4)), ts: 1_764_547_200_000 + i * 37 });
    parts.push(part);
    length += part.length + 1;
  }
  return Buffer.from(parts.join('\n')).subarray(0, 1024 * 1024);
}
const page = knownPage();
const expectedCompressed = { snappy: snappyCompress(page), lz4: lz4Compress(page), zstd: new ZstdEncoder(1).encodeSync(page) };

/** The catalog (through PgBouncer, a fresh database) and the local broker, without auth: what every function but the IAM one gets. */
const stackEnv = (): Record<string, string> => ({ DATABASE_URL: engine.config.databaseUrl, KAFKA_BROKERS: engine.config.kafkaBrokers.join(','), KAFKA_AUTH: 'none' });

/** test/fixtures/events/msk.json with its records replaced by these, as the event source mapping delivers them. */
function mskEventOf(topic: string, partition: number, records: IndependentRecord[]): Record<string, unknown> {
  return {
    ...loadEvent('msk'),
    records: {
      [`${topic}-${partition}`]: records.map((r) => ({
        topic,
        partition,
        offset: Number(r.offset),
        timestamp: r.timestamp,
        timestampType: 'CREATE_TIME',
        key: r.key?.toString('base64') ?? null,
        value: r.value?.toString('base64') ?? null,
        headers: r.headers.map(([name, value]) => ({ [name]: [...(value ?? [])] })),
      })),
    },
  };
}

/** The committed records of [start, end) of partition 0, as librdkafka reads them. */
async function committed(topic: string, start: bigint, end: bigint): Promise<IndependentRecord[]> {
  return (await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start, end }]))[0]!;
}

const json = (i: number): string => JSON.stringify({ i, pad: 'x'.repeat(60) });

/** The bytes of the 20 MB file as the streaming test read them (the fault test compares with them). */
let streamedBytes: Buffer | undefined;
let streamed: ReturnType<typeof makeStreamedFile> | undefined;
/** One file of 20,000 records for the streaming tests, made once. */
const streamedFile = () => (streamed ??= makeStreamedFile());

async function makeStreamedFile() {
  const token = 'bundle-stream-token';
  const topic = await newTopic(engine, 1, 'bundle-stream');
  const table = await testTable(engine, topic, { row_group_rows: '2000', file_window: '2h' });
  // 20,000 values of about 2 KB of random hex, which ZSTD (the default) shrinks to half and
  // no further (hex carries 4 bits a byte): the file, some 20 MB, is larger than both a
  // buffered response (6 MB) and the reader's whole-range
  // limit (16 MiB, file-response.ts), so it goes out row group by row group. Timestamps a
  // millisecond apart from the start of this hour: one time bucket, so one file.
  const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
  const records = 20_000;
  for (let from = 0; from < records; from += 5_000) {
    await produce(engine.kafka, topic, Array.from({ length: 5_000 }, (_, j) => ({ value: JSON.stringify({ i: from + j, hex: randomBytes(1000).toString('hex') }), timestamp: hour + from + j, partition: 0 })));
  }
  const indexer = await indexerFor(testRuntime(engine, `stream-${topic}`), await findTable(engine.catalog, table.name), 0);
  await indexer.advance();
  await indexer.flush();
  await indexer.release();
  const files = await listFiles(engine.catalog, table.tableId);
  expect(files.map((f) => [f.startOffset, f.endOffset])).toEqual([[0n, BigInt(records)]]);
  const file = files[0]!;
  const size = Number(file.fileSizeBytes);
  expect(size).toBeGreaterThan(16 * 1024 * 1024);
  const path = `/tables/${table.name}/files/${file.dataFileId}.parquet`;
  const request = (method: string, headers: Record<string, string> = {}) => {
    const event = loadEvent('function-url') as { headers: Record<string, string>; requestContext: { http: Record<string, string> } };
    return { ...event, rawPath: path, headers: { ...event.headers, authorization: `Bearer ${token}`, ...headers }, requestContext: { ...event.requestContext, http: { ...event.requestContext.http, method, path } } };
  };
  return { token, topic, file, size, records, request };
}

// Node for arm64 under QEMU runs each bundle 10-30× slower than natively: ~30 s alone here,
// and a busy machine (another CI run beside this one) stretches that several times.
const armUnderQemuMs = 600_000;

describe('the deployed Lambda bundles (cdk synth), each loaded by Node 22 from a folder with no node_modules', () => {
  it('cdk synth gives each of the seven functions one asset of index.mjs, its source map and the native compressors of its architecture (arm64 as deployed, x86_64 on request), run as index.handler on nodejs22.x; both architectures have the same JavaScript', () => {
    for (const [cpu, functions] of bundles) {
      expect([...functions.keys()].sort()).toEqual([...deployedFunctions].sort());
      const native = nativeBindings(cpu).map((b) => b.bundleFile);
      for (const [name, fn] of functions) {
        expect({ name, files: readdirSync(fn.assetDir).sort(), handler: fn.handler, runtime: fn.runtime, architectures: fn.architectures, cpu: cpuOf(fn) })
          .toEqual({ name, files: ['index.mjs', 'index.mjs.map', ...native].sort(), handler: 'index.handler', runtime: 'nodejs22.x', architectures: [cpu === 'x64' ? 'x86_64' : 'arm64'], cpu });
        for (const file of native) {
          // ELF64, little-endian, a shared object of the function's processor.
          const header = readFileSync(join(fn.assetDir, file)).subarray(0, 20);
          expect({ file, magic: header.subarray(0, 4).toString('latin1'), class: header[4], data: header[5], type: header.readUInt16LE(16), machine: header.readUInt16LE(18) })
            .toEqual({ file, magic: '\x7fELF', class: 2, data: 1, type: 3, machine: elfMachine[cpu] });
        }
      }
    }
    for (const name of deployedFunctions) {
      const [arm64, x64] = (['arm64', 'x64'] as const).map((cpu) => readFileSync(join(bundles.get(cpu)!.get(name)!.assetDir, 'index.mjs')));
      expect(arm64!.equals(x64!), `${name}: index.mjs of arm64 and x86_64`).toBe(true);
    }
    expect(nodeModulesAbove(tmpdir()), 'node_modules above the temporary folder').toEqual([]);
  });

  it('the arm64 bundles that no handler test runs (Backfill, IndexBackfill, Tick, Retention, Migrate) load their own compressors under QEMU with Node 22 for arm64, and give this machine\'s bytes', async () => {
    // Every run here checks the compressors (checkCompressed): the x86_64 bundles in the
    // handler tests below, the arm64 indexer and reader in the next test.
    expect(expectedCompressed.snappy.length).toBeLessThan(page.length);
    expect(expectedCompressed.lz4.length).toBeLessThan(page.length);
    expect(expectedCompressed.zstd.length).toBeLessThan(page.length);
    const names: DeployedFunction[] = ['Backfill', 'IndexBackfill', 'Tick', 'Retention', 'Migrate'];
    // Two at a time: an emulated Node takes seconds to load a bundle, and the machine has two cores.
    for (let i = 0; i < names.length; i += 2) {
      const outcomes = await Promise.all(names.slice(i, i + 2).map((name) => invokeDeployed(name, [], {}, 'arm64')));
      expect(outcomes).toEqual(outcomes.map(() => []));
    }
  }, armUnderQemuMs);

  it('arm64, emulated: the indexer bundle\'s files rebuild byte for byte on x86_64, and the reader bundle streams (RESPONSE_STREAM, as deployed) a file x86_64 indexed with the catalog\'s length and SHA-256 (the default encoder, native ZSTD, across processors)', async () => {
    const topic = await newTopic(engine, 1, 'bundle-arm64');
    const table = await testTable(engine, topic, { file_bytes: '64KiB' });
    // Values of 0.5-2 KB, some repetitive and some not: pages that the compressor really works on.
    const value = (i: number): string => JSON.stringify({ i, text: `${'lorem ipsum '.repeat(i % 50)}${(i * 2654435761 >>> 0).toString(36).repeat(20)}`, pad: 'x'.repeat(400 + (i % 7) * 100) });
    await produce(engine.kafka, topic, Array.from({ length: 200 }, (_, i) => ({ key: `k${i % 13}`, value: value(i), partition: 0 })));
    const records = await committed(topic, 0n, 200n);

    // The arm64 indexer indexes what it reaches of the first 120 records (its open range is
    // dropped when the instance ends); this machine (x86_64) rebuilds each file it committed
    // and compares length, footer and SHA-256.
    const [indexed] = await invokeDeployed('Indexer', [mskEventOf(topic, 0, records.slice(0, 120))], stackEnv(), 'arm64');
    expect(indexed).toMatchObject({ result: { partitions: [{ table: table.name, topic, partition: 0 }] } });
    const byArm64 = (await checkTable(engine, await findTable(engine.catalog, table.name))).files;
    expect(byArm64.length).toBeGreaterThan(1);
    expect(new Set(byArm64.map((f) => f.encoderVersion))).toEqual(new Set([encoderVersion]));
    const arm64End = byArm64.reduce((end, f) => (f.endOffset > end ? f.endOffset : end), 0n);

    // This machine indexes the rest; the arm64 reader rebuilds one of those files.
    const indexer = await indexerFor(testRuntime(engine, `arm64-${topic}`), await findTable(engine.catalog, table.name), 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
    const byX64 = (await listFiles(engine.catalog, table.tableId)).filter((f) => f.startOffset >= arm64End);
    expect(byX64.length).toBeGreaterThan(0);
    const file = byX64[0]!;
    const token = 'bundle-arm64-token';
    const event = loadEvent('function-url') as { headers: Record<string, string>; requestContext: { http: Record<string, string> } };
    const path = `/tables/${table.name}/files/${file.dataFileId}.parquet`;
    const [served] = await invokeDeployed('Reader', [{ ...event, rawPath: path, headers: { ...event.headers, authorization: `Bearer ${token}` }, requestContext: { ...event.requestContext, http: { ...event.requestContext.http, path } } }], { ...stackEnv(), OFFSETLAKE_TOKEN: token }, 'arm64');
    // Deployed as it is by default: a streaming handler behind a RESPONSE_STREAM function URL.
    const response = functionUrlResponse(served as StreamedOutcome);
    expect(response.statusCode).toBe(200);
    const bytes = response.body;
    expect({ length: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }).toEqual({ length: Number(file.fileSizeBytes), sha256: file.sha256.toString('hex') });
  }, armUnderQemuMs);

  it('Indexer: indexes an MSK event of records produced to a topic; the files tile them and rebuild to what librdkafka reads', async () => {
    const topic = await newTopic(engine, 1, 'bundle-indexer');
    const table = await testTable(engine, topic, { file_bytes: '100B' });
    await produce(engine.kafka, topic, Array.from({ length: 4 }, (_, i) => ({ key: `k${i}`, value: json(i), headers: [['trace', `t${i}`]] as [string, string][], partition: 0 })));
    const records = await committed(topic, 0n, 4n);

    const [outcome] = await invokeDeployed('Indexer', [mskEventOf(topic, 0, records)], stackEnv());
    expect(outcome).toEqual({ result: { partitions: [{ table: table.name, topic, partition: 0, indexedEnd: '4', position: '4', rangesCommitted: 2, filesCommitted: 2 }] } });
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    expect(check.files.map((f) => [f.startOffset, f.endOffset, f.sealReason])).toEqual([[0n, 2n, 'bytes'], [2n, 4n, 'bytes']]);
  });

  it('Backfill: plans a table\'s history, then a slot\'s first step backfills it and its next finds nothing left; the files tile it and rebuild to what librdkafka reads', async () => {
    const topic = await newTopic(engine, 1, 'bundle-backfill');
    await produce(engine.kafka, topic, Array.from({ length: 250 }, (_, i) => ({ value: json(i), partition: 0 })));
    const table = await testTable(engine, topic, { backfill_offsets: '1000' });

    // The Step Functions task payloads of src/backfill/definition.ts: Plan, then the Chunk steps of a slot.
    const [plan] = await invokeDeployed('Backfill', [{ action: 'plan', table: table.name, input: { table: table.name }, slots: 10 }], stackEnv());
    const state = (plan as { result: BackfillPlanState }).result;
    expect([state.left, state.claimable, state.slots, state.execution]).toEqual([1, 1, [0], 1]);

    const step = (n: number) => ({ action: 'chunk', table: table.name, tableId: state.tableId, executionName: `${table.name}-1`, slot: 0, step: n, budget: state.chunksPerSlot });
    const [first, second] = await invokeDeployed('Backfill', [step(0), step(1)], stackEnv());
    expect(first).toMatchObject({ result: { result: { outcome: 'committed', chunk: { start: '0', end: '250' } } } });
    expect(second).toMatchObject({ result: { idle: true } });
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    expect(check.committedOffsets.get(0)).toHaveLength(250);
  });

  it('IndexBackfill: the state machine\'s steps move a declared index on a table with files to active, giving every file the entries a file indexed with the index gets', async () => {
    const topic = await newTopic(engine, 1, 'bundle-index');
    const table = await testTable(engine, topic, { file_bytes: '2KiB' });
    await produce(engine.kafka, topic, Array.from({ length: 120 }, (_, i) => ({ key: `k${i % 7}`, value: json(i), partition: 0 })));
    await indexPartition(testRuntime(engine, `bundle-index-${topic}`), await findTable(engine.catalog, table.name));
    const files = await listFiles(engine.catalog, table.tableId);
    expect(files.length).toBeGreaterThan(2);
    const { index } = await createIndex(engine.catalog, table.name, parseInlineIndex('by_key (_key) USING POSTINGS'));
    expect(index.state).toBe('declared');
    // The Step task payloads of src/index-backfill/definition.ts: one state move or one chunk each.
    const steps = Array.from({ length: 8 }, (_, step) => ({ action: 'step', indexId: String(index.indexId), execution: 1, step }));
    const results = (await invokeDeployed('IndexBackfill', steps, stackEnv())) as { result: { done: boolean; state: string } }[];
    expect(results.map((r) => r.result.state).filter((state, i, all) => state !== all[i - 1])).toEqual(['building', 'backfilling', 'catching_up', 'active']);
    expect(results.at(-1)!.result.done).toBe(true);
    const headers = await indexEntryParts(engine.catalog, index.indexId, 'history', HEADER_PART);
    expect(new Set(headers.keys())).toEqual(new Set(files.map((f) => f.dataFileId)));
  });

  it('Tick: seals the open range a Lambda instance left behind once file_window has passed, all its records in one range, and returns the partition it sealed', async () => {
    const topic = await newTopic(engine, 1, 'bundle-tick');
    const table = await testTable(engine, topic, { file_window: '60s' });
    await produce(engine.kafka, topic, [0, 1, 2].map((i) => ({ value: json(i), partition: 0 })));
    // Another instance read the records two minutes ago, kept them open, and gave its lease back.
    const twoMinutesAgo = (): number => Date.now() - 120_000;
    await handleKafkaEvent(mskEventOf(topic, 0, await committed(topic, 0n, 3n)), { ...testRuntime(engine, `instance-${topic}`, { clock: twoMinutesAgo }), releaseAfterEvent: true });

    const [outcome] = await invokeDeployed('Tick', [loadEvent('scheduled')], stackEnv());
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    // One range of all three records: the other instance had read them all before the range aged.
    expect(check.files.map((f) => [f.startOffset, f.endOffset, f.sealReason])).toEqual([[0n, 3n, 'age']]);
    expect(outcome).toEqual({ result: { partitions: [{ table: table.name, topic, partition: 0, indexedEnd: '3', position: '3', rangesCommitted: 1, filesCommitted: 1 }] } });
  });

  it('Retention: expires the files below Kafka\'s earliest offset and returns that summary, discovering none of its partitions and starting no backfill', async () => {
    const topic = await newTopic(engine, 1, 'bundle-retention');
    await produce(engine.kafka, topic, Array.from({ length: 200 }, (_, i) => ({ value: json(i), partition: 0 })));
    const table = await testTable(engine, topic, { backfill_offsets: '100' });
    const deps = { catalog: engine.catalog, kafka: engine.kafka };
    const plan = (await backfillTask(deps, { action: 'plan', table: table.name, input: {} })) as BackfillPlanState;
    const step = (n: number) => backfillTask(deps, { action: 'chunk', table: table.name, tableId: plan.tableId, executionName: `${table.name}-1`, slot: 0, step: n, budget: 10 }) as Promise<SlotStepResult>;
    for (let n = 0; !(await step(n)).idle; n += 1) expect(n).toBeLessThan(10);
    await deleteRecords(engine.kafka, topic, 0, 150n);

    const [outcome] = await invokeDeployed('Retention', [loadEvent('scheduled')], stackEnv());
    const result = (outcome as { result: { partitions: { table: string; earliest: string; expiredFiles: number; indexedStart: string }[]; discovered: { table: string }[]; backfills: unknown[] } }).result;
    expect(result.partitions.filter((p) => p.table === table.name).map((p) => [p.earliest, p.expiredFiles, p.indexedStart])).toEqual([['150', 2, '200']]);
    // The other tests' tables share this catalog; theirs may be reported as never planned.
    expect([result.discovered.filter((p) => p.table === table.name), result.backfills]).toEqual([[], []]);
    expect(await listFiles(engine.catalog, table.tableId)).toEqual([]);
  });

  it('Migrate: the CloudFormation custom resource\'s Create migrates an empty catalog to the newest version, Update applies nothing, Delete leaves it', async () => {
    const db = await freshDatabase('bundle_migrate');
    onTestFinished(() => db.drop());
    const request = (type: string) => ({ RequestType: type, ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:provider', ResourceType: 'Custom::OffsetlakeCatalogMigrations', LogicalResourceId: 'CatalogMigrations', ResourceProperties: { version: latestCatalogVersion }, ...(type === 'Create' ? {} : { PhysicalResourceId: 'offsetlake-catalog' }) });
    const outcomes = await invokeDeployed('Migrate', [request('Create'), request('Update'), request('Delete')], { ...stackEnv(), DATABASE_URL: db.url });
    const all = migrations.map((m) => m.version);
    expect(outcomes.map((o) => (o as { result: unknown }).result)).toEqual([
      { PhysicalResourceId: 'offsetlake-catalog', Data: { version: latestCatalogVersion, applied: all.join(',') } },
      { PhysicalResourceId: 'offsetlake-catalog', Data: { version: latestCatalogVersion, applied: '' } },
      { PhysicalResourceId: 'offsetlake-catalog' },
    ]);
    const catalog = new pg.Client({ connectionString: db.url });
    await catalog.connect();
    try {
      expect((await catalog.query<{ version: number }>('SELECT version FROM offsetlake.schema_migration ORDER BY version')).rows.map((r) => r.version)).toEqual(all);
    } finally {
      await catalog.end();
    }
  });

  it('Reader with OFFSETLAKE_READER_INVOKE_MODE=BUFFERED (-c readerInvokeMode=BUFFERED): answers Function URL events with whole results: 401 without the token, the table list, and a file whose base64 bytes hyparquet reads as the records librdkafka reads', async () => {
    const token = 'bundle-reader-token';
    const topic = await newTopic(engine, 1, 'bundle-reader');
    const table = await testTable(engine, topic);
    await produce(engine.kafka, topic, Array.from({ length: 5 }, (_, i) => ({ value: json(i), partition: 0 })));
    const indexer = await indexerFor(testRuntime(engine, `reader-${topic}`), await findTable(engine.catalog, table.name), 0);
    await indexer.advance();
    await indexer.flush();
    await indexer.release();
    const [file] = await listFiles(engine.catalog, table.tableId);

    const request = (path: string, headers: Record<string, string>) => {
      const event = loadEvent('function-url') as { headers: Record<string, string>; requestContext: { http: Record<string, string> } };
      return { ...event, rawPath: path, headers: { ...event.headers, ...headers }, requestContext: { ...event.requestContext, http: { ...event.requestContext.http, path } } };
    };
    const filePath = `/tables/${table.name}/files/${file!.dataFileId}.parquet`;
    const outcomes = await invokeDeployed('Reader', [
      request('/tables', {}),
      request('/tables', { authorization: `Bearer ${token}` }),
      request(filePath, { authorization: `Bearer ${token}` }),
    ], { ...stackEnv(), OFFSETLAKE_TOKEN: token, OFFSETLAKE_READER_INVOKE_MODE: 'BUFFERED' });
    const [denied, tables, bytes] = outcomes.map((o) => (o as { result: { statusCode: number; body: string; isBase64Encoded: boolean } }).result);

    expect(denied!.statusCode).toBe(401);
    expect(tables!.statusCode).toBe(200);
    const listed = (JSON.parse(Buffer.from(tables!.body, 'base64').toString('utf8')) as { tables: { name: string; topic: string }[] }).tables;
    expect(listed.filter((t) => t.name === table.name)).toEqual([expect.objectContaining({ name: table.name, topic })]);
    expect([bytes!.statusCode, bytes!.isBase64Encoded]).toEqual([200, true]);
    const parquet = Buffer.from(bytes!.body, 'base64');
    expect(parquet.length).toBe(Number(file!.fileSizeBytes));
    const rows = (await parquetReadObjects({ ...readAsText, file: parquet.buffer.slice(parquet.byteOffset, parquet.byteOffset + parquet.length) as ArrayBuffer })) as { _offset: bigint; _value: unknown }[];
    const records = await committed(topic, 0n, 5n);
    expect(rows.map((row) => [String(row._offset), Buffer.from(row._value as Uint8Array).toString('utf8')])).toEqual(records.map((r) => [String(r.offset), r.value!.toString('utf8')]));
  });

  it('Reader, streaming (the default, RESPONSE_STREAM): a whole-file GET of a 20 MB file of 10 row groups comes through the streaming contract (JSON prelude, 8 NUL bytes, body) with the catalog\'s length and SHA-256, and pyarrow reads it as the records librdkafka reads; an 8 MB range is the same bytes of it; HEAD gives the size without a body', async () => {
    const { file, size, records, topic, request, token } = await streamedFile();
    const outcomes = await invokeDeployed('Reader', [request('GET'), request('GET', { range: 'bytes=1000000-8999999' }), request('HEAD')], { ...stackEnv(), OFFSETLAKE_TOKEN: token });
    const [whole, range, head] = outcomes.map((o) => {
      const streamed = o as StreamedOutcome;
      expect(streamed.stream, 'a streamed response the handler ended itself').toMatchObject({ contentType: 'application/vnd.awslambda.http-integration-response', ended: true });
      return functionUrlResponse(streamed);
    });

    expect([whole!.statusCode, whole!.headers['content-length'], whole!.headers.etag]).toEqual([200, String(size), `"${file.sha256.toString('hex')}"`]);
    expect({ length: whole!.body.length, sha256: createHash('sha256').update(whole!.body).digest('hex') }).toEqual({ length: size, sha256: file.sha256.toString('hex') });
    const local = join(mkdtempSync(join(tmpdir(), 'offsetlake-streamed-')), 'file.parquet');
    copies.push(dirname(local));
    writeFileSync(local, whole!.body);
    const read = await pyarrowRows(local);
    expect(read.rowGroups).toBe(records / 2000);
    const expected = await committed(topic, 0n, BigInt(records));
    expect(read.rows).toEqual(expected.map((r) => [String(r.offset), r.value!.toString('utf8')]));
    streamedBytes = whole!.body;

    expect([range!.statusCode, range!.headers['content-range'], range!.headers['content-length']]).toEqual([206, `bytes 1000000-8999999/${size}`, '8000000']);
    expect(range!.body.equals(whole!.body.subarray(1_000_000, 9_000_000))).toBe(true);
    expect([head!.statusCode, head!.headers['content-length'], head!.body.length]).toEqual([200, String(size), 0]);
  });

  it('Reader, streaming, with the catalog\'s checksums of row groups 0 and 3 made wrong: a whole-file GET fails on its first row group before any byte, so it is a 500 naming the mismatch; a streamed range from row group 1 sends row groups 1 and 2 (the true bytes), then ends short of its Content-Length with the function failing, never a wrong byte', async () => {
    const { file, size, request, token } = await streamedFile();
    expect(streamedBytes, 'the bytes of the test before').toBeDefined();
    // Where each row group starts, from the footer as hyparquet reads it.
    const footer = file.footer.buffer.slice(file.footer.byteOffset, file.footer.byteOffset + file.footer.byteLength) as ArrayBuffer;
    const starts = parquetMetadata(footer).row_groups.map((group) => Math.min(...group.columns.map((c) => Number(c.meta_data!.dictionary_page_offset ?? c.meta_data!.data_page_offset))));
    expect(size - starts[1]!).toBeGreaterThan(16 * 1024 * 1024);
    await engine.catalog.query('UPDATE offsetlake.granule SET chunk_sha256 = set_byte(chunk_sha256, 0, get_byte(chunk_sha256, 0) # 255) WHERE data_file_id = $1 AND row_group IN (0, 3)', [file.dataFileId]);
    onTestFinished(async () => {
      await engine.catalog.query('UPDATE offsetlake.granule SET chunk_sha256 = set_byte(chunk_sha256, 0, get_byte(chunk_sha256, 0) # 255) WHERE data_file_id = $1 AND row_group IN (0, 3)', [file.dataFileId]);
    });

    const [whole, fromOne] = (await invokeDeployed('Reader', [request('GET'), request('GET', { range: `bytes=${starts[1]}-` })], { ...stackEnv(), OFFSETLAKE_TOKEN: token })) as StreamedOutcome[];
    expect(whole!.stream, 'the whole-file GET').toMatchObject({ ended: true });
    const refused = functionUrlResponse(whole!);
    expect(refused.statusCode).toBe(500);
    expect(JSON.parse(refused.body.toString('utf8')).error).toMatch(/row group 0/);

    expect(fromOne!.stream.ended).toBe(false);
    expect(fromOne!.stream.error).toMatch(/row group 3/);
    const cut = functionUrlResponse(fromOne!);
    expect([cut.statusCode, cut.headers['content-length']]).toEqual([206, String(size - starts[1]!)]);
    expect(cut.body.length).toBe(starts[3]! - starts[1]!);
    expect(cut.body.equals(streamedBytes!.subarray(starts[1]!, starts[3]!))).toBe(true);
  });

  it('Indexer with KAFKA_AUTH=iam: signs an MSK IAM token from environment credentials and sends it over TLS in SASL OAUTHBEARER; botocore verifies its SigV4 signature', async () => {
    const broker = await startSaslCaptureBroker();
    onTestFinished(() => broker.close());
    const topic = await newTopic(engine, 1, 'bundle-iam');
    await testTable(engine, topic);
    await produce(engine.kafka, topic, [{ value: json(0), partition: 0 }]);
    const credentials = { accessKeyId: 'AKIAOFFSETLAKETEST01', secretAccessKey: 'offsetlake/fake+secret/0123456789abcdefghij', sessionToken: 'offsetlake-fake-session-token/+=', region: 'eu-west-1' };

    const [outcome] = await invokeDeployed('Indexer', [mskEventOf(topic, 0, await committed(topic, 0n, 1n))], {
      DATABASE_URL: engine.config.databaseUrl,
      KAFKA_BROKERS: broker.address,
      KAFKA_AUTH: 'iam',
      AWS_REGION: credentials.region,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_SESSION_TOKEN: credentials.sessionToken,
      NODE_EXTRA_CA_CERTS: broker.certificateFile,
    });
    // The broker refused the token after keeping it: the handler fails on authentication, not before.
    expect((outcome as { error: string }).error).toMatch(/SASL authentication failed/);
    expect(broker.requests.slice(0, 3)).toEqual(['ApiVersions v1', 'SaslHandshake v1:OAUTHBEARER', 'SaslAuthenticate v2']);
    expect(broker.tokens.length).toBeGreaterThan(0);

    const token = await decodeWithBotocore(broker.tokens[0]!, credentials);
    expect([token.scheme, token.host, token.path]).toEqual(['https', `kafka.${credentials.region}.amazonaws.com`, '/']);
    const { 'User-Agent': userAgent, ...signed } = token.query;
    expect(userAgent).toMatch(/^aws-msk-iam-sasl-signer-js\//);
    expect(signed).toMatchObject({
      Action: 'kafka-cluster:Connect',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': `${credentials.accessKeyId}/${signed['X-Amz-Date']!.slice(0, 8)}/${credentials.region}/kafka-cluster/aws4_request`,
      'X-Amz-Security-Token': credentials.sessionToken,
      'X-Amz-SignedHeaders': 'host',
    });
    // botocore presigns the same request at the same instant: every parameter, the signature included, is the same.
    expect(signed).toEqual(token.botocoreQuery);
  });
});

interface CheckedToken {
  url: string;
  scheme: string;
  host: string;
  path: string;
  query: Record<string, string>;
  botocoreQuery: Record<string, string>;
}

/** test/integration/parquet_rows.py: a local Parquet file's row groups and rows as pyarrow reads them. */
async function pyarrowRows(file: string): Promise<{ rowGroups: number; rows: [string, string | null][] }> {
  const script = fileURLToPath(new URL('./parquet_rows.py', import.meta.url));
  const { stdout } = await promisify(execFile)('python3', [script, file], { maxBuffer: 256 * 1024 * 1024, timeout: 120_000 }).catch((error: Error & { stderr?: string }) => {
    throw new Error(`pyarrow could not read the streamed file (the readers come from bash test/python-env.sh, which npm test runs first): ${error.stderr || error.message}`);
  });
  return JSON.parse(stdout) as { rowGroups: number; rows: [string, string | null][] };
}

/** test/integration/msk_iam_token.py: the token decoded, and the same request presigned by botocore. */
function decodeWithBotocore(token: string, credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string; region: string }): Promise<CheckedToken> {
  const script = fileURLToPath(new URL('./msk_iam_token.py', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = execFile('python3', [script], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`botocore could not check the token (the readers come from bash test/python-env.sh, which npm test runs first): ${stderr || error.message}`));
      resolve(JSON.parse(stdout) as CheckedToken);
    });
    child.stdin!.end(JSON.stringify({ token, ...credentials }));
  });
}
