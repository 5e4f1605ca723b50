/**
 * One committed Kafka record as the engine sees it, whatever delivered it (a committed
 * fetch, an MSK event). Offsets are bigint; timestamps are epoch milliseconds.
 */
export interface KafkaRecord {
  offset: bigint;
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: ReadonlyArray<readonly [name: string, value: Uint8Array | null]>;
  /** Key + value + header bytes, when whoever decoded the record counted them (`recordBytes` then asks nothing else). */
  readonly byteSize?: number;
}

/** Key + value + header bytes: what `file_bytes` counts. */
export function recordBytes(record: KafkaRecord): number {
  if (record.byteSize !== undefined) return record.byteSize;
  let bytes = (record.key?.byteLength ?? 0) + (record.value?.byteLength ?? 0);
  for (const [name, value] of record.headers) bytes += Buffer.byteLength(name, 'utf8') + (value?.byteLength ?? 0);
  return bytes;
}
