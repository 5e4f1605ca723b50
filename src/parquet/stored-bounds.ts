/**
 * Bounds as the file stores them (footer statistics and ColumnIndex): PLAIN bytes, byte
 * arrays cut to `statisticsBytes` on a character, the max of a cut raised, encoder 2's
 * in-place raises reproduced on copies. Its own module because the page index and the
 * footer must cut each bound the same way, through one instance per file.
 */
import type { LeafPlan, Physical } from './leaf-plan.js';
import { writeBigEndian } from './plain-values.js';
import type { ScalarType } from './schema.js';
import { compareBytes, compareFloats } from './stat-text.js';
import type { WriterSettings } from './writer-settings.js';

/** How values of a physical type compare, as their bounds are taken. */
export function comparatorOf(physical: Physical): (a: unknown, b: unknown) => number {
  switch (physical) {
    case 'BYTE_ARRAY':
      return (a, b) => compareBytes(a as Uint8Array, b as Uint8Array);
    case 'FLOAT':
    case 'DOUBLE':
      return (a, b) => compareFloats(a as number, b as number);
    case 'BOOLEAN':
      return (a, b) => Number(a) - Number(b);
    case 'INT32':
      return (a, b) => (a as number) - (b as number);
    default:
      return (a, b) => ((a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0);
  }
}

const isUtf8 = (type: ScalarType): boolean => type.kind === 'string' || type.kind === 'json';

/**
 * Bounds as Parquet stores them (PLAIN bytes of the value), byte arrays cut to `limit`.
 * A cut bound is a new array: a bound never shares memory with the value it bounds, so
 * raising it cannot change the value, nor anything that reads the value after the writer
 * (statistics, index entries, a query's rows).
 */
export class Bounds {
  private readonly limit: number;
  /** Encoder 2 only (`WriterSettings.boundsRaisedInPlace`): each Buffer value as its raises left it. */
  private readonly raised: Map<Uint8Array, Uint8Array> | null;
  constructor(settings: WriterSettings) {
    this.limit = settings.statisticsBytes;
    this.raised = settings.boundsRaisedInPlace ? new Map() : null;
  }

  value(leaf: LeafPlan, value: unknown, isMax: boolean): { bytes: Uint8Array; exact: boolean } {
    const { limit } = this;
    switch (leaf.physical) {
      case 'BYTE_ARRAY': {
        const bytes = this.asRead(value as Uint8Array);
        if (bytes.length <= limit) return { bytes, exact: true };
        const utf8 = isUtf8(leaf.type);
        const cut = isMax ? this.raisedPrefix(value as Uint8Array, bytes, utf8) : this.prefix(value as Uint8Array, bytes, utf8 ? charStart(bytes, limit) : limit);
        return cut ? { bytes: cut, exact: false } : { bytes, exact: true };
      }
      case 'INT32': {
        const out = new Uint8Array(4);
        new DataView(out.buffer).setInt32(0, value as number, true);
        return { bytes: out, exact: true };
      }
      case 'INT64': {
        const out = new Uint8Array(8);
        new DataView(out.buffer).setBigInt64(0, (value as bigint) * BigInt(leaf.scale), true);
        return { bytes: out, exact: true };
      }
      case 'FLOAT':
      case 'DOUBLE': {
        // the specification's rule for zeros: a min of ±0 is written -0, a max of ±0 as +0
        let v = value as number;
        if (v === 0) v = isMax ? 0 : -0;
        const out = new Uint8Array(leaf.physical === 'DOUBLE' ? 8 : 4);
        const view = new DataView(out.buffer);
        if (leaf.physical === 'DOUBLE') view.setFloat64(0, v, true);
        else view.setFloat32(0, v, true);
        return { bytes: out, exact: true };
      }
      case 'BOOLEAN':
        return { bytes: new Uint8Array([value ? 1 : 0]), exact: true };
      case 'FIXED_LEN_BYTE_ARRAY': {
        const out = new Uint8Array(leaf.typeLength);
        writeBigEndian(out, 0, value as bigint, leaf.typeLength);
        return { bytes: out, exact: true };
      }
    }
  }

  /** The value's bytes as a bound reads them: the value itself, or under encoder 2 its raised copy. */
  private asRead(value: Uint8Array): Uint8Array {
    return this.raised && Buffer.isBuffer(value) ? (this.raised.get(value) ?? value) : value;
  }

  /**
   * The first `end` bytes of the value, `bytes` being the value as read. A copy; under
   * encoder 2 a Buffer value gave a view, here a view of its raised copy (made now).
   */
  private prefix(value: Uint8Array, bytes: Uint8Array, end: number): Uint8Array {
    if (this.raised && Buffer.isBuffer(value)) {
      let copy = this.raised.get(value);
      if (!copy) this.raised.set(value, (copy = new Uint8Array(value)));
      return copy.subarray(0, end);
    }
    return new Uint8Array(bytes.subarray(0, end));
  }

  /**
   * An upper bound of at most `limit` bytes: a prefix whose last unit is raised by one (a
   * byte below 0xFF; for UTF-8 a character below U+10FFFF, skipping the surrogates), so
   * that it sorts after every value that starts with the prefix. null when no unit can be
   * raised (all 0xFF bytes): the value is then kept whole.
   */
  private raisedPrefix(value: Uint8Array, bytes: Uint8Array, utf8: boolean): Uint8Array | null {
    if (!utf8) {
      for (let end = this.limit; end > 0; end--) {
        if (bytes[end - 1]! < 0xff) {
          const out = this.prefix(value, bytes, end);
          out[end - 1]!++;
          return out;
        }
      }
      return null;
    }
    let end = charStart(bytes, this.limit);
    while (end > 0) {
      const start = charStart(bytes, end - 1);
      const cp = new TextDecoder().decode(bytes.subarray(start, end)).codePointAt(0)!;
      if (cp < 0x10ffff) {
        const raised = encoder.encode(String.fromCodePoint(cp + 1 === 0xd800 ? 0xe000 : cp + 1));
        const out = new Uint8Array(start + raised.length);
        out.set(bytes.subarray(0, start));
        out.set(raised, start);
        return out;
      }
      end = start;
    }
    return null;
  }
}

/** Start of the UTF-8 character that holds byte `at` (at most 3 steps back). */
function charStart(bytes: Uint8Array, at: number): number {
  while (at > 0 && (bytes[at]! & 0xc0) === 0x80) at--;
  return at;
}

const encoder = new TextEncoder();
