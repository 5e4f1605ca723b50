/**
 * Pure: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of a Kafka
 * record batch (magic 2). `crc32c` of the ASCII digits "123456789" is 0xE3069283 (the
 * check value of RFC 3720, appendix B.4).
 *
 * `crc32c` is @node-rs/crc32's (SSE 4.2 / ARMv8 CRC instructions; a pinned dependency,
 * whose binary every Lambda bundle carries for its architecture: infra/lambda-native.ts)
 * when it computes the check value, else `crc32cJs`, "slicing by 8" (eight 256-entry
 * tables, eight bytes a step). Measured on 64 MiB on the 2-core test machine: native
 * 0.9-1.4 GiB/s, slicing by 8 130-200 MiB/s, the library's WebAssembly 100-560 MiB/s.
 */
import { crc32c as nativeCrc32c } from '@node-rs/crc32';

const POLYNOMIAL = 0x82f63b78;

/** table[k * 256 + b]: the CRC of byte b followed by k zero bytes. */
const table = new Int32Array(8 * 256);
for (let b = 0; b < 256; b++) {
  let c = b;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
  table[b] = c;
}
for (let b = 0; b < 256; b++) {
  for (let k = 1; k < 8; k++) table[k * 256 + b] = (table[(k - 1) * 256 + b]! >>> 8) ^ table[table[(k - 1) * 256 + b]! & 0xff]!;
}

/** The CRC-32C of `bytes[start, end)`, as an unsigned 32-bit number. */
export function crc32cJs(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const t = table;
  let crc = -1;
  let i = start;
  const whole = end - ((end - start) & 7);
  while (i < whole) {
    const lo = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t[1792 + (lo & 0xff)]! ^
      t[1536 + ((lo >>> 8) & 0xff)]! ^
      t[1280 + ((lo >>> 16) & 0xff)]! ^
      t[1024 + (lo >>> 24)]! ^
      t[768 + bytes[i + 4]!]! ^
      t[512 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
    i += 8;
  }
  while (i < end) crc = t[(crc ^ bytes[i++]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

type Crc32c = (bytes: Uint8Array) => number;

function loadNative(): Crc32c | undefined {
  // Trust it only if it computes the check value.
  return nativeCrc32c(Buffer.from('123456789')) === 0xe3069283 ? (bytes) => nativeCrc32c(bytes) : undefined;
}

const native = loadNative();

/** Which implementation `crc32c` is. */
export const crc32cImplementation: 'native' | 'javascript' = native ? 'native' : 'javascript';

/** The CRC-32C of `bytes`, as an unsigned 32-bit number. */
export const crc32c: Crc32c = native ?? ((bytes) => crc32cJs(bytes));
