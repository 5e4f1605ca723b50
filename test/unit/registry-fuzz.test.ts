import { describe, expect, it } from 'vitest';
import type { TableRecord } from '../../src/table/record.js';
import { buildFile } from '../../src/files/files.js';
import { encoderOf } from '../../src/parquet/index.js';
import type { KafkaRecord } from '../../src/kafka/record.js';
import type { RegistryFormat } from '../../src/schema/decode.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import { resolveSettings, defaultSettings } from '../../src/table/settings.js';
import { fuzzSchemas, mutatedValue } from '../helpers/fuzz.js';
import { seededRandom } from '../helpers/random.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

describe('fuzz: no payload stops the build', () => {
  for (const format of ['avro', 'protobuf', 'json-schema'] as const satisfies RegistryFormat[]) {
    it(`${format}: 2,000 random and mutated wire-format values each become a row; the file builds and builds again to the same bytes`, () => {
      const spec = fuzzSchemas[format];
      const schema = mergeRegistrySchemas(initialSchema(format), format, [{ schema: { id: 1, type: spec.type, schema: spec.text, references: [] }, sides: new Set(['value', 'key']) }]);
      const table = { tableId: 1n, name: 'f', topic: 'f', format, settings: resolveSettings({ row_group_rows: '500' }) } as unknown as TableRecord;
      const rnd = seededRandom(format.length * 7919);
      const records: KafkaRecord[] = Array.from({ length: 2000 }, (_, i) => ({
        offset: BigInt(i),
        timestamp: Date.UTC(2026, 0, 1) + i,
        key: rnd() < 0.3 ? mutatedValue(format, 1, rnd) : null,
        value: rnd() < 0.05 ? null : mutatedValue(format, 1, rnd),
        headers: [],
      }));
      const first = buildFile(table, schema, 0, records, encoderVersion);
      const again = buildFile(table, schema, 0, records, encoderVersion);
      expect(Buffer.from(again.file.sha256).equals(Buffer.from(first.file.sha256))).toBe(true);
      const offsets = first.statistics.find((s) => s.column === '_offset')!;
      expect([offsets.valueCount, offsets.nullCount, offsets.min, offsets.max]).toEqual([2000, 0, '0', '1999']);
      // some values decode, some do not: the fuzzer reaches both paths
      const errors = first.statistics.find((s) => s.column === '_error')!;
      expect(errors.nullCount).toBeGreaterThan(100);
      expect(errors.valueCount - errors.nullCount).toBeGreaterThan(100);
    });
  }
});
