/**
 * The Thrift Compact Protocol, write side only, for the few Parquet structures our own
 * writer emits (page headers, the page index, FileMetaData). Fields are written by id
 * in the order the caller gives, which must be ascending: the compact protocol encodes
 * each field id as a delta from the previous one. Booleans inside lists are one byte, 1
 * for true and 2 for false, as the reference implementations (C++, Java, parquet-rs)
 * write and read them; parquet-rs refuses any other byte.
 */

export const CompactType = {
  True: 1,
  False: 2,
  Byte: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  Double: 7,
  Binary: 8,
  List: 9,
  Struct: 12,
} as const;
export type CompactType = (typeof CompactType)[keyof typeof CompactType];

const utf8 = new TextEncoder();

export class CompactWriter {
  private bytes = new Uint8Array(256);
  private at = 0;
  private lastField = 0;
  private readonly outer: number[] = [];

  /** The bytes written so far (a view; copy it before writing more if it must last). */
  view(): Uint8Array {
    return this.bytes.subarray(0, this.at);
  }

  /** A copy of the bytes written, and the writer emptied for the next structure. */
  take(): Uint8Array {
    const out = this.bytes.slice(0, this.at);
    this.at = 0;
    this.lastField = 0;
    this.outer.length = 0;
    return out;
  }

  get length(): number {
    return this.at;
  }

  private ensure(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.at + n));
    grown.set(this.bytes.subarray(0, this.at));
    this.bytes = grown;
  }

  private byte(b: number): void {
    this.ensure(1);
    this.bytes[this.at++] = b;
  }

  /** Unsigned varint of a non-negative safe integer. */
  private varint(n: number): void {
    this.ensure(10);
    while (n >= 0x80) {
      this.bytes[this.at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.bytes[this.at++] = n;
  }

  private zigzag(n: number | bigint): void {
    if (typeof n === 'bigint') {
      let z = n >= 0n ? n << 1n : (-n << 1n) - 1n;
      this.ensure(10);
      while (z >= 0x80n) {
        this.bytes[this.at++] = Number(z & 0x7fn) | 0x80;
        z >>= 7n;
      }
      this.bytes[this.at++] = Number(z);
      return;
    }
    if (!Number.isSafeInteger(n)) throw new Error(`thrift: ${n} is not a safe integer`);
    this.varint(n >= 0 ? n * 2 : -n * 2 - 1);
  }

  private field(id: number, type: CompactType): void {
    const delta = id - this.lastField;
    if (delta <= 0) throw new Error(`thrift: field ${id} written after field ${this.lastField}`);
    if (delta <= 15) this.byte((delta << 4) | type);
    else {
      this.byte(type);
      this.zigzag(id);
    }
    this.lastField = id;
  }

  i32(id: number, value: number): void {
    this.field(id, CompactType.I32);
    this.zigzag(value);
  }

  i16(id: number, value: number): void {
    this.field(id, CompactType.I16);
    this.zigzag(value);
  }

  i64(id: number, value: number | bigint): void {
    this.field(id, CompactType.I64);
    this.zigzag(value);
  }

  bool(id: number, value: boolean): void {
    this.field(id, value ? CompactType.True : CompactType.False);
  }

  binary(id: number, value: Uint8Array | string): void {
    this.field(id, CompactType.Binary);
    this.binaryValue(value);
  }

  /** A struct field; `body` writes its fields. */
  struct(id: number, body: () => void): void {
    this.field(id, CompactType.Struct);
    this.structValue(body);
  }

  /** An empty struct, as the union members without data (e.g. LogicalType STRING). */
  emptyStruct(id: number): void {
    this.struct(id, () => {});
  }

  /** A list field: the header, then `each` writes every element with the *Value methods. */
  list<T>(id: number, elementType: CompactType, items: readonly T[], each: (item: T) => void): void {
    this.field(id, CompactType.List);
    const size = items.length;
    if (size < 15) this.byte((size << 4) | elementType);
    else {
      this.byte(0xf0 | elementType);
      this.varint(size);
    }
    for (const item of items) each(item);
  }

  /** A whole top-level structure (FileMetaData, PageHeader, ColumnIndex, OffsetIndex). */
  message(body: () => void): void {
    this.structValue(body);
  }

  structValue(body: () => void): void {
    this.outer.push(this.lastField);
    this.lastField = 0;
    body();
    this.byte(0); // STOP
    this.lastField = this.outer.pop()!;
  }

  binaryValue(value: Uint8Array | string): void {
    const bytes = typeof value === 'string' ? utf8.encode(value) : value;
    this.varint(bytes.length);
    this.ensure(bytes.length);
    this.bytes.set(bytes, this.at);
    this.at += bytes.length;
  }

  i32Value(value: number): void {
    this.zigzag(value);
  }

  i64Value(value: number | bigint): void {
    this.zigzag(value);
  }

  boolValue(value: boolean): void {
    this.byte(value ? CompactType.True : CompactType.False);
  }
}
