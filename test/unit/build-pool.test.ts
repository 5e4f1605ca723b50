/**
 * Builds on worker threads (src/files/pool.ts) give the bytes of a build on this thread:
 * records cross packed (src/files/record-transfer.ts) and come back as the same records;
 * each chunk a worker hands back equals the whole file's chunk (its bytes, and the sha256
 * taken here with node:crypto over the whole file, as the catalog holds it), and a chunk
 * whose sha256 differs comes back as a mismatch naming its column.
 */
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { TableRecord } from '../../src/table/record.js';
import { resolveSettings, type TableFormat, defaultSettings } from '../../src/table/settings.js';
import { buildRangeFiles, encodeFile } from '../../src/files/files.js';
import { sealRange } from '../../src/ranges/sealer.js';
import { checkedChunks, leafColumns, type ChunkJob, type ExpectedChunk } from '../../src/files/granule-chunks.js';
import { BuildPool } from '../../src/files/pool.js';
import { packRecords, unpackRecords } from '../../src/files/record-transfer.js';
import { fileLayout, encoderOf } from '../../src/parquet/index.js';
import type { ByteSpanColumn, KafkaRecord } from '../../src/kafka/record.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import { initialSchema, type TableSchema } from '../../src/schema/table-schema.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import { avro, wire } from '../helpers/spec-encoding.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const table = (format: TableFormat): TableRecord => ({ tableId: 1n, name: 't', topic: 't', format, settings: resolveSettings({}), createdAt: new Date(0), topicId: null });

function record(i: number, value: Uint8Array | string | null, extra: Partial<KafkaRecord> = {}): KafkaRecord {
  return { offset: BigInt(100 + 3 * i), timestamp: Date.UTC(2026, 0, 1) + i * 7, key: Buffer.from(`k${i}`), value: typeof value === 'string' ? Buffer.from(value) : value, headers: [], ...extra };
}

const jsonRecords = [
  record(0, '{"a":1}', { headers: [['h', Buffer.from('v')], ['n', null], ['h', Buffer.alloc(0)]] }),
  record(1, 'not json'),
  record(2, null, { key: null }),
  record(3, '[1,2,{"b":"\u00e9"}]', { key: Buffer.alloc(0) }),
  ...Array.from({ length: 200 }, (_, i) => record(4 + i, JSON.stringify({ i, s: 'x'.repeat(i % 50) }))),
];

const registered: RegistrySchema = { id: 7, type: 'AVRO', schema: JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'n', type: 'long' }, { name: 's', type: 'string' }] }), references: [] };
const avroSchema = mergeRegistrySchemas(initialSchema('avro'), 'avro', [{ schema: registered, sides: new Set(['value'] as const) }]);
const avroRecords = [
  record(0, Buffer.from(wire(7, [...avro.long(5), ...avro.string('five')]))),
  record(1, Buffer.from(wire(7, [...avro.long(6)]))), // truncated: an error row
  record(2, null),
  record(3, Buffer.from(wire(7, [...avro.long(-1), ...avro.string('')])), { headers: [['h', null]] }),
];

/** The job for some leaves of the one-row-group file of `records`, with what the whole file holds for them. */
function jobFor(format: TableFormat, schema: TableSchema, records: KafkaRecord[], leaves: number[]): { job: ChunkJob; whole: Uint8Array } {
  const whole = encodeFile(table(format), schema, 3, records, encoderVersion);
  const layout = fileLayout(whole.footer, whole.byteLength);
  if ('problem' in layout) throw new Error(layout.problem);
  const places = layout.rowGroups[0]!.chunks;
  const expected: ExpectedChunk[] = leaves.map((leaf) => ({
    leaf, path: places[leaf]!.path, size: places[leaf]!.end - places[leaf]!.start,
    sha256: createHash('sha256').update(whole.bytes.subarray(places[leaf]!.start, places[leaf]!.end)).digest(),
  }));
  return { job: { table: table(format), schema, partition: 3, encoderVersion, records, expected, wantFile: false }, whole: whole.bytes };
}

/** A record's fields, bytes as hex: what must cross unchanged. */
const tuple = (r: KafkaRecord) => [r.offset, r.timestamp, r.key && Buffer.from(r.key).toString('hex'), r.value && Buffer.from(r.value).toString('hex'), r.headers.map(([n, v]) => [n, v && Buffer.from(v).toString('hex')])];

const pool = new BuildPool(2);
afterAll(() => pool.close());

