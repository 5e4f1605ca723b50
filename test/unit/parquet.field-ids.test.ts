/**
 * Encoder v5 (issue 47): every node of a file's schema carries the id its Iceberg schema
 * gives it, nested groups included (a struct inside a struct, a list's element, a list of
 * lists), as pyarrow reads the file's footer. Encoder v4's files keep ids on top-level
 * columns and leaves only: Trino and Daft, which map nested fields by id, lost the rest.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type Column, encodeParquet, kafkaColumnArrays, encoderOf } from '../../src/parquet/index.js';
import { defaultSettings } from '../../src/table/settings.js';
import { icebergSchema, type IcebergType } from '../../src/iceberg/schema.js';
import { withIds } from '../../src/schema/merge.js';
import { fieldIds, initialSchema, type TableSchema } from '../../src/schema/table-schema.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const dir = mkdtempSync(join(tmpdir(), 'offsetlake-field-ids-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = fileURLToPath(new URL('./parquet_field_ids.py', import.meta.url));

interface Node {
  name: string;
  id: number | null;
  children: Node[];
}

function readTree(bytes: Uint8Array): Node[] {
  const path = join(dir, 'file.parquet');
  writeFileSync(path, bytes);
  return JSON.parse(execFileSync('python3', [script, path], { encoding: 'utf8' })) as Node[];
}

/** The tree of the Iceberg schema by the names the file uses (a list's element is `element`). */
function icebergTree(schema: TableSchema): Node[] {
  const children = (type: IcebergType): Node[] => {
    if (typeof type === 'string') return [];
    if (type.type === 'list') return [{ name: 'element', id: type['element-id'], children: children(type.element) }];
    return type.fields.map((field) => ({ name: field.name, id: field.id, children: children(field.type) }));
  };
  // the file names a column by its own name; Iceberg renames `_partition` only
  return icebergSchema(schema, 1).fields.map((field, i) => ({ name: schema.columns[i]!.name, id: field.id, children: children(field.type) }));
}

const scalar = (kind: 'string' | 'double' | 'int32' | 'int64') => ({ type: { kind }, nullable: true }) as const;
const nested: Column[] = [
  {
    name: 'addr',
    nullable: true,
    type: { kind: 'struct', fields: [{ name: 'street', ...scalar('string') }, { name: 'geo', nullable: true, type: { kind: 'struct', fields: [{ name: 'lat', ...scalar('double') }, { name: 'lon', ...scalar('double') }] } }] },
  },
  {
    name: 'items',
    nullable: true,
    type: {
      kind: 'list',
      element: { nullable: true, type: { kind: 'struct', fields: [{ name: 'sku', ...scalar('string') }, { name: 'tags', nullable: true, type: { kind: 'list', element: scalar('string') } }] } },
    },
  },
  { name: 'matrix', nullable: false, type: { kind: 'list', element: { nullable: false, type: { kind: 'list', element: scalar('int64') } } } },
];
const nestedRows = Array.from({ length: 50 }, (_, i) => ({
  addr: i % 5 === 0 ? null : { street: `s${i}`, geo: i % 3 === 0 ? null : { lat: i / 7, lon: -i } },
  items: i % 4 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => ({ sku: `k${k}`, tags: k ? [`t${i}`, null] : null })),
  matrix: Array.from({ length: i % 2 }, () => [BigInt(i), null]),
}));

describe(`${encoderVersion} files carry the Iceberg schema's id on every node (pyarrow's PARQUET:field_id)`, () => {
  it('structs in structs, lists of structs, lists of lists', () => {
    const schema = withIds({ columns: [], leafIds: {}, nodeIds: {} }, nested);
    const file = encodeParquet(schema.columns, nestedRows, { rowGroupRows: 20, fieldIds: fieldIds(schema) });
    const tree = readTree(file.bytes);
    expect(tree).toEqual(icebergTree(schema));
    // every node has one, and no two nodes share one
    const ids: (number | null)[] = [];
    const visit = (n: Node): void => void (ids.push(n.id), n.children.forEach(visit));
    tree.forEach(visit);
    expect(ids).not.toContain(null);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(13); // addr 5, items 5, matrix 3
  });

  it("a json table's `_headers` element struct", () => {
    const schema = initialSchema('json');
    const file = encodeParquet(schema.columns, kafkaColumnArrays(0, [{ offset: 0n, timestamp: 1_700_000_000_000, key: null, value: null, headers: [['h', null]] }], 'json'), {
      rowGroupRows: 10, fieldIds: fieldIds(schema),
    });
    const tree = readTree(file.bytes);
    expect(tree).toEqual(icebergTree(schema));
    const headers = tree.find((n) => n.name === '_headers')!;
    expect(headers.children[0]!.id).toBe(schema.nodeIds!['_headers.list.element']);
  });

  it('encoder v4 files keep ids on top-level columns and leaves only', () => {
    const schema = withIds({ columns: [], leafIds: {}, nodeIds: {} }, nested);
    const file = encodeParquet(schema.columns, nestedRows, { rowGroupRows: 20, fieldIds: fieldIds(schema), encoderVersion: 'offsetlake-parquet@4/lz4-napi@2.10.0' });
    const addr = readTree(file.bytes).find((n) => n.name === 'addr')!;
    expect(addr.id).toBe(schema.columns[0]!.id);
    expect(addr.children.find((n) => n.name === 'geo')!.id).toBeNull();
    expect(addr.children.find((n) => n.name === 'geo')!.children.map((n) => n.id)).toEqual([schema.leafIds['addr.geo.lat'], schema.leafIds['addr.geo.lon']]);
  });
});
