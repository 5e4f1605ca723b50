/**
 * A decoded value that becomes JSON text (issue 46): a JSON Schema table's untyped value,
 * an Avro record that contains itself. By the `engines` rules (encoder v4 on) it decodes the
 * same on every thread: nested at most JSON_NESTING_LIMIT arrays and objects, holding no
 * lone surrogate, else an error row with its reason; the `json-parse` rules (files of v3
 * and before) stay as they were. Depths and texts are made by construction here (the Avro
 * payloads byte by byte from the specification); that such text is JSON to DuckDB is
 * test/integration/poison-values.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { JSON_NESTING_LIMIT, untypedJsonProblem, encoderOf } from '../../src/parquet/index.js';
import { buildRangeFiles } from '../../src/files/files.js';
import { BuildPool } from '../../src/files/pool.js';
import { sealRange } from '../../src/ranges/sealer.js';
import { avroWriter } from '../../src/schema/decode-avro.js';
import { jsonSchemaWriter } from '../../src/schema/decode-json-schema.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { DecodeError } from '../../src/schema/writer.js';
import { resolveSettings, type TableFormat, defaultSettings } from '../../src/table/settings.js';
import type { TableRecord } from '../../src/table/record.js';
import { avro, wire } from '../helpers/spec-encoding.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const arrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number): string => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
/** Arrays and objects in turn, a scalar at the bottom: `[{"k":[{"k":1}]}]` is 4 deep. */
const mixed = (depth: number): string => {
  let text = '1';
  for (let d = depth; d >= 1; d--) text = d % 2 === 1 ? `[${text}]` : `{"k":${text}}`;
  return text;
};
const DEEPER = 'arrays and objects nest deeper than 1000 levels, the limit of a JSON value decoded into JSON text';
const LONE = 'a string holds a lone surrogate, which UTF-8 text cannot hold';

describe('untypedJsonProblem', () => {
  it('takes nesting up to the limit and refuses one level more, for arrays, objects and both in turn', () => {
    expect(JSON_NESTING_LIMIT).toBe(1000);
    for (const make of [arrays, objects, mixed]) {
      expect(untypedJsonProblem(JSON.parse(make(1000)))).toBeNull();
      expect(untypedJsonProblem(JSON.parse(make(1001)))).toBe(DEEPER);
    }
    // the deepest branch counts, wherever it is
    expect(untypedJsonProblem(JSON.parse(`[1,{"a":[]},${arrays(999)}]`))).toBeNull();
    expect(untypedJsonProblem(JSON.parse(`[1,{"a":[]},${arrays(1000)}]`))).toBe(DEEPER);
    expect(untypedJsonProblem(JSON.parse(`{"x":${arrays(1000)},"y":2}`))).toBe(DEEPER);
  });

  it('answers any depth without the call stack', () => {
    expect(untypedJsonProblem(JSON.parse(arrays(500_000)))).toBe(DEEPER);
  });

  it('refuses a lone surrogate in a string or a key, not a pair', () => {
    expect(untypedJsonProblem(JSON.parse('{"a":["\\ud83d\\ude00"],"\\ud83d\\ude00":"x"}'))).toBeNull();
    expect(untypedJsonProblem(JSON.parse('"\\ud800"'))).toBe(LONE);
    expect(untypedJsonProblem(JSON.parse('[1,{"a":"x\\udc00"}]'))).toBe(LONE);
    expect(untypedJsonProblem(JSON.parse('{"\\udfff":1}'))).toBe(LONE);
    expect(untypedJsonProblem(JSON.parse('{"__proto__":"\\ud800"}'))).toBe(LONE);
  });

  it('takes scalars', () => {
    for (const value of [null, true, 0, -1.5, '', 'text']) expect(untypedJsonProblem(value)).toBeNull();
  });
});

describe('a JSON Schema untyped field', () => {
  const schema = { id: 9, type: 'JSON' as const, references: [], schema: JSON.stringify({ type: 'object', properties: { n: { type: 'integer' }, doc: {} } }) };
  const payload = (doc: string): Buffer => Buffer.from(`{"n":1,"doc":${doc}}`);
  const decodeBy = (rules: 'engines' | 'json-parse', doc: string): unknown => {
    try {
      return jsonSchemaWriter(schema, rules).decode(payload(doc), 0);
    } catch (error) {
      if (error instanceof DecodeError) return error.message;
      throw error;
    }
  };

  it('by the engines rules: its JSON text up to the limit, an error row beyond it or with a lone surrogate', () => {
    for (const doc of [arrays(1000), objects(1000), mixed(1000), '{"a":"\\ud83d\\ude00"}']) {
      expect(decodeBy('engines', doc)).toEqual({ n: 1n, doc: JSON.stringify(JSON.parse(doc)) });
    }
    expect(decodeBy('engines', arrays(1000))).toEqual({ n: 1n, doc: arrays(1000) });
    for (const doc of [arrays(1001), objects(1001), arrays(5000), arrays(200_000)]) expect(decodeBy('engines', doc)).toBe(`$.doc: ${DEEPER}`);
    expect(decodeBy('engines', '["\\ud800"]')).toBe(`$.doc: ${LONE}`);
  });

  it('by the json-parse rules (files of encoders before v4): as before, a lone surrogate escaped again and depth left to JSON.stringify', () => {
    expect(decodeBy('json-parse', '["\\ud800"]')).toEqual({ n: 1n, doc: '["\\ud800"]' });
    expect(decodeBy('json-parse', arrays(1001))).toEqual({ n: 1n, doc: arrays(1001) });
  });
});

