/**
 * A table schema with registry schemas merged in (pure): what build/schema-for-records.ts
 * writes as a new version when a range's records name schemas the table has not merged.
 */
import { sideColumns, writerOf, type RegistryFormat } from './decode.js';
import { mergeFields, withIds } from './merge.js';
import type { RegistrySchema } from './registry.js';
import type { MergedSchema, Side, TableSchema } from './table-schema.js';

const formatTypes: Record<RegistryFormat, RegistrySchema['type']> = { avro: 'AVRO', protobuf: 'PROTOBUF', 'json-schema': 'JSON' };

/** `schema` with the given registry schemas merged in (pure); the same object when nothing changes. */
export function mergeRegistrySchemas(schema: TableSchema, format: RegistryFormat, incoming: readonly { schema: RegistrySchema; sides: ReadonlySet<Side> }[]): TableSchema {
  let columns = schema.columns as TableSchema['columns'] | ReturnType<typeof mergeFields>;
  const registrySchemas: Record<string, MergedSchema> = { ...schema.registrySchemas };
  let changed = false;
  for (const { schema: source, sides } of incoming) {
    const known = registrySchemas[source.id];
    const newSides = [...sides].filter((side) => !known?.sides.includes(side));
    if (newSides.length === 0) continue;
    changed = true;
    registrySchemas[source.id] = { ...source, sides: [...(known?.sides ?? []), ...newSides].sort() };
    // a schema of another format, or one that cannot be read, is kept (so that its records
    // keep failing the same way at rebuild) but adds no columns
    const writer = source.type === formatTypes[format] ? writerOf(source) : undefined;
    if (!writer || typeof writer === 'string') continue;
    for (const side of newSides.sort().reverse()) columns = mergeFields(columns, sideColumns(writer.type, side));
  }
  if (!changed) return schema;
  return { ...withIds(schema, columns), registrySchemas };
}
