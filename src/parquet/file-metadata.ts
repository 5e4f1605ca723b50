/**
 * The footer's FileMetaData in Thrift compact form: the schema (with field ids), each row
 * group's column chunks with their statistics and page index places, key-value metadata.
 * Its own module because it is the part the catalog keeps (footer.ts): every byte of it
 * is compared on each rebuild.
 */
import type { SchemaElement } from 'hyparquet-writer';
import type { ChunkMeta } from './column-chunk.js';
import { PLAIN, RLE } from './data-page.js';
import { type LeafPlan, type Physical, physicalIds } from './leaf-plan.js';
import type { Bounds } from './stored-bounds.js';
import { CompactType, type CompactWriter } from './thrift.js';
import type { Codec, WriteOptions, WriterSettings } from './writer-settings.js';

/** Codecs, repetitions, converted types and time units, numbered as parquet.thrift numbers them. */
const codecIds: Record<Codec, number> = { UNCOMPRESSED: 0, SNAPPY: 1, ZSTD: 6, LZ4_RAW: 7 };
const repetitionIds = { REQUIRED: 0, OPTIONAL: 1, REPEATED: 2 } as const;
const convertedIds: Record<string, number> = {
  UTF8: 0, MAP: 1, MAP_KEY_VALUE: 2, LIST: 3, ENUM: 4, DECIMAL: 5, DATE: 6, TIME_MILLIS: 7, TIME_MICROS: 8,
  TIMESTAMP_MILLIS: 9, TIMESTAMP_MICROS: 10, JSON: 19,
};
const unitIds = { MILLIS: 1, MICROS: 2, NANOS: 3 } as const;

function writeLogicalType(w: CompactWriter, logical: NonNullable<SchemaElement['logical_type']>): void {
  w.struct(10, () => {
    switch (logical.type) {
      case 'STRING':
        return w.emptyStruct(1);
      case 'LIST':
        return w.emptyStruct(3);
      case 'DECIMAL':
        return w.struct(5, () => {
          w.i32(1, logical.scale);
          w.i32(2, logical.precision);
        });
      case 'DATE':
        return w.emptyStruct(6);
      case 'TIMESTAMP':
        return w.struct(8, () => {
          w.bool(1, logical.isAdjustedToUTC);
          w.struct(2, () => w.emptyStruct(unitIds[logical.unit]));
        });
      case 'JSON':
        return w.emptyStruct(12);
      default:
        throw new Error(`logical type ${logical.type} is not written by this writer`);
    }
  });
}

function writeSchemaElement(w: CompactWriter, element: SchemaElement, fieldId: number | undefined): void {
  w.structValue(() => {
    if (element.type) w.i32(1, physicalIds[element.type as Physical]);
    if (element.type_length !== undefined) w.i32(2, element.type_length);
    if (element.repetition_type) w.i32(3, repetitionIds[element.repetition_type]);
    w.binary(4, element.name);
    if (element.num_children !== undefined) w.i32(5, element.num_children);
    // JSON text columns carry converted type JSON beside logical type JSON: the column
    // mapping's UTF8 (which v1 needs for hyparquet-writer) is refused as a mismatch by
    // arrow-rs readers (DataFusion), and this writer keeps the text as given anyway
    const converted = element.logical_type?.type === 'JSON' ? 'JSON' : element.converted_type;
    if (converted) {
      const id = convertedIds[converted];
      if (id === undefined) throw new Error(`converted type ${converted} is not written by this writer`);
      w.i32(6, id);
    }
    if (element.scale !== undefined) w.i32(7, element.scale);
    if (element.precision !== undefined) w.i32(8, element.precision);
    if (fieldId !== undefined) w.i32(9, fieldId);
    if (element.logical_type) writeLogicalType(w, element.logical_type);
  });
}

/**
 * The path of each element of the flattened schema (root first, as ''), joined with '.',
 * and whether it is a nested group (neither a top-level column nor a leaf).
 */
