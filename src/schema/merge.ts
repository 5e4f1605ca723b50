/**
 * Folding a registry schema's shape into the table schema, and routing decoded values to
 * the table's columns. Pure. The rules (docs/formats.md, "Schema Registry formats"):
 *
 * - a field the table has no column for becomes a new nullable column, appended (inside
 *   a struct: a new struct field, appended);
 * - a column whose type the field's type widens is widened in place, keeping its id:
 *   int32 → int64, float → double, decimal(p, s) → decimal(p', s) with p' > p;
 *   a narrower field goes into the wider column as it is;
 * - structs merge field by field, lists element by element;
 * - any other change cannot widen: the field goes to a sibling column named
 *   `<field>__<type tag>` (e.g. `amount__string`), made on first need; the original
 *   column keeps its type and receives the records whose schema still fits it.
 * Nothing is ever removed: a field a newer schema drops stays a column, null from then on.
 */
import type { Column, ColumnType, FieldType } from '../parquet/schema.js';
import { innerNodePaths, leaves, sameType } from '../parquet/schema.js';
import type { TableColumn, TableSchema } from './table-schema.js';
import { dataRecord, ownValue, setOwn } from '../common/objects.js';

/** The suffix a field gets when its type cannot widen into its column. */
export function typeTag(type: ColumnType): string {
  switch (type.kind) {
    case 'int32':
      return 'int';
    case 'int64':
      return 'long';
    case 'binary':
      return 'bytes';
    case 'timestamp':
      return `timestamp_${type.unit}${type.utc ? '' : '_local'}`;
    case 'decimal':
      return `decimal_${type.precision}_${type.scale}`;
    case 'list':
      return `list_${typeTag(type.element.type)}`;
    default:
      return type.kind;
  }
}

/** The type that holds values of both, or undefined when `source` cannot widen into `target` (nor `target` into `source`). */
export function mergeType(target: ColumnType, source: ColumnType): ColumnType | undefined {
  if (target.kind === 'struct' && source.kind === 'struct') {
    const fields = mergeFields(target.fields, source.fields);
    return fields === target.fields ? target : { kind: 'struct', fields };
  }
  if (target.kind === 'list' && source.kind === 'list') {
    const element = mergeType(target.element.type, source.element.type);
    if (!element) return undefined;
    return element === target.element.type ? target : { kind: 'list', element: { nullable: true, type: element } };
  }
  if (sameType(target, source)) return target;
  const kinds = `${target.kind}<-${source.kind}`;
  if (kinds === 'int64<-int32' || kinds === 'double<-float') return target;
  if (kinds === 'int32<-int64' || kinds === 'float<-double') return source;
  if (target.kind === 'decimal' && source.kind === 'decimal' && target.scale === source.scale) {
    return target.precision >= source.precision ? target : source;
  }
  return undefined;
}

/** `fields` with `incoming` merged in; the same array when nothing changes. */
export function mergeFields(fields: readonly Column[], incoming: readonly Column[]): readonly Column[] {
  let out: Column[] | undefined;
  const current = (): readonly Column[] => out ?? fields;
  const replace = (index: number, column: Column): void => {
    out ??= [...fields];
    out[index] = column;
  };
  const add = (column: Column): void => {
    out ??= [...fields];
    out.push(column);
  };
  for (const field of incoming) {
    for (const name of [field.name, `${field.name}__${typeTag(field.type)}`]) {
      const index = current().findIndex((c) => c.name === name);
      if (index < 0) {
        add({ name, type: field.type, nullable: true });
        break;
      }
      const existing = current()[index]!;
      const merged = mergeType(existing.type, field.type);
      if (merged) {
        if (merged !== existing.type) replace(index, { ...existing, type: merged });
        break;
      }
    }
  }
  return out ?? fields;
}

/** The column a field of type `source` named `name` goes to, or undefined if none takes it. */
export function routeField<C extends Column>(fields: readonly C[], name: string, source: ColumnType): C | undefined {
  for (const candidate of [name, `${name}__${typeTag(source)}`]) {
    const column = fields.find((c) => c.name === candidate);
    if (column && takes(column.type, source)) return column;
  }
  return undefined;
}

/** Whether a column of type `target` holds values of type `source` without changing. */
export function takes(target: ColumnType, source: ColumnType): boolean {
  const merged = mergeType(target, source);
  return merged !== undefined && (merged === target || sameType(merged, target));
}

export type Convert = (value: unknown) => unknown;

/**
 * Turns a decoded value of type `source` into the representation of column type `target`
 * (which `takes` it). Struct fields the target has no column for are left out.
 */
export function converter(target: ColumnType, source: ColumnType): Convert {
  // the same type: every field routes to itself, so a copy would hold the same values
  if (sameType(target, source)) return same;
  if (target.kind === 'struct' && source.kind === 'struct') {
    const routes: [string, string, Convert][] = [];
    for (const field of source.fields) {
      const column = routeField(target.fields, field.name, field.type);
      if (column) routes.push([field.name, column.name, converter(column.type, field.type)]);
    }
    return (value) => {
      if (value === null || value === undefined) return null;
      const record = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [from, to, convert] of routes) setOwn(out, to, convert(ownValue(record, from)));
      return out;
    };
  }
  if (target.kind === 'list' && source.kind === 'list') {
    const convert = converter(target.element.type, source.element.type);
    return (value) => (value === null || value === undefined ? null : (value as unknown[]).map(convert));
  }
  if (target.kind === 'int64' && source.kind === 'int32') return (value) => (typeof value === 'number' ? BigInt(value) : value);
  return same;
}

const same: Convert = (value) => value;

/** Adds ids for new columns, leaves and nested nodes; ids of existing ones never change. */
export function withIds(previous: TableSchema, columns: readonly Column[]): TableSchema {
  const previousNodes = previous.nodeIds ?? dataRecord<number>();
  let nextId = 1 + Math.max(-1, ...previous.columns.map((c) => c.id), ...Object.values(previous.leafIds), ...Object.values(previousNodes));
  const numbered: TableColumn[] = columns.map((column) => {
    const known = previous.columns.find((c) => c.name === column.name);
    return { ...column, id: known ? known.id : nextId++ };
  });
  const leafIds = dataRecord<number>();
  for (const leaf of leaves(numbered)) {
    const path = leaf.path.join('.');
    leafIds[path] = ownValue(previous.leafIds, path) ?? (leaf.path.length === 1 ? numbered.find((c) => c.name === leaf.path[0])!.id : nextId++);
  }
  const nodeIds = dataRecord<number>();
  for (const nodePath of innerNodePaths(numbered)) {
    const path = nodePath.join('.');
    nodeIds[path] = ownValue(previousNodes, path) ?? nextId++;
  }
  return { ...previous, columns: numbered, leafIds, nodeIds };
}

export type { FieldType };