/** A list as an Avro record that contains itself: `{"v": int, "next": ["null", "Node"]}`. */
const nodeSchema: RegistrySchema = { id: 12, type: 'AVRO', references: [], schema: JSON.stringify({ type: 'record', name: 'Node', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'Node'] }] }) };
/** A list of `records` nodes, byte by byte: each node its int (zigzag varint, as a long) and the union's branch (1: Node), the last one's branch 0 (null). */
const nodePayload = (records: number): number[] => [...Array.from({ length: records - 1 }, (_, k) => [...avro.long(k), ...avro.long(1)]).flat(), ...avro.long(records - 1), ...avro.long(0)];
/** The JSON text of node k in a list of `records` nodes: a union inside it is wrapped (the branch's name over its value). */
const nodeText = (k: number, records: number): string => `{"v":${k},"next":${k === records - 1 ? 'null' : `{"Node":${nodeText(k + 1, records)}}`}}`;
/** The top record's `next` column: the union of null and one branch is the branch's value, JSON text of the record that contains itself. */
const nextText = (records: number): string | null => (records === 1 ? null : nodeText(1, records));

describe('an Avro record that contains itself', () => {
  const decodeBy = (rules: 'engines' | 'json-parse', records: number): unknown => {
    try {
      return avroWriter(nodeSchema, rules).decode(Uint8Array.from(nodePayload(records)), 0);
    } catch (error) {
      if (error instanceof DecodeError) return error.message;
      throw error;
    }
  };

  it('by the engines rules: JSON text while the value nests at most the limit (a node is two levels: its record and its branch), an error row beyond it', () => {
    expect(decodeBy('engines', 3)).toEqual({ v: 0, next: nextText(3) });
    // the value: the top record (1) and a branch and a record per further node (2 each): 1 + 2 * 499 = 999 levels
    expect(decodeBy('engines', 500)).toEqual({ v: 0, next: nextText(500) });
    for (const records of [501, 1_000, 5_000, 100_000]) expect(decodeBy('engines', records)).toBe(`Avro schema 12: ${DEEPER}`);
  });

  it('by the json-parse rules: as before', () => {
    expect(decodeBy('json-parse', 1_000)).toEqual({ v: 0, next: nextText(1_000) });
  });
});

describe('a build worker decodes deep values as the thread that reads Kafka does', () => {
  const pool = new BuildPool(1);
  afterAll(() => pool.close());
  const table = (format: TableFormat): TableRecord => ({ tableId: 1n, name: 't', topic: 't', format, settings: resolveSettings({}), createdAt: new Date(0), topicId: null });
  const jsonSchema: RegistrySchema = { id: 9, type: 'JSON', references: [], schema: JSON.stringify({ type: 'object', properties: { n: { type: 'integer' }, doc: {} } }) };
  const cases = {
    'json-schema': { registered: jsonSchema, payloads: [1000, 1001, 5000, 20_000, 200_000].map((depth) => [...Buffer.from(`{"n":1,"doc":${arrays(depth)}}`)]) },
    avro: { registered: nodeSchema, payloads: [500, 501, 3_000, 20_000].map(nodePayload) },
  } as const;
  for (const [format, { registered, payloads }] of Object.entries(cases) as [keyof typeof cases, (typeof cases)[keyof typeof cases]][]) {
    it(`${format}: the same file, the same error rows`, async () => {
      const schema = mergeRegistrySchemas(initialSchema(format), format, [{ schema: registered, sides: new Set(['value'] as const) }]);
      const records: KafkaRecord[] = payloads.map((payload, i) => ({ offset: BigInt(i), timestamp: Date.UTC(2026, 0, 1) + i, key: null, value: Buffer.from(wire(registered.id, [...payload])), headers: [] }));
      const range = sealRange(0n, BigInt(records.length), 'flush', records, 'hour');
      const input = { table: table(format), schema, schemaVersion: 1, indexes: [], encoderVersion, partition: 0, range };
      const here = buildRangeFiles(input);
      expect(await pool.range(input)).toEqual(here);
      const errorColumn = schema.columns.find((c) => c.name === '_error')!.id;
      const errors = here.files[0]!.columns.find((c) => c.columnId === errorColumn)!;
      expect(errors.valueCount - errors.nullCount).toBe(payloads.length - 1);
    }, 60_000);
  }
});