function elementPaths(schema: readonly SchemaElement[]): { path: string; nestedGroup: boolean }[] {
  const paths = [{ path: '', nestedGroup: false }];
  let at = 1;
  const walk = (prefix: string, top: boolean): void => {
    const element = schema[at++]!;
    const path = prefix ? `${prefix}.${element.name}` : element.name;
    paths.push({ path, nestedGroup: !top && (element.num_children ?? 0) > 0 });
    for (let child = 0; child < (element.num_children ?? 0); child++) walk(path, false);
  };
  for (let column = 0; column < (schema[0]!.num_children ?? 0); column++) walk('', true);
  return paths;
}

export function writeFileMetaData(
  w: CompactWriter, schema: readonly SchemaElement[], plans: readonly LeafPlan[], groups: readonly { rows: number; chunks: ChunkMeta[] }[],
  rowCount: number, options: WriteOptions, settings: WriterSettings, bounds: Bounds,
): void {
  const paths = elementPaths(schema);
  const ids = options.fieldIds;
  w.message(() => {
    w.i32(1, 2);
    w.list(2, CompactType.Struct, schema.map((element, k) => ({ element, ...paths[k]! })), ({ element, path, nestedGroup }) =>
      writeSchemaElement(w, element, path && Object.hasOwn(ids, path) && (settings.groupFieldIds || !nestedGroup) ? ids[path] : undefined),
    );
    w.i64(3, rowCount);
    w.list(4, CompactType.Struct, groups.map((g, ordinal) => ({ ...g, ordinal })), (group) =>
      w.structValue(() => {
        w.list(1, CompactType.Struct, group.chunks, (chunk) => writeColumnChunk(w, chunk, settings, bounds));
        w.i64(2, group.chunks.reduce((n, c) => n + c.uncompressedBytes, 0));
        w.i64(3, group.rows);
        w.i64(5, group.chunks[0]?.start ?? 4);
        w.i64(6, group.chunks.reduce((n, c) => n + c.dataBytes, 0));
        w.i16(7, group.ordinal);
      }),
    );
    if (options.keyValueMetadata.length > 0) {
      w.list(5, CompactType.Struct, options.keyValueMetadata, (kv) =>
        w.structValue(() => {
          w.binary(1, kv.key);
          w.binary(2, kv.value);
        }),
      );
    }
    w.binary(6, options.createdBy);
    w.list(7, CompactType.Struct, plans, () => w.structValue(() => w.emptyStruct(1)));
  });
}

function writeColumnChunk(w: CompactWriter, chunk: ChunkMeta, settings: WriterSettings, bounds: Bounds): void {
  const { leaf } = chunk;
  w.structValue(() => {
    w.i64(2, chunk.start);
    w.struct(3, () => {
      w.i32(1, physicalIds[leaf.physical]);
      const encodings = leaf.maxDef > 0 || leaf.maxRep > 0 ? [PLAIN, RLE] : [PLAIN];
      w.list(2, CompactType.I32, encodings, (e) => w.i32Value(e));
      w.list(3, CompactType.Binary, leaf.path, (p) => w.binaryValue(p));
      w.i32(4, codecIds[settings.codec]);
      w.i64(5, chunk.count);
      w.i64(6, chunk.uncompressedBytes);
      w.i64(7, chunk.dataBytes);
      w.i64(9, chunk.start);
      w.struct(12, () => writeStatisticsFields(w, chunk, bounds));
    });
    if (chunk.offsetIndex) {
      w.i64(4, chunk.offsetIndex.offset);
      w.i32(5, chunk.offsetIndex.length);
    }
    if (chunk.columnIndex) {
      w.i64(6, chunk.columnIndex.offset);
      w.i32(7, chunk.columnIndex.length);
    }
  });
}

function writeStatisticsFields(w: CompactWriter, chunk: ChunkMeta, bounds: Bounds): void {
  const { leaf } = chunk;
  w.i64(3, chunk.nulls);
  if (chunk.min !== undefined && leaf.fileBounds) {
    const max = bounds.value(leaf, chunk.max, true);
    const min = bounds.value(leaf, chunk.min, false);
    w.binary(5, max.bytes);
    w.binary(6, min.bytes);
    w.bool(7, max.exact);
    w.bool(8, min.exact);
  }
  if (leaf.physical === 'FLOAT' || leaf.physical === 'DOUBLE') w.i64(9, chunk.nans);
}
