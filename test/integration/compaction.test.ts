/**
 * Files that grow with age (issue 49) against the real broker and Postgres: a table
 * indexed into many small files, then compacted. What is expected comes from tools we did
 * not write: the committed records from confluent-kafka's read_committed consumer, the
 * rows and statistics from an independent Parquet reader over the rebuilt bytes (checkTable),
 * the refusals from Postgres's own locks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles, type CatalogFile } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { acquireLease, LeaseLostError } from '../../src/catalog/leases.js';
import { commitMerge, mergeCandidates, MergeRefusedError, replacedFiles } from '../../src/catalog/merges.js';
import { checkFiles, rebuildFile } from '../../src/files/rebuild.js';
import { buildRangeFiles, rangeBuilder } from '../../src/files/files.js';
import { schemaVersion } from '../../src/catalog/schema-versions.js';
import { encoderForCompression } from '../../src/parquet/index.js';
import { produce } from '../../src/kafka/produce.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { compactPartition } from '../../src/compaction/compact.js';
import { planMerges } from '../../src/compaction/plan.js';
import type { Engine } from '../../src/runtime/engine.js';
import type { TableRecord } from '../../src/table/record.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { registerSchema } from '../helpers/registry.js';
import { avro, wire } from '../helpers/spec-encoding.js';
import { runCli } from '../helpers/cli.js';
import { indexPartition, newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { checkTable, type Row } from '../helpers/verify.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('compaction');
});
afterAll(async () => {
  await engine.close();
});

const hour = 3_600_000;
const t0 = Date.UTC(2026, 10, 29, 9, 0, 0);
const source = () => kafkaSource(engine.kafka);

/** What a reader of the table sees, from rows an independent reader took from rebuilt bytes. */
function answers(rows: Row[]): { count: number; offsets: string; values: number } {
  let offsets = 0n;
  let values = 0;
  for (const row of rows) {
    offsets += BigInt(row._offset as bigint);
    values += row._value === null ? 0 : String(row._value).length;
  }
  return { count: rows.length, offsets: String(offsets), values };
}

/**
 * Tiling over live files, from the catalog's rows alone (SQL): per partition the distinct
 * live ranges, sorted, start at indexed_start, each where the one before ended, and end at
 * indexed_end; every replaced file lies inside the live merged file that replaced it, in
 * its bucket, and a merged file's sources tile its offsets.
 */
async function tilingProblems(table: TableRecord): Promise<string[]> {
  const problems: string[] = [];
  const partitions = await engine.catalog.query<{ partition_id: number; indexed_start: bigint; indexed_end: bigint }>(
    'SELECT partition_id, indexed_start, indexed_end FROM offsetlake.lake_partition WHERE table_id = $1', [table.tableId]);
  const files = await engine.catalog.query<{ data_file_id: bigint; partition_id: number; start_offset: bigint; end_offset: bigint; time_bucket: Date; replaced_by: bigint | null; expired_at: Date | null }>(
    'SELECT data_file_id, partition_id, start_offset, end_offset, time_bucket, replaced_by, expired_at FROM offsetlake.data_file WHERE table_id = $1 ORDER BY start_offset',
    [table.tableId]);
  for (const p of partitions.rows) {
    const live = files.rows.filter((f) => f.partition_id === p.partition_id && f.replaced_by === null && f.expired_at === null);
    const ranges = [...new Map(live.map((f) => [`${f.start_offset}:${f.end_offset}`, f])).values()];
    let at = p.indexed_start;
    for (const range of ranges) {
      if (range.start_offset !== at) problems.push(`partition ${p.partition_id}: live range at ${range.start_offset}, expected ${at}`);
      at = range.end_offset;
    }
    if (at !== p.indexed_end) problems.push(`partition ${p.partition_id}: live ranges end at ${at}, indexed_end ${p.indexed_end}`);
  }
  const byId = new Map(files.rows.map((f) => [String(f.data_file_id), f]));
  const sourcesOf = new Map<string, typeof files.rows>();
  for (const f of files.rows.filter((f) => f.replaced_by !== null)) {
    const merged = byId.get(String(f.replaced_by))!;
    if (merged.replaced_by !== null) problems.push(`file ${f.data_file_id} is replaced by ${merged.data_file_id}, which is not live`);
    if (f.start_offset < merged.start_offset || f.end_offset > merged.end_offset || f.time_bucket.getTime() !== merged.time_bucket.getTime()) {
      problems.push(`file ${f.data_file_id} [${f.start_offset}, ${f.end_offset}) does not lie in its merged file ${merged.data_file_id}`);
    }
    sourcesOf.set(String(f.replaced_by), [...(sourcesOf.get(String(f.replaced_by)) ?? []), f]);
  }
  for (const [id, sources] of sourcesOf) {
    const merged = byId.get(id)!;
    let at = merged.start_offset;
    for (const s of sources) {
      if (s.start_offset !== at) problems.push(`merged file ${id}: source ${s.data_file_id} starts at ${s.start_offset}, expected ${at}`);
      at = s.end_offset;
    }
    if (at !== merged.end_offset) problems.push(`merged file ${id}: sources end at ${at}, the file at ${merged.end_offset}`);
  }
  return problems;
}

