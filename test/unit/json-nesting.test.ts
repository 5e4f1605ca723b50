/**
 * A JSON Schema table's untyped value becomes JSON text (issue 46). By the `engines` rules
 * (encoder v4 on) it decodes the same on every thread: nested at most JSON_NESTING_LIMIT
 * arrays and objects, holding no lone surrogate, else an error row with its reason; the
 * `json-parse` rules (files of v3 and before) stay as they were. The depths are counted
 * by construction here; that such text is JSON to DuckDB is test/integration/poison-values.
 */
import { describe, expect, it } from 'vitest';
import { JSON_NESTING_LIMIT, untypedJsonProblem } from '../../src/parquet/index.js';
import { jsonSchemaWriter } from '../../src/schema/decode-json-schema.js';
import { DecodeError } from '../../src/schema/writer.js';

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
