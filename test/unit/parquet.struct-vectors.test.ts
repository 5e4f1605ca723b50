/**
 * A struct of scalar fields given as StructVectors (a vector or an array per field, a
 * registry table's record field decoded without an object per row) is written as the
 * same struct given as one object per row: the same file, byte for byte, for every
 * encoder, whatever the struct's and its fields' nullability, with null rows, null fields
 * and vectors of every kind.
 */
import { describe, expect, it } from 'vitest';
import { ByteSpans, type Column, encodeParquet, encoders, prepare, SafeInt64s, StructVectors } from '../../src/parquet/index.js';
import { seededRandom } from '../helpers/random.js';

describe('StructVectors: a struct of scalar fields as a vector per field', () => {
  it('gives the file that one object per row gives, for every encoder, nullable or not, with null rows and fields', () => {
    const rnd = seededRandom(31);
    const n = 1_500;
    for (const structNullable of [true, false]) {
      for (const fieldsNullable of [true, false]) {
        const column: Column = {
          name: 'st',
          nullable: structNullable,
          type: {
            kind: 'struct',
            fields: [
              { name: 's', type: { kind: 'string' }, nullable: fieldsNullable },
              { name: 'l', type: { kind: 'int64' }, nullable: fieldsNullable },
              { name: 'i', type: { kind: 'int32' }, nullable: fieldsNullable },
              { name: 'ok', type: { kind: 'boolean' }, nullable: true },
              { name: 'ts', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: fieldsNullable },
            ],
          },
        };
        const nullRow = (row: number) => structNullable && row % 7 === 3;
        const nullField = (row: number) => fieldsNullable && row % 5 === 1;
        const bytes = Buffer.from(Array.from({ length: n * 8 }, () => 97 + Math.floor(rnd() * 26)));
        const strings = Array.from({ length: n }, (_, row) => (nullField(row) ? null : bytes.subarray(row * 8, row * 8 + (row % 8))));
        const longs = Array.from({ length: n }, (_, row) => (nullField(row) ? null : Math.floor(rnd() * 2 ** 52) - 2 ** 51));
        const ints = Array.from({ length: n }, (_, row) => (nullField(row) ? null : row - 700));
        const flags = Array.from({ length: n }, (_, row) => (row % 4 === 0 ? null : row % 3 === 0));
        const stamps = Array.from({ length: n }, (_, row) => (nullField(row) ? null : 1_700_000_000_000 + row));
        const objects = Array.from({ length: n }, (_, row) => (nullRow(row) ? null : {
          s: strings[row], l: longs[row] === null ? null : BigInt(longs[row]!), i: ints[row], ok: flags[row], ts: stamps[row] === null ? null : BigInt(stamps[row]!),
        }));
        // a null row's fields are placeholders: whatever they hold is never read
        const spans = new ByteSpans([bytes], new Int32Array(n), Int32Array.from(strings, (_, row) => row * 8), Int32Array.from(strings, (s, row) => (nullRow(row) ? 0 : s === null ? -1 : s.length)));
        const asNumbers = (values: (number | null)[]) => new SafeInt64s(Float64Array.from(values, (v, row) => (nullRow(row) ? 0 : v === null ? NaN : v)));
        const vectors = new StructVectors(['s', 'l', 'i', 'ok', 'ts'], [spans, asNumbers(longs), ints, flags, asNumbers(stamps)], Uint8Array.from(objects, (o) => (o === null ? 1 : 0)));
        for (const version of Object.keys(encoders)) {
          const options = { rowGroupRows: 600, encoderVersion: version };
          const fromObjects = encodeParquet([column], prepare([column], { st: objects }), options);
          const fromVectors = encodeParquet([column], prepare([column], { st: vectors }), options);
          expect(Buffer.from(fromVectors.sha256).toString('hex'), `${version}, struct nullable ${structNullable}, fields nullable ${fieldsNullable}`).toBe(Buffer.from(fromObjects.sha256).toString('hex'));
          expect(fromVectors.byteLength).toBe(fromObjects.byteLength);
        }
      }
    }
  });
});
