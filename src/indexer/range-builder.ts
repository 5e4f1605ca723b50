/**
 * The indexer's builder: what a sealed range's files are built with, read from the catalog
 * (and, for registry formats, merged from the registry into a new schema version), then
 * the pure build of src/files. Live indexing and backfill build with it, so that a range
 * gets the same files whichever of them seals it.
 */
import type { Catalog } from '../catalog/db.js';
import type { NewRange } from '../catalog/file-writes.js';
import { indexesWithEntries } from '../catalog/indexes.js';
import { currentSchema } from '../catalog/schema-versions.js';
import { buildRangeFiles, rangeToBuild, type RangeBuilder, type RangeBuildInput } from '../files/files.js';
import type { SealedRange } from '../ranges/sealer.js';
import { engineConfig } from '../runtime/config.js';
import { isRegistryFormat } from '../schema/decode.js';
import { defaultRegistry, type SchemaRegistry } from '../schema/registry.js';
import { schemaForRecords } from './schema-for-records.js';
import { encoderOf } from '../parquet/index.js';

/**
 * The table's current schema (merged with the range's registry schemas), the indexes files
 * carry entries for, and the encoder of the table's compression. `registry` defaults to
 * SCHEMA_REGISTRY_URL (else the local stack's), made on first need. `encoder` is the
 * encoder version of new files (a test builds with an older one to hold files of two
 * versions in one catalog). `build` runs the pure part elsewhere (`run --build-threads`:
 * a worker, src/files/pool.ts); the bytes are the same on any thread.
 */
export function rangeBuilder(catalog: Catalog, registry?: SchemaRegistry, encoder?: string, build: (input: RangeBuildInput) => NewRange | Promise<NewRange> = buildRangeFiles): RangeBuilder {
  return async (table, partition, sealed: SealedRange): Promise<NewRange> => {
    // the records as columns once, for the registry's ids and the build alike
    const range = rangeToBuild(sealed);
    let current = await currentSchema(catalog, table.tableId);
    if (isRegistryFormat(table.format)) {
      current = await schemaForRecords(catalog, table, current, range.files.map((file) => file.records), registry ?? defaultRegistry(engineConfig().schemaRegistryUrl));
    }
    const { version, schema } = current;
    const indexes = await indexesWithEntries(catalog, table.tableId);
    const encoderVersion = encoder ?? encoderOf(table.settings);
    return build({ table, schema, schemaVersion: version, indexes, encoderVersion, partition, range });
  };
}