/** A table indexed into one small file per round and partition: `rounds` rounds of 10 records per partition, every fourth transaction aborted. */
async function smallFiles(settings: Record<string, string>, rounds: number, partitions = 2): Promise<TableRecord> {
  const topic = await newTopic(engine, partitions, 'compaction');
  const created = await testTable(engine, topic, { file_window: '20m', granularity: 'hour', ...settings });
  const table = await findTable(engine.catalog, created.name);
  const runtime = testRuntime(engine, `indexer-${topic}`);
  for (let round = 0; round < rounds; round += 1) {
    const records = Array.from({ length: 10 * partitions }, (_, j) => ({
      key: j % 3 === 0 ? null : `k${j}`,
      value: j === 5 ? `{"broken": ${round}` : JSON.stringify({ round, j, text: 'ü✓'.repeat(j % 4) }),
      headers: j % 2 === 0 ? ([['h', String(round)]] as [string, string][]) : [],
      partition: j % partitions,
      // every record of round r in hour 0 but for round 5's, in hour 1 (a range of another bucket splits the runs)
      timestamp: t0 + (round === 5 ? hour : 0) + round * 60_000 + j * 100,
    }));
    await produce(engine.kafka, topic, records, { transactionalId: `compaction-${topic}`, abort: round % 4 === 3 });
    for (let p = 0; p < partitions; p += 1) await indexPartition(runtime, table, p);
  }
  return table;
}

async function allRows(table: TableRecord, files: CatalogFile[]): Promise<Row[]> {
  const { rebuiltRows } = await import('../helpers/verify.js');
  return (await Promise.all(files.map((file) => rebuiltRows(engine, table, file)))).flat();
}

