/**
 * The Range header of a file request (RFC 9110 §14). We serve one byte range:
 * `bytes=first-last` (both inclusive), `bytes=first-` (to the end) or `bytes=-length`
 * (the last `length` bytes), as a half-open [start, end) inside the file. Otherwise:
 *
 *   ignore          a header with another unit, one that cannot be parsed, or several
 *                   ranges: the server may ignore Range (§14.2), and answers 200 with
 *                   the whole file, as a server without range support would
 *   unsatisfiable   a valid byte range with no byte in the file, or an invalid one
 *                   (last before first, a suffix of 0 bytes): 416 with `bytes *\/size`
 */
export type RangeAnswer =
  | { kind: 'range'; start: number; end: number }
  | { kind: 'ignore'; reason: string }
  | { kind: 'unsatisfiable'; reason: string };

const byteRange = /^(\d*)-(\d*)$/;

export function parseRange(header: string, size: number): RangeAnswer {
  const text = header.trim();
  const unit = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)=(.*)$/.exec(text);
  if (!unit) return { kind: 'ignore', reason: `Range "${text}" cannot be parsed` };
  if (unit[1]!.toLowerCase() !== 'bytes') return { kind: 'ignore', reason: `Range unit "${unit[1]}" is not bytes` };
  const specs = unit[2]!.split(',').map((spec) => spec.trim());
  if (specs.length > 1) return { kind: 'ignore', reason: `Range "${text}" asks for ${specs.length} ranges; the whole file is served` };
  const match = byteRange.exec(specs[0]!);
  if (!match || (match[1] === '' && match[2] === '')) return { kind: 'ignore', reason: `Range "${text}" cannot be parsed` };
  const [, firstText = '', lastText = ''] = match;
  if (firstText === '') {
    const length = BigInt(lastText);
    if (length === 0n) return { kind: 'unsatisfiable', reason: `Range "${text}" asks for the last 0 bytes` };
    return { kind: 'range', start: length >= BigInt(size) ? 0 : size - Number(length), end: size };
  }
  // positions as bigint: a huge one is named as written, never as 1e+23
  const first = BigInt(firstText);
  const last = lastText === '' ? undefined : BigInt(lastText);
  if (last !== undefined && last < first) return { kind: 'unsatisfiable', reason: `Range "${text}" ends (${last}) before it starts (${first})` };
  if (first >= BigInt(size)) return { kind: 'unsatisfiable', reason: `Range "${text}" starts at byte ${first}, but the file has ${size} bytes` };
  return { kind: 'range', start: Number(first), end: last === undefined || last + 1n > BigInt(size) ? size : Number(last) + 1 };
}
