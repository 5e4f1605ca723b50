/**
 * A table schema with registry schemas merged in (pure): what indexer/schema-for-records.ts
 * writes as a new version when a range's records name schemas the table has not merged.
 */
import { sideColumns, writerOf, type RegistryFormat } from './decode.js';
import { mergeFields, withIds } from './merge.js';
import { excerpt, type RegistrySchema, type UnreadableSchema } from './registry.js';
import type { MergedSchema, Side, TableSchema, UnreadableEntry } from './table-schema.js';

const formatTypes: Record<RegistryFormat, RegistrySchema['type']> = { avro: 'AVRO', protobuf: 'PROTOBUF', 'json-schema': 'JSON' };

/**
 * `schema` with the given registry answers merged in (pure); the same object when nothing
 * changes. A schema of another format is merged (kept, so that its records keep failing
 * the same way at rebuild) but adds no columns: the registry keeps an id's schema for
 * ever. An answer that is not a readable schema (`UnreadableSchema`, or text that does not
 * parse as the table's format) is recorded under `unreadableSchemas` with its first
 * reason, not merged: the id is asked again for later ranges (docs/design.md, "Schemas").
 */
export function mergeRegistrySchemas(schema: TableSchema, format: RegistryFormat, incoming: readonly { schema: RegistrySchema | UnreadableSchema; sides: ReadonlySet<Side> }[]): TableSchema {
  let columns = schema.columns as TableSchema['columns'] | ReturnType<typeof mergeFields>;
  const registrySchemas: Record<string, MergedSchema> = { ...schema.registrySchemas };
  const unreadableSchemas: Record<string, UnreadableEntry> = { ...schema.unreadableSchemas };
  let changed = false;
  for (const { schema: source, sides } of incoming) {
    const known = registrySchemas[source.id];
    const newSides = [...sides].filter((side) => !known?.sides.includes(side));
    if (newSides.length === 0) continue;
    const writer = 'unreadable' in source ? source.unreadable : source.type === formatTypes[format] ? writerOf(source) : undefined;
    if (typeof writer === 'string') {
      const reason = 'unreadable' in source ? writer : `${writer}: the Schema Registry answered ${excerpt(source.schema)}`;
      const recorded = unreadableSchemas[source.id];
      const unrecorded = newSides.filter((side) => !recorded?.sides.includes(side));
      if (unrecorded.length === 0) continue;
      changed = true;
      unreadableSchemas[source.id] = { sides: [...(recorded?.sides ?? []), ...unrecorded].sort(), reason: recorded?.reason ?? reason };
      continue;
    }
    changed = true;
    registrySchemas[source.id] = { ...(source as RegistrySchema), sides: [...(known?.sides ?? []), ...newSides].sort() };
    delete unreadableSchemas[source.id];
    if (!writer) continue;
    for (const side of newSides.sort().reverse()) columns = mergeFields(columns, sideColumns(writer.type, side));
  }
  if (!changed) return schema;
  const merged: TableSchema = { ...withIds(schema, columns), registrySchemas };
  if (Object.keys(unreadableSchemas).length > 0) merged.unreadableSchemas = unreadableSchemas;
  else delete merged.unreadableSchemas;
  return merged;
}