describe('compaction', () => {
  it('merges small files of one bucket into files that tile, hold every committed record once, rebuild byte for byte with exact statistics; the files they replaced still rebuild', async () => {
    const table = await smallFiles({ merge_files: '3', merge_after: '1m' }, 12);
    const before = await checkTable(engine, table);
    const liveBefore = before.files;
    expect(liveBefore.length).toBeGreaterThanOrEqual(16);
    const answersBefore = answers([...before.rowsByFile.values()].flat());

    const runtime = { catalog: engine.catalog, source: source() };
    // The buckets are long past: each run of hour-0 files is merged whole (aged), up to file_bytes.
    const results = await Promise.all([0, 1].map((p) => compactPartition(runtime, table, p, { owner: 'compactor-test' })));
    for (const result of results) {
      expect(result.busy).toBe(false);
      expect(result.refused).toEqual([]);
      expect(result.merges.length).toBeGreaterThanOrEqual(2);
    }
    const after = await checkTable(engine, table);
    expect(await tilingProblems(table)).toEqual([]);
    expect(after.files.length).toBeLessThan(liveBefore.length);
    expect(after.files.filter((f) => f.sealReason === 'merge').every((f) => f.source === 'merge')).toBe(true);
    // The same answers as before: count(*), and sums over offsets and values.
    expect(answers([...after.rowsByFile.values()].flat())).toEqual(answersBefore);
    // A merged file is a file of one range: full row groups, granules, stored pieces and entries `check` verifies.
    const checks = await checkFiles(engine.catalog, source(), [table], (t) => listFiles(engine.catalog, t.tableId));
    expect(checks.filter((c) => c.problem || c.statistics.length || c.pieces.length || c.indexEntries.length)).toEqual([]);
    // Nothing left to merge now: a second call is a no-op (idempotent).
    const again = await compactPartition(runtime, table, 0, { owner: 'compactor-test' });
    expect(again.merges).toEqual([]);
    // Replaced files keep their rows and still rebuild from Kafka (older snapshots read them).
    const all = await listFiles(engine.catalog, table.tableId, { includeReplaced: true });
    const replaced = all.filter((f) => f.replacedBy !== null);
    expect(replaced.length).toBe(liveBefore.length - after.files.length + results.reduce((n, r) => n + r.merges.length, 0));
    for (const file of replaced.slice(0, 4)) await rebuildFile(engine.catalog, source(), table, file);
    expect(answers(await allRows(table, replaced))).toEqual(answers([...after.rowsByFile.entries()].filter(([id]) => after.files.find((f) => f.dataFileId === id)!.sealReason === 'merge').flatMap(([, rows]) => rows)));
    for (const merged of after.files.filter((f) => f.sealReason === 'merge')) {
      expect((await replacedFiles(engine.catalog, merged.dataFileId)).length).toBeGreaterThanOrEqual(2);
    }
  });

  it('young buckets merge by size tier: merge_files files of one tier at a time', async () => {
    const table = await smallFiles({ merge_files: '4', merge_after: '1h' }, 9, 1);
    const runtime = { catalog: engine.catalog, source: source(), clock: () => t0 + 30 * 60_000 };
    const result = await compactPartition(runtime, table, 0, { owner: 'compactor-tier' });
    // rounds 0-4 and 6-8 of hour 0 (round 5 is hour 1), with round 3 and 7 aborted: runs of 4 (0-4 less none) ...
    expect(result.merges.length).toBeGreaterThanOrEqual(1);
    expect(result.merges.every((m) => m.sources.length === 4)).toBe(true);
    await checkTable(engine, table);
    expect(await tilingProblems(table)).toEqual([]);
  });

  it('two compactors on one partition: one merge commits, the other is refused and changes nothing; without the lease nothing commits', async () => {
    const table = await smallFiles({ merge_files: '3', merge_after: '1m' }, 4, 1);
    const lease = (await acquireLease(engine.catalog, table.tableId, 0, 'compactor-a', 30_000))!;
    const plan = planMerges(await mergeCandidates(engine.catalog, table.tableId, 0), { fileBytes: table.settings.file_bytes, mergeFiles: 3, mergeAfterMs: 60_000, granularity: 'hour' }, Date.now());
    expect(plan.length).toBe(1);
    const merge = plan[0]!;
    const files = (await listFiles(engine.catalog, table.tableId)).filter((f) => merge.sources.includes(f.dataFileId));
    const records = [];
    for await (const batch of source().read(table.topic, 0, merge.startOffset, merge.endOffset)) records.push(...batch.records);
    const version = Math.max(...files.map((f) => f.schemaVersion));
    const built = buildRangeFiles({
      table, schema: await schemaVersion(engine.catalog, table.tableId, version), schemaVersion: version, indexes: [],
      encoderVersion: encoderForCompression.zstd, partition: 0,
      range: { startOffset: merge.startOffset, endOffset: merge.endOffset, reason: 'flush', recordCount: records.length, bytes: 0, files: [{ bucket: merge.bucket, records }] },
    });
    const newMerge = { startOffset: merge.startOffset, endOffset: merge.endOffset, sources: merge.sources, file: built.files[0]!, indexIds: [] };
    const liveBefore = await listFiles(engine.catalog, table.tableId, { includeReplaced: true });

    // Another owner's lease (or an old epoch) is refused by the same fence as a commit of ranges.
    await expect(commitMerge(engine.catalog, { ...lease, owner: 'compactor-b' }, newMerge)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await listFiles(engine.catalog, table.tableId, { includeReplaced: true })).toEqual(liveBefore);

    // Two at once under the lease: Postgres's row locks order them; the second finds its sources gone.
    const outcomes = await Promise.allSettled([commitMerge(engine.catalog, lease, newMerge), commitMerge(engine.catalog, lease, newMerge)]);
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(won.length).toBe(1);
    expect(lost.length).toBe(1);
    expect(lost[0]!.reason).toBeInstanceOf(MergeRefusedError);
    expect(String(lost[0]!.reason.message)).toMatch(/no longer live .*nothing was changed/);
    const mergedFiles = (await listFiles(engine.catalog, table.tableId)).filter((f) => f.sealReason === 'merge');
    expect(mergedFiles.length).toBe(1);
    expect(await tilingProblems(table)).toEqual([]);
    await checkTable(engine, table);

    // A merge over files that are not exactly the live files of its offsets is refused.
    const rest = (await listFiles(engine.catalog, table.tableId));
    if (rest.length >= 2) {
      await expect(commitMerge(engine.catalog, lease, { ...newMerge, startOffset: rest[0]!.startOffset, endOffset: rest[1]!.endOffset, sources: [rest[1]!.dataFileId] }))
        .rejects.toThrow(/not among its sources/);
    }
  });

  it('a merge takes the table\'s current encoder version and the newest schema version of its sources; sources of an older encoder keep theirs', async () => {
    const topic = await newTopic(engine, 1, 'compaction-encoder');
    const created = await testTable(engine, topic, { file_window: '20m', granularity: 'hour', merge_files: '3', merge_after: '1m' });
    const table = await findTable(engine.catalog, created.name);
    const older = 'offsetlake-parquet@5/node-zstd@2.0.0/level-1';
    for (let round = 0; round < 3; round += 1) {
      await produce(engine.kafka, topic, Array.from({ length: 10 }, (_, j) => ({ key: null, value: JSON.stringify({ round, j }), partition: 0, timestamp: t0 + round * 60_000 + j })));
      await indexPartition(testRuntime(engine, `enc-${topic}`, { build: rangeBuilder(engine.catalog, undefined, round === 1 ? older : undefined) }), table, 0);
    }
    const sources = await listFiles(engine.catalog, table.tableId);
    expect(new Set(sources.map((f) => f.encoderVersion))).toEqual(new Set([older, encoderForCompression.zstd]));
    const result = await compactPartition({ catalog: engine.catalog, source: source() }, table, 0, { owner: 'compactor-enc' });
    expect(result.merges.length).toBe(1);
    const [merged] = await listFiles(engine.catalog, table.tableId);
    expect(merged!.encoderVersion).toBe(encoderForCompression.zstd);
    expect(merged!.schemaVersion).toBe(Math.max(...sources.map((f) => f.schemaVersion)));
    await checkTable(engine, table);
    // The older file keeps its encoder and rebuilds with it.
    const replaced = (await listFiles(engine.catalog, table.tableId, { includeReplaced: true })).filter((f) => f.encoderVersion === older);
    expect(replaced.length).toBe(1);
    await rebuildFile(engine.catalog, source(), table, replaced[0]!);
  });

  it('run --once returns with compaction caught up: no merge left in any plan, every record once', async () => {
    // The runner indexes every table of its catalog: it gets a catalog of its own.
    const own = await testEngine('compaction_run');
    try {
      const topic = await newTopic(own, 2, 'compaction-run');
      const created = await testTable(own, topic, { file_window: '20m', granularity: 'hour', merge_files: '3', merge_after: '1m' });
      const runOnce = async () => {
        const lines: string[] = [];
        await new LocalRunner(own, rangeBuilder(own.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, (line) => lines.push(line)).run();
        return lines;
      };
      for (let round = 0; round < 5; round += 1) {
        await produce(own.kafka, topic, Array.from({ length: 20 }, (_, j) => ({ key: `k${j}`, value: JSON.stringify({ round, j }), partition: j % 2, timestamp: t0 + round * 60_000 + j })));
        // each run --once flushes one range per partition; the last ones merge them
        const lines = await runOnce();
        if (round === 4) expect(lines.filter((line) => /merged \d+ files/.test(line)).length).toBeGreaterThanOrEqual(2);
      }
      const table = await findTable(own.catalog, created.name);
      for (const p of [0, 1]) {
        const plan = planMerges(await mergeCandidates(own.catalog, table.tableId, p), { fileBytes: table.settings.file_bytes, mergeFiles: 3, mergeAfterMs: 60_000, granularity: 'hour' }, Date.now());
        expect(plan).toEqual([]);
      }
      const live = await listFiles(own.catalog, table.tableId);
      expect(live.length).toBe(2);
      const check = await checkTable(own, table);
      expect([...check.committedOffsets.values()].reduce((n, offsets) => n + offsets.length, 0)).toBe(100);
    } finally {
      await own.close();
    }
  });

  it('a merge across a schema change: the merged file takes the newer table-schema version, and old records have the added column null', async () => {
    const topic = await newTopic(engine, 1, 'compaction-schema');
    const created = await testTable(engine, topic, { file_window: '20m', granularity: 'hour', merge_files: '3', merge_after: '1m' }, 'avro');
    const table = await findTable(engine.catalog, created.name);
    const v1 = await registerSchema(`${topic}-value`, JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'n', type: 'long' }] }), 'AVRO');
    const v2 = await registerSchema(`${topic}-value`, JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'n', type: 'long' }, { name: 'note', type: ['null', 'string'], default: null }] }), 'AVRO');
    const runtime = testRuntime(engine, `schema-${topic}`);
    for (let round = 0; round < 3; round += 1) {
      // rounds 0 and 1 written with the first schema, round 2 with the second (union branch 1: a string)
      const value = (i: number) => Buffer.from(round < 2 ? wire(v1.id, [...avro.long(i)]) : wire(v2.id, [...avro.long(i), ...avro.long(1), ...avro.string(`note ${i}`)]));
      await produce(engine.kafka, topic, Array.from({ length: 10 }, (_, j) => ({ key: null, value: value(round * 10 + j), partition: 0, timestamp: t0 + round * 60_000 + j })));
      await indexPartition(runtime, table, 0);
    }
    const sources = await listFiles(engine.catalog, table.tableId);
    expect(sources).toHaveLength(3);
    const versions = sources.map((f) => f.schemaVersion);
    expect(versions[2]).toBeGreaterThan(versions[0]!);
    const result = await compactPartition({ catalog: engine.catalog, source: source() }, table, 0, { owner: 'compactor-schema' });
    expect(result.merges).toHaveLength(1);
    const [merged] = await listFiles(engine.catalog, table.tableId);
    expect(merged!.schemaVersion).toBe(Math.max(...versions));
    const check = await checkTable(engine, table);
    const rows = check.rowsByFile.get(merged!.dataFileId)!;
    expect(rows.map((row) => [Number(row.n), row.note ?? null])).toEqual(Array.from({ length: 30 }, (_, i) => [i, i >= 20 ? `note ${i}` : null]));
    const checks = await checkFiles(engine.catalog, source(), [table], (t) => listFiles(engine.catalog, t.tableId));
    expect(checks.filter((c) => c.problem || c.statistics.length || c.pieces.length || c.indexEntries.length)).toEqual([]);
  });

  it('the command line: table create --merge_files/--merge_after, run --once merges (on a build worker), files shows merged files and --replaced what they replaced', async () => {
    const own = await testEngine('compaction_cli');
    try {
      const topic = await newTopic(own, 1, 'compaction-cli');
      const url = own.config.databaseUrl;
      const created = await runCli(url, ['table', 'create', 'merged_cli', '--topic', topic, '--file_window', '20m', '--merge-files', '3', '--merge_after', '1m', '--json']);
      expect(created.code, created.stderr).toBe(0);
      for (let round = 0; round < 3; round += 1) {
        await produce(own.kafka, topic, Array.from({ length: 10 }, (_, j) => ({ key: null, value: JSON.stringify({ round, j }), partition: 0, timestamp: t0 + round * 60_000 + j })));
        const run = await runCli(url, ['run', '--once', '--build-threads', '0']);
        expect(run.code, run.stderr).toBe(0);
        // the hour is long past (aged): each run merges what the bucket has, the previous merged file included
        if (round === 1) expect(run.stderr).toMatch(/merged 2 files of offsets \[\d+, \d+\) into file \d+ \(20 records\)/);
        if (round === 2) expect(run.stderr).toMatch(/merged 2 files of offsets \[\d+, \d+\) into file \d+ \(30 records\)/);
      }
      const live = JSON.parse((await runCli(url, ['files', 'merged_cli', '--json'])).stdout) as { dataFileId: string; sealReason: string; replacedFiles: number }[];
      expect(live.map((f) => [f.sealReason, f.replacedFiles])).toEqual([['merge', 2]]);
      const all = JSON.parse((await runCli(url, ['files', 'merged_cli', '--replaced', '--json'])).stdout) as { dataFileId: string; replacedBy: string | null }[];
      expect(all).toHaveLength(5);
      expect(all.filter((f) => String(f.replacedBy) === String(live[0]!.dataFileId))).toHaveLength(2);
      expect(all.filter((f) => f.replacedBy !== null)).toHaveLength(4);
      const text = await runCli(url, ['files', 'merged_cli', '--replaced']);
      expect(text.stdout).toMatch(/of 2 files/);
      expect(text.stdout).toMatch(new RegExp(`into ${live[0]!.dataFileId}`));
      const settings = JSON.parse((await runCli(url, ['table', 'list', '--json'])).stdout) as unknown;
      expect(JSON.stringify(settings)).toMatch(/"merge_files":"?3/);
      const check = await runCli(url, ['check', 'merged_cli']);
      expect(check.code, check.stderr + check.stdout).toBe(0);
    } finally {
      await own.close();
    }
  });
});
