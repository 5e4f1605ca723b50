/**
 * Before a range's files are built: every (schema id, side) its records name that the
 * table schema has not merged yet is fetched from the registry and merged into a new
 * table-schema version (catalog/schema-versions.ts writes it under the table's lock).
 * A registry that cannot be reached throws RegistryUnavailableError and nothing is
 * written; an id the registry does not know is not merged (its records become error
 * rows) and is asked for again with the next range. An id it answers with something that
 * is not a readable schema is recorded as unreadable in the new version (its records
 * become error rows naming the id and the answer, the same at every rebuild) and is
 * asked for again with the next range too.
 */
import type { Catalog } from '../catalog/db.js';
import { addSchemaVersion, type VersionedSchema } from '../catalog/schema-versions.js';
import type { FileRecords } from '../kafka/record.js';
import { isRegistryFormat, unmergedIds } from '../schema/decode.js';
import { mergeRegistrySchemas } from '../schema/evolve.js';
import type { RegistrySchema, SchemaRegistry, UnreadableSchema } from '../schema/registry.js';
import type { Side } from '../schema/table-schema.js';
import type { TableRecord } from '../table/record.js';

/** The table schema the range's records need: the current version, or a new one merged from the registry. */
export async function schemaForRecords(catalog: Catalog, table: TableRecord, current: VersionedSchema, records: Iterable<FileRecords>, registry: SchemaRegistry): Promise<VersionedSchema> {
  if (!isRegistryFormat(table.format)) return current;
  const wanted = unmergedIds(current.schema, records);
  if (wanted.size === 0) return current;
  const fetched: { schema: RegistrySchema | UnreadableSchema; sides: Set<Side> }[] = [];
  for (const [id, sides] of [...wanted].sort(([a], [b]) => a - b)) {
    const schema = await registry.schemaById(id);
    if (schema) fetched.push({ schema, sides });
  }
  const format = table.format;
  // nothing new (an id still unknown, or unreadable as already recorded): no version, no lock
  if (mergeRegistrySchemas(current.schema, format, fetched) === current.schema) return current;
  return addSchemaVersion(catalog, table, (latest) => mergeRegistrySchemas(latest, format, fetched));
}
