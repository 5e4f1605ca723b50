/**
 * A field of JSON text by path, as DuckDB's `_value->>'$.a.b'` sees it, without parsing
 * the whole value: the scan stops at the field. DuckDB reads JSON with yyjson, whose
 * object look-up returns the first member of a name (JSON.parse keeps the last), so the
 * first one counts here too. The text DuckDB gives for a value:
 *   string         its characters, unescaped
 *   integer        its digits as written (yyjson keeps integers of int64/uint64 exactly
 *                  and writes them back unchanged)
 *   true / false   'true' / 'false'
 *   null, absent   SQL NULL (no key)
 * Anything else (a number with a fraction or exponent, an integer out of 64 bits, an
 * object or an array) comes back as text that depends on DuckDB's number formatting and
 * JSON writer: for those the field's text is not known here (`unknownText`), and a
 * granule holding one is never skipped. Input is text that passed `isJsonText`.
 */

export const unknownText = Symbol('unknown JSON text');

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The field's text as UTF-8 bytes, null (NULL), or unknownText. */
export function jsonFieldText(json: Uint8Array, path: readonly string[]): Uint8Array | null | typeof unknownText {
  return jsonFieldReader(path)(json);
}

/** A reader of one path, its names encoded once (it runs once per row). */
export function jsonFieldReader(path: readonly string[]): (json: Uint8Array) => Uint8Array | null | typeof unknownText {
  const names = path.map((name) => ({ name, bytes: encoder.encode(name) }));
  return (json) => {
    let at = skipSpace(json, 0);
    for (const name of names) {
      if (json[at] !== 0x7b /* { */) return null;
      const member = findMember(json, at, name);
      if (member < 0) return null;
      at = member;
    }
    return scalarText(json, at);
  };
}

function skipSpace(b: Uint8Array, at: number): number {
  while (at < b.length) {
    const c = b[at]!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
    at++;
  }
  return at;
}

/** The end of the string starting at `at` (its opening quote), just past its closing quote. */
function stringEnd(b: Uint8Array, at: number): number {
  let i = at + 1;
  for (;;) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    i += c === BACKSLASH ? 2 : 1;
  }
}

/** The end of the value starting at `at`. */
function valueEnd(b: Uint8Array, at: number): number {
  const c = b[at]!;
  if (c === QUOTE) return stringEnd(b, at);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    let i = at;
    for (;;) {
      const d = b[i]!;
      if (d === QUOTE) {
        i = stringEnd(b, i);
        continue;
      }
      if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
  }
  let i = at;
  while (i < b.length) {
    const d = b[i]!;
    if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x09 || d === 0x0a || d === 0x0d) break;
    i++;
  }
  return i;
}

/** Where the value of the object's first member called `name` starts, or -1. */
function findMember(b: Uint8Array, objectAt: number, name: { name: string; bytes: Uint8Array }): number {
  let at = skipSpace(b, objectAt + 1);
  if (b[at] === 0x7d) return -1;
  for (;;) {
    const keyEnd = stringEnd(b, at);
    const matches = keyEquals(b, at, keyEnd, name);
    at = skipSpace(b, skipSpace(b, keyEnd) + 1); // past the colon
    if (matches) return at;
    at = skipSpace(b, valueEnd(b, at));
    if (b[at] !== 0x2c) return -1;
    at = skipSpace(b, at + 1);
  }
}

function keyEquals(b: Uint8Array, start: number, end: number, name: { name: string; bytes: Uint8Array }): boolean {
  const length = end - 1 - (start + 1);
  let escaped = false;
  for (let i = start + 1; i < end - 1; i++) {
    if (b[i] === BACKSLASH) {
      escaped = true;
      break;
    }
  }
  if (!escaped) {
    if (length !== name.bytes.length) return false;
    for (let i = 0; i < length; i++) if (b[start + 1 + i] !== name.bytes[i]) return false;
    return true;
  }
  return unescape(b.subarray(start, end)) === name.name;
}

/** A JSON string (with its quotes) as text; undefined when it holds an escaped lone surrogate. */
function unescape(quotedText: Uint8Array): string | undefined {
  const text = JSON.parse(utf8.decode(quotedText)) as string;
  return text.isWellFormed() ? text : undefined;
}

const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;
const encoder = new TextEncoder();

function scalarText(b: Uint8Array, at: number): Uint8Array | null | typeof unknownText {
  const c = b[at];
  if (c === QUOTE) {
    const end = stringEnd(b, at);
    const raw = b.subarray(at + 1, end - 1);
    if (!raw.includes(BACKSLASH)) return raw;
    const text = unescape(b.subarray(at, end));
    return text === undefined ? unknownText : encoder.encode(text);
  }
  if (c === 0x7b || c === 0x5b || c === undefined) return unknownText;
  const token = b.subarray(at, valueEnd(b, at));
  if (sameBytes(token, TRUE) || sameBytes(token, FALSE)) return token;
  if (sameBytes(token, NULL)) return null;
  return integerToken(token) ? token : unknownText;
}

const TRUE = encoder.encode('true');
const FALSE = encoder.encode('false');
const NULL = encoder.encode('null');

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** An integer as JSON writes it (no leading zeros, not -0) within int64 or uint64: yyjson keeps it exactly. */
function integerToken(token: Uint8Array): boolean {
  const negative = token[0] === 0x2d;
  const first = negative ? 1 : 0;
  const digits = token.length - first;
  if (digits === 0 || digits > 20) return false;
  for (let i = first; i < token.length; i++) {
    const c = token[i]!;
    if (c < 0x30 || c > 0x39) return false;
  }
  if (token[first] === 0x30 && digits > 1) return false;
  if (negative && digits === 1 && token[first] === 0x30) return false;
  if (digits <= 18) return true;
  const value = BigInt(utf8.decode(token));
  return value >= INT64_MIN && value <= UINT64_MAX;
}
