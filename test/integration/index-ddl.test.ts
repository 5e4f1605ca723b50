/**
 * Index DDL against the real stack: `table create --index` and `sql "CREATE INDEX …"`
 * make indexes whose entries every new file carries, in the file's transaction; the
 * specification's type rules and our limits are refused with sentences naming the
 * column, its type and what it accepts; DROP INDEX and retention take the entries away.
 * What the entries say is checked against the rebuilt files' rows as hyparquet reads them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { produce } from '../../src/kafka/produce.js';
import { deleteRecords } from '../../src/kafka/topics.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { findTable } from '../../src/catalog/tables.js';
import { indexEntryParts, tableIndexes } from '../../src/catalog/indexes.js';
import { createIndex, dropIndex } from '../../src/catalog/index-ddl.js';
import { parseInlineIndex } from '../../src/indexes/ddl.js';
import { decodeHeader, HEADER_PART } from '../../src/indexes/header.js';
import { encodeKey, postingBucket } from '../../src/indexes/keys.js';
import { postingGranules } from '../../src/indexes/postings.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { checkRetention } from '../../src/retention/check.js';
import { indexPartition, newTopic, testEngine, testRuntime, testTable } from '../helpers/engine.js';
import { rebuiltRows } from '../helpers/table-audit.js';
import { encodeWith, registerSchema } from '../helpers/registry.js';
import { runCli, type CliRun } from '../helpers/cli.js';
import { ReaderService } from '../../src/reader/service.js';
import { kafkaSource } from '../../src/kafka/source.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('indexddl');
});
afterAll(() => engine.close());

const offsetlake = (...args: string[]): Promise<CliRun> => runCli(engine.config.databaseUrl, args);

const utf8 = new TextEncoder();

describe('index DDL', () => {
  it('table create --index makes active indexes; run --once gives every file their entries; the postings of _key name exactly the granules whose rows hold the key', async () => {
    const topic = await newTopic(engine, 2, 'idx');
    const created = await offsetlake('table', 'create', 'clicks', '--topic', topic, '--row_group_rows', '20', '--file_window', '1h',
      '--index', 'by_key (_key) USING POSTINGS', '--index', 'by_user (_value.user, _headers.src) USING BLOOM GRANULE 40', '--index', 'by_time (_timestamp, _offset) USING MINMAX', '--json');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout, created.stderr).toMatch(/^{/);
    expect(JSON.parse(created.stdout).indexes.map((i: { name: string; state: string; granuleRows: number }) => [i.name, i.state, i.granuleRows])).toEqual([
      ['by_key', 'active', 20], ['by_user', 'active', 40], ['by_time', 'active', 20],
    ]);
    await produce(engine.kafka, topic, Array.from({ length: 300 }, (_, i) => ({
      key: `k${i % 37}`, value: JSON.stringify({ user: `u${i % 11}`, i }), headers: [['src', 'app']] as [string, string][], partition: i % 2, timestamp: Date.UTC(2026, 10, 1, 12) + i,
    })));
    expect((await offsetlake('run', '--once')).code).toBe(0);

    const table = await findTable(engine.catalog, 'clicks');
    const files = await listFiles(engine.catalog, table.tableId);
    const byKey = (await tableIndexes(engine.catalog, table.tableId)).find((i) => i.name === 'by_key')!;
    const headers = await indexEntryParts(engine.catalog, byKey.indexId, 'history', HEADER_PART);
    expect(new Set(headers.keys())).toEqual(new Set(files.map((f) => f.dataFileId)));
    let checked = 0;
    for (const file of files) {
      const rows = await rebuiltRows(engine, table, file);
      const header = decodeHeader(headers.get(file.dataFileId)!);
      expect(header.rows).toBe(rows.length);
      expect(header.granules).toBe(Math.ceil(rows.length / 20));
      for (const k of ['k0', 'k5', 'k36', 'nobody']) {
        const expected = [...new Set(rows.flatMap((row, r) => (Buffer.from(row._key as Uint8Array).toString() === k ? [Math.floor(r / 20)] : [])))];
        const key = encodeKey(['binary'], [utf8.encode(k)]);
        const part = (await indexEntryParts(engine.catalog, byKey.indexId, 'history', postingBucket(key, byKey.postingBuckets!), [file.dataFileId])).get(file.dataFileId);
        expect(part ? postingGranules(part, key) : [], `${k} in file ${file.dataFileId}`).toEqual(expected);
        checked += expected.length;
      }
    }
    expect(checked).toBeGreaterThan(0);

    const shown = await offsetlake('sql', 'SHOW INDEXES ON clicks', '--json');
    expect(JSON.parse(shown.stdout).map((i: { ddl: string; filesWithEntries: number; filesWithout: number }) => [i.ddl, i.filesWithEntries, i.filesWithout])).toEqual([
      ['CREATE INDEX by_key ON clicks (_key) USING POSTINGS SCOPE HISTORY GRANULE 20', files.length, 0],
      ['CREATE INDEX by_time ON clicks (_timestamp, _offset) USING MINMAX SCOPE HISTORY GRANULE 20', files.length, 0],
      ['CREATE INDEX by_user ON clicks (_value.user, _headers.src) USING BLOOM SCOPE HISTORY GRANULE 40 WITH (false_positive_rate = 0.01)', files.length, 0],
    ]);

    // A standalone index on a table with files: the command drives its backfill and says how it goes.
    const later = await offsetlake('sql', 'CREATE INDEX by_i ON clicks (_value.i) USING POSTINGS', '--json');
    expect(later.code, later.stderr).toBe(0);
    expect(later.stderr).toContain(`declared index by_i on clicks: giving ${files.length} files their entries from Kafka`);
    expect(later.stderr.match(/index by_i: (\w+) → (\w+)/g)).toEqual(['index by_i: declared → building', 'index by_i: building → backfilling', 'index by_i: backfilling → catching_up', 'index by_i: catching_up → active']);
    expect(later.stderr).toContain(`index by_i: ${files.length}/${files.length} files`);
    expect(JSON.parse(later.stdout)).toMatchObject({ created: true, index: { name: 'by_i', state: 'active' }, backfill: { done: true, files: files.length } });
    const byI = (await tableIndexes(engine.catalog, table.tableId)).find((i) => i.name === 'by_i')!;
    expect(new Set((await indexEntryParts(engine.catalog, byI.indexId, 'history', HEADER_PART)).keys())).toEqual(new Set(files.map((f) => f.dataFileId)));
    expect((await offsetlake('sql', 'DROP INDEX by_i ON clicks')).code).toBe(0);

    const status = await offsetlake('status', 'clicks');
    expect(status.stderr).toMatch(new RegExp(`index clicks\\.by_key \\(POSTINGS\\): active, ${files.length} of ${files.length} files with entries, [0-9.]+ KiB in the catalog; reads used it 0 times, skipped it 0`));
    const metrics = await new ReaderService(engine.catalog, kafkaSource(engine.kafka)).status.indexes();
    expect(metrics.map((m) => [m.index, m.state, m.filesWithEntries, m.entryBytes > 0])).toEqual([['by_key', 'active', files.length, true], ['by_time', 'active', files.length, true], ['by_user', 'active', files.length, true]]);

    const dropped = await offsetlake('sql', 'DROP INDEX by_key ON clicks');
    expect(dropped.stdout).toContain('dropped index by_key on clicks and all its entries');
    expect((await engine.catalog.query('SELECT count(*)::int AS n FROM offsetlake.index_entry WHERE index_id = $1', [byKey.indexId])).rows[0].n).toBe(0);
    const again = await offsetlake('sql', 'DROP INDEX by_key ON clicks');
    expect([again.code, again.stderr.trim()]).toEqual([1, 'offsetlake sql: table clicks has no index called by_key (DROP INDEX IF EXISTS by_key ON clicks accepts that)']);
    expect((await offsetlake('sql', 'DROP INDEX IF EXISTS by_key ON clicks')).code).toBe(0);
  });

  it('refuses what an index cannot take, with a sentence naming the column, its type and what it accepts, and writes nothing', async () => {
    const topic = await newTopic(engine, 1, 'idxbad');
    const table = await testTable(engine, topic, { row_group_rows: '1000' });
    const refusals: [string, RegExp][] = [
      [`CREATE INDEX a ON ${table.name} (_timestamp) USING BLOOM SCOPE CURRENT`, /SCOPE CURRENT indexes the latest record per key, which needs a table that keeps current state/],
      [`CREATE INDEX a ON ${table.name} (_key) USING BLOOM GRANULE 1500`, /GRANULE 1500 is not a whole number of the table's row groups \(row_group_rows 1000\)/],
      [`CREATE INDEX a ON ${table.name} (_value) USING POSTINGS`, /column _value is json text, which no index accepts whole: index a field of it by path \(_value.field\)/],
      [`CREATE INDEX a ON ${table.name} (_headers) USING POSTINGS`, /index column "_headers": a header is named as _headers.NAME/],
      [`CREATE INDEX a ON ${table.name} (nothere) USING MINMAX`, /the table has no column nothere \(its columns: _partition, _offset, _timestamp, _key, _headers, _value, _error\)/],
      [`CREATE INDEX a ON ${table.name} (_key) USING MINMAX WITH (false_positive_rate = 0.1)`, /false_positive_rate is an option of BLOOM indexes/],
      [`CREATE INDEX a ON ${table.name} (_key, _key) USING BLOOM`, /names a column twice/],
      [`CREATE INDEX a ON ${table.name} _key USING BLOOM`, /expected "\(", found "_key"; the form is CREATE INDEX/],
    ];
    for (const [sql, message] of refusals) {
      const refused = await offsetlake('sql', sql);
      expect(refused.code, sql).toBe(2);
      expect(refused.stderr, sql).toMatch(message);
    }
    const badTable = await offsetlake('table', 'create', 'bad', '--topic', topic, '--index', 'x (_value) USING BLOOM');
    expect(badTable.code).not.toBe(0);
    expect(badTable.stderr).toMatch(/_value is json text/);
    expect((await engine.catalog.query("SELECT count(*)::int AS n FROM offsetlake.lake_table WHERE table_name = 'bad'")).rows[0].n).toBe(0);
    expect((await engine.catalog.query('SELECT count(*)::int AS n FROM offsetlake.secondary_index WHERE table_id = $1', [table.tableId])).rows[0].n).toBe(0);
  });

  it('on an Avro table, the specification\'s type rules: FLOAT64 and float accept MINMAX only, BOOL BLOOM and POSTINGS; nested leaves by path; lists and structs are refused', async () => {
    const topic = await newTopic(engine, 1, 'idxavro');
    const created = await testTable(engine, topic, {}, 'avro');
    const schema = await registerSchema(`${topic}-value`, JSON.stringify({
      type: 'record', name: 'Order', fields: [
        { name: 'id', type: 'long' }, { name: 'amount', type: 'double' }, { name: 'ratio', type: 'float' }, { name: 'ok', type: 'boolean' },
        { name: 'who', type: { type: 'record', name: 'Who', fields: [{ name: 'addr', type: { type: 'record', name: 'Addr', fields: [{ name: 'city', type: 'string' }] } }] } },
        { name: 'tags', type: { type: 'array', items: 'string' } },
      ],
    }), 'AVRO');
    await produce(engine.kafka, topic, [{ value: encodeWith(schema, { id: 1, amount: 2.5, ratio: 0.5, ok: true, who: { addr: { city: 'Oslo' } }, tags: ['a'] }) }]);
    const table = await findTable(engine.catalog, created.name);
    await indexPartition(testRuntime(engine, `avro-${topic}`), table);
    const refusals: [string, string][] = [
      ['amount) USING BLOOM', 'column amount is float64, which BLOOM does not accept: float64 accepts MINMAX'],
      ['ratio) USING POSTINGS', 'column ratio is float32, which POSTINGS does not accept: float32 accepts MINMAX'],
      ['ok) USING MINMAX', 'column ok is boolean, which MINMAX does not accept: boolean accepts BLOOM and POSTINGS'],
      ['tags) USING POSTINGS', 'column tags is a list; an index takes one scalar value per row, and a list holds any number of them'],
      ['who) USING POSTINGS', 'column who is a struct; an index takes one scalar value per row: index one of its fields (a.b)'],
      ['who.addr.town) USING POSTINGS', 'column who.addr.town: who.addr has no field town (its fields: city)'],
    ];
    for (const [tail, message] of refusals) {
      const refused = await offsetlake('sql', `CREATE INDEX bad ON ${table.name} (${tail}`);
      expect(refused.stderr.trim(), tail).toBe(`offsetlake sql: ${message}`);
    }
    for (const [name, tail] of [['by_amount', 'amount) USING MINMAX'], ['by_ok', 'ok) USING BLOOM'], ['by_city', 'who.addr.city, id) USING POSTINGS']]) {
      const made = await offsetlake('sql', `CREATE INDEX ${name} ON ${table.name} (${tail}`, '--no-wait', '--json');
      expect(made.code, made.stderr).toBe(0);
      expect(JSON.parse(made.stdout)).toMatchObject({ created: true, index: { name, state: 'declared' }, filesToBackfill: 1 });
    }
  });

  it('a CREATE INDEX committed while a range was being built makes that commit build again, with the index: no file of an index with entries lacks them', async () => {
    const topic = await newTopic(engine, 1, 'idxrace');
    const created = await testTable(engine, topic);
    await produce(engine.kafka, topic, Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i }) })));
    const build = rangeBuilder(engine.catalog);
    let builds = 0;
    const runtime = testRuntime(engine, `race-${topic}`, {
      build: async (table, partition, range) => {
        const built = await build(table, partition, range);
        // The first build read no index; the index lands before its commit.
        if (builds++ === 0) await createIndex(engine.catalog, table.name, parseInlineIndex('late (_key) USING POSTINGS'));
        return built;
      },
    });
    const table = await findTable(engine.catalog, created.name);
    await indexPartition(runtime, table);
    expect(builds).toBe(2);
    const [index] = await tableIndexes(engine.catalog, table.tableId);
    expect(index!.state).toBe('active');
    const files = await listFiles(engine.catalog, table.tableId);
    expect(files.length).toBeGreaterThan(0);
    const headers = await indexEntryParts(engine.catalog, index!.indexId, 'history', HEADER_PART);
    expect(new Set(headers.keys())).toEqual(new Set(files.map((f) => f.dataFileId)));
  });

  it('a DROP INDEX committed while a range was being built with its entries leaves the commit whole, without them', async () => {
    const topic = await newTopic(engine, 1, 'idxdrop');
    const created = await testTable(engine, topic);
    await createIndex(engine.catalog, created.name, parseInlineIndex('gone (_key) USING BLOOM'));
    await produce(engine.kafka, topic, Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i }) })));
    const build = rangeBuilder(engine.catalog);
    let dropped = false;
    const runtime = testRuntime(engine, `drop-${topic}`, {
      build: async (table, partition, range) => {
        const built = await build(table, partition, range);
        if (!dropped) {
          dropped = true;
          expect(built.indexIds).toHaveLength(1);
          await dropIndex(engine.catalog, table.name, 'gone');
        }
        return built;
      },
    });
    const table = await findTable(engine.catalog, created.name);
    await indexPartition(runtime, table);
    expect(dropped).toBe(true);
    expect((await listFiles(engine.catalog, table.tableId)).reduce((n, f) => n + Number(f.recordCount), 0)).toBe(30);
    expect((await engine.catalog.query('SELECT count(*)::int AS n FROM offsetlake.index_entry e JOIN offsetlake.data_file f USING (data_file_id) WHERE f.table_id = $1', [table.tableId])).rows[0].n).toBe(0);
  });

  it('files that retention expires take their index entries with them', async () => {
    const topic = await newTopic(engine, 1, 'idxexp');
    const created = await testTable(engine, topic, { file_bytes: '2KiB' });
    await createIndex(engine.catalog, created.name, parseInlineIndex('k (_key) USING BLOOM'));
    await produce(engine.kafka, topic, Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i, pad: 'p'.repeat(200) }) })));
    const table = await findTable(engine.catalog, created.name);
    await indexPartition(testRuntime(engine, `exp-${topic}`), table);
    const files = await listFiles(engine.catalog, table.tableId);
    expect(files.length).toBeGreaterThan(3);
    const cut = files[2]!.startOffset;
    await deleteRecords(engine.kafka, topic, 0, cut);
    expect((await checkRetention(engine.catalog, engine.kafka, { table: table.name })).expiredFiles).toBe(2);
    const [index] = await tableIndexes(engine.catalog, table.tableId);
    const withEntries = [...(await indexEntryParts(engine.catalog, index!.indexId, 'history', HEADER_PART)).keys()];
    expect(new Set(withEntries)).toEqual(new Set(files.slice(2).map((f) => f.dataFileId)));
  });
});

