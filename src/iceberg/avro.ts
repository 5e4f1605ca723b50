/**
 * Avro object container files (the Avro 1.11 specification, "Object Container Files"),
 * written deterministically: the same records and metadata give the same bytes. Pure.
 *
 *   header   "Obj" 0x01, the file metadata (an Avro map of bytes: avro.schema,
 *            avro.codec = null, then the caller's keys in their order), a 16-byte sync marker
 *   blocks   a long (record count), a long (byte length), the records, the sync marker
 *
 * The sync marker is fixed rather than random, so bytes depend on content alone; the
 * records are encoded by avsc against the schema, whose JSON (with Iceberg's field-id
 * attributes, which avsc does not keep) goes into avro.schema as given.
 */
import avro from 'avsc';

/** An Avro schema as JSON (field-id and other attributes included). */
export type AvroSchema = Record<string, unknown>;

const magic = Buffer.from([0x4f, 0x62, 0x6a, 0x01]);
/** "offsetlake:avro\n": the same in every file we write. */
export const syncMarker = Buffer.from('offsetlake:avro\n', 'latin1');
const metadataType = avro.Type.forSchema({ type: 'map', values: 'bytes' });
const longType = avro.Type.forSchema('long');
/** Records per block: bounds what a reader buffers per block. */
const blockRecords = 1000;

export interface AvroWriter {
  /** The whole container file of these records. */
  file(records: readonly unknown[], metadata: Readonly<Record<string, string>>): Buffer;
}

/** A writer for one schema (the avsc type is made once). */
export function avroWriter(schema: AvroSchema): AvroWriter {
  const type = avro.Type.forSchema(schema as avro.Schema, { wrapUnions: false });
  const schemaText = JSON.stringify(schema);
  return {
    file(records, metadata) {
      const meta: Record<string, Buffer> = { 'avro.schema': Buffer.from(schemaText), 'avro.codec': Buffer.from('null') };
      for (const [key, value] of Object.entries(metadata)) meta[key] = Buffer.from(value);
      const parts: Buffer[] = [magic, metadataType.toBuffer(meta), syncMarker];
      for (let at = 0; at < records.length; at += blockRecords) {
        const block = records.slice(at, at + blockRecords).map((record) => type.toBuffer(record));
        const bytes = block.reduce((sum, b) => sum + b.byteLength, 0);
        parts.push(longType.toBuffer(block.length), longType.toBuffer(bytes), ...block, syncMarker);
      }
      return Buffer.concat(parts);
    },
  };
}
