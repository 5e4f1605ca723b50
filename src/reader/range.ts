/**
 * The Range header of a file request (RFC 9110 §14): one byte range, `bytes=first-last`
 * (both inclusive), `bytes=first-` (to the end) or `bytes=-length` (the last `length`
 * bytes). The answer is a half-open [start, end) inside the file, or why not:
 * `malformed` (400: the header is not a byte range we read) or `unsatisfiable` (416:
 * well-formed, but no byte of it lies in the file).
 */
export type RangeAnswer =
  | { kind: 'range'; start: number; end: number }
  | { kind: 'malformed'; reason: string }
  | { kind: 'unsatisfiable'; reason: string };

const single = /^bytes=(\d*)-(\d*)$/;

export function parseRange(header: string, size: number): RangeAnswer {
  const text = header.trim();
  if (text.includes(',')) return { kind: 'unsatisfiable', reason: `Range "${text}" asks for several ranges; ask for one range per request` };
  const match = single.exec(text);
  if (!match) return { kind: 'malformed', reason: `Range "${text}" is not a byte range (expected bytes=FIRST-LAST, bytes=FIRST- or bytes=-LENGTH)` };
  const [, firstText = '', lastText = ''] = match;
  if (firstText === '' && lastText === '') return { kind: 'malformed', reason: `Range "${text}" names neither a first byte nor a length` };
  if (firstText === '') {
    const length = Number(lastText);
    if (length === 0) return { kind: 'unsatisfiable', reason: `Range "${text}" asks for the last 0 bytes` };
    return { kind: 'range', start: Math.max(0, size - length), end: size };
  }
  const first = Number(firstText);
  const last = lastText === '' ? Infinity : Number(lastText);
  if (last < first) return { kind: 'malformed', reason: `Range "${text}" ends (${last}) before it starts (${first})` };
  if (first >= size) return { kind: 'unsatisfiable', reason: `Range "${text}" starts at byte ${first}, but the file has ${size} bytes` };
  return { kind: 'range', start: first, end: Math.min(size, last + 1) };
}
