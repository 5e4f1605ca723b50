/**
 * The partition spec engines prune by: the hour (granularity minute or hour) or the day
 * (granularity day) of `_timestamp`, as Iceberg's `hour` and `day` transforms count them
 * (hours or days since 1970-01-01 00:00 UTC). Every record of a data file lies in its
 * time bucket, and a bucket lies in one hour (or day), so a file's bucket gives its
 * partition value exactly. Pure.
 */
import type { Granularity } from '../table/settings.js';
import type { TableSchema } from '../schema/table-schema.js';

export interface PartitionField {
  'source-id': number;
  'field-id': number;
  name: string;
  transform: 'hour' | 'day';
  /** The partition value's Avro type in manifests (not part of the spec's JSON). */
  avroType: unknown;
}

export interface PartitionSpec {
  'spec-id': number;
  fields: PartitionField[];
}

/** Iceberg numbers partition fields from 1000. */
export const firstPartitionFieldId = 1000;

export function partitionSpec(schema: TableSchema, granularity: Granularity): PartitionSpec {
  const timestamp = schema.columns.find((column) => column.name === '_timestamp');
  if (!timestamp) throw new Error('the table schema has no _timestamp column');
  const transform = granularity === 'day' ? 'day' : 'hour';
  return {
    'spec-id': 0,
    fields: [{
      'source-id': timestamp.id,
      'field-id': firstPartitionFieldId,
      name: `_timestamp_${transform}`,
      transform,
      // day's result is a date (an Avro int with logical type date), hour's an int
      avroType: transform === 'day' ? { type: 'int', logicalType: 'date' } : 'int',
    }],
  };
}

/** A file's partition value from the start of its time bucket (epoch ms). */
export function partitionValue(bucketStartMs: number, granularity: Granularity): number {
  return Math.floor(bucketStartMs / (granularity === 'day' ? 86_400_000 : 3_600_000));
}

/** The spec as table metadata gives it. */
export function specJson(spec: PartitionSpec): { 'spec-id': number; fields: Omit<PartitionField, 'avroType'>[] } {
  return { 'spec-id': spec['spec-id'], fields: spec.fields.map(({ avroType: _avro, ...field }) => field) };
}
