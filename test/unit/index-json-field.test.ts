/**
 * A json field's text as the index takes it (src/indexes/json-field.ts) must be what
 * DuckDB's `_value->>'$.a.b'` gives for the same JSON, for every value the index claims
 * to know (unknown ones are never used to skip). DuckDB, not JSON.parse, is the judge:
 * it keeps the first of repeated names, integers beyond 2^53 exactly, escapes unescaped.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { jsonFieldText, unknownText } from '../../src/indexes/json-field.js';
import { seededRandom } from '../helpers/random.js';

function randomJson(random: () => number, depth: number): string {
  const roll = random();
  const names = ['a', 'b', 'c', 'é', 'a b', 'q"x'];
  if (depth > 0 && roll < 0.35) {
    const members = Array.from({ length: Math.floor(random() * 4) }, () => `${JSON.stringify(names[Math.floor(random() * names.length)])}${random() < 0.2 ? ' : ' : ':'}${randomJson(random, depth - 1)}`);
    return `{${members.join(random() < 0.2 ? ' , ' : ',')}}`;
  }
  if (depth > 0 && roll < 0.45) return `[${Array.from({ length: Math.floor(random() * 3) }, () => randomJson(random, depth - 1)).join(',')}]`;
  const scalars = ['0', '-0', '7', '-12', '12345678901234567890', '18446744073709551616', '-9223372036854775808', '-9223372036854775809', '1.5', '1e3', '2E-2', 'true', 'false', 'null',
    '"plain"', '""', '"with \\"quote\\""', '"\\u00e9t\\u00e9"', '"\\ud83d\\ude00"', '"tab\\there"', '"ünï"', '"a\\/b"'];
  return scalars[Math.floor(random() * scalars.length)]!;
}

describe('json field text', () => {
  it('equals DuckDB\'s ->> text for every field it claims to know, over 3,000 random documents and paths', async () => {
    const random = seededRandom(11);
    const docs = Array.from({ length: 3_000 }, () => randomJson(random, 3));
    const paths = [['a'], ['b'], ['a', 'b'], ['a', 'a'], ['c', 'a', 'b'], ['é'], ['a b'], ['q"x']];
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      let known = 0;
      for (const path of paths) {
        const jsonPath = `$.${path.map((p) => `"${p.replace(/"/g, '\\"')}"`).join('.')}`;
        await connection.run('CREATE OR REPLACE TABLE docs (i INTEGER, doc VARCHAR)');
        const appender = await connection.createAppender('docs');
        docs.forEach((doc, i) => {
          appender.appendInteger(i);
          appender.appendVarchar(doc);
          appender.endRow();
        });
        appender.closeSync();
        const result = await connection.runAndReadAll(`SELECT i, doc::JSON->>'${jsonPath.replace(/'/g, "''")}' AS text FROM docs ORDER BY i`);
        const duck = result.getRowObjectsJson().map((row) => row.text as string | null);
        docs.forEach((doc, i) => {
          const ours = jsonFieldText(new TextEncoder().encode(doc), path);
          if (ours === unknownText) return;
          known += 1;
          expect(ours === null ? null : new TextDecoder().decode(ours), `${doc} ${jsonPath}`).toBe(duck[i]);
        });
      }
      expect(known).toBeGreaterThan(5_000);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});