describe('build pool: chunks built on worker threads are the chunks built here', () => {
  it('records packed for a worker unpack as columns to the same offsets, timestamps, keys, values and headers (nulls and empty bytes kept apart)', () => {
    const back = unpackRecords(packRecords(jsonRecords));
    if (!('count' in back)) throw new Error('records that need nothing beside their columns cross as columns');
    // read by hand: value i of a column is its source from its start, its length long (-1: null)
    const at = (column: ByteSpanColumn, i: number) => (column.lengths[i]! < 0 ? null : Buffer.from(column.sources[column.source[i]!]!.subarray(column.starts[i]!, column.starts[i]! + column.lengths[i]!)).toString('hex'));
    const unpacked = Array.from({ length: back.count }, (_, i) => [
      BigInt(back.offsets[i]!), back.timestamps[i], at(back.key, i), at(back.value, i),
      Array.from({ length: back.headerStarts[i + 1]! - back.headerStarts[i]! }, (_, k) => [Buffer.from(at(back.headerNames, back.headerStarts[i]! + k)!, 'hex').toString(), at(back.headerValues, back.headerStarts[i]! + k)]),
    ]);
    expect(unpacked).toEqual(jsonRecords.map(tuple));
    expect(at(back.key, 2)).toBeNull();
    expect(at(back.key, 3)).toBe('');
  });

  it('records whose columns would need them (an offset beyond 2^53, a header name that is not well-formed text) cross as the same records', () => {
    const odd = [record(0, 'x', { offset: 2n ** 60n, headers: [['\ud800', Buffer.from('v')], ['ok', null]] }), record(1, null, { offset: 2n ** 60n + 1n, key: null })];
    const back = unpackRecords(packRecords(odd));
    if ('count' in back) throw new Error('such records cross as records');
    expect(back.map(tuple)).toEqual(odd.map(tuple));
  });

  for (const [format, schema, records] of [['json', initialSchema('json'), jsonRecords], ['avro', avroSchema, avroRecords]] as const) {
    it(`${format}: every leaf alone and all leaves at once, on workers (several at a time) and here, equal the whole file's chunks`, async () => {
      const leafCount = leafColumns(schema).length;
      const sets = [...Array.from({ length: leafCount }, (_, leaf) => [leaf]), Array.from({ length: leafCount }, (_, leaf) => leaf)];
      const results = await Promise.all(sets.map(async (leaves) => {
        const { job, whole } = jobFor(format, schema, [...records], leaves);
        return { leaves, job, whole, here: checkedChunks(job), there: await pool.chunks(job) };
      }));
      for (const { leaves, job, whole, here, there } of results) {
        if ('mismatch' in here || 'mismatch' in there) throw new Error(`leaves ${leaves}: ${JSON.stringify('mismatch' in here ? here.mismatch : (there as { mismatch: unknown }).mismatch)}`);
        for (const chunk of job.expected) {
          const want = createHash('sha256').update(there.chunks.get(chunk.leaf)!).digest();
          expect(want.equals(Buffer.from(chunk.sha256)), `${chunk.path} from a worker`).toBe(true);
          expect(Buffer.from(here.chunks.get(chunk.leaf)!).equals(Buffer.from(there.chunks.get(chunk.leaf)!)), chunk.path).toBe(true);
        }
        expect(whole.byteLength).toBeGreaterThan(0);
      }
    }, 60_000);
  }

  for (const [format, schema, records] of [['json', initialSchema('json'), jsonRecords], ['avro', avroSchema, avroRecords]] as const) {
    it(`${format}: a sealed range of two buckets built on a worker gives the files, statistics and granules built here`, async () => {
      // records of two hours: one file each, whose granules count the bytes of the whole range
      const spread = records.map((r, i) => ({ ...r, timestamp: Date.UTC(2026, 0, 1, i % 2) }));
      const range = sealRange(spread[0]!.offset, spread.at(-1)!.offset + 1n, 'flush', spread, 'hour');
      expect(range.files).toHaveLength(2);
      const input = { table: table(format), schema, schemaVersion: 1, indexes: [], encoderVersion, partition: 3, range };
      expect(await pool.range(input)).toEqual(buildRangeFiles(input));
    }, 60_000);
  }

  it('a chunk whose sha256 is not the catalog\'s comes back from a worker as a mismatch naming its column; the one-row-group file comes back when asked', async () => {
    const { job } = jobFor('json', initialSchema('json'), jsonRecords, [3, 4]);
    const tampered = { ...job, expected: job.expected.map((chunk, i) => (i === 1 ? { ...chunk, sha256: new Uint8Array(32) } : chunk)) };
    expect(await pool.chunks(tampered)).toEqual({ mismatch: { column: job.expected[1]!.path, detail: 'sha256 differs' } });
    const withFile = await pool.chunks({ ...job, wantFile: true });
    if ('mismatch' in withFile) throw new Error('unexpected mismatch');
    expect(Buffer.from(withFile.fileBytes!).equals(Buffer.from((checkedChunks({ ...job, wantFile: true }) as { fileBytes: Uint8Array }).fileBytes))).toBe(true);
  }, 60_000);
});
