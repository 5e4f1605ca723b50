/**
 * Skipping an Avro value by its lengths, for the column decoder of a projection
 * (avro-columns.ts): a field no asked column comes from is passed over without making a
 * value of it, as avsc's resolver of a projection skips it (WriterSchema.project). Each
 * skip advances exactly as far as reading the value would; malformed bytes a read would
 * refuse may pass, which a projection allows (it decodes only payloads known to decode).
 */
import type avro from 'avsc';
import { notColumnar, readBlockCount, readInt, type AvroCursor } from './avro-binary.js';

export type Skip = (c: AvroCursor) => void;

const skipVarint: Skip = (c) => {
  const buf = c.bytes;
  while (buf[c.pos++]! & 0x80) {
    // to the varint's last byte
  }
};
const skipBy = (size: number): Skip => (c) => void (c.pos += size);
const skipBytes: Skip = (c) => {
  const size = readInt(c);
  if (size < 0) throw notColumnar;
  c.pos += size;
};

/** The skip of a (non-recursive) type; `underlying(type)`: the underlying type of a logical type of decode-avro.ts, else undefined. */
export function skipperOf(type: avro.Type, underlying: (type: avro.Type) => avro.Type | undefined, path: Set<avro.Type> = new Set()): Skip | undefined {
  const base = underlying(type);
  if (base) return skipperOf(base, underlying, path);
  const t = type as unknown as Record<string, unknown>;
  switch (type.typeName) {
    case 'null':
      return () => {};
    case 'boolean':
      return skipBy(1);
    case 'int':
    case 'abstract:long':
    case 'enum':
      return skipVarint;
    case 'float':
      return skipBy(4);
    case 'double':
      return skipBy(8);
    case 'bytes':
    case 'string':
      return skipBytes;
    case 'fixed':
      return skipBy(t.size as number);
    case 'array':
    case 'map': {
      const items = skipperOf((t.itemsType ?? t.valuesType) as avro.Type, underlying, path);
      if (!items) return undefined;
      const item: Skip = type.typeName === 'map' ? (c) => { skipBytes(c); items(c); } : items;
      return (c) => {
        // item by item, the count bounded as a read bounds it (an item of no size: at most MAX_BLOCK_ITEMS)
        for (let n = readBlockCount(c, 0); n > 0; n = readBlockCount(c, 0)) {
          for (; n > 0; n--) {
            item(c);
            if (c.pos > c.end) throw notColumnar;
          }
        }
      };
    }
    case 'union:wrapped': {
      const branches = (t.types as avro.Type[]).map((branch) => skipperOf(branch, underlying, path));
      if (branches.includes(undefined)) return undefined;
      return (c) => {
        const branch = branches[readInt(c)];
        if (branch === undefined) throw notColumnar;
        branch(c);
      };
    }
    case 'record':
    case 'error': {
      if (path.has(type)) return undefined;
      const inner = new Set(path).add(type);
      const fields = (t.fields as { type: avro.Type }[]).map((field) => skipperOf(field.type, underlying, inner));
      if (fields.includes(undefined)) return undefined;
      return (c) => {
        for (const field of fields as Skip[]) field(c);
      };
    }
    default:
      return undefined;
  }
}
