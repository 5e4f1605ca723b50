/**
 * Is a record value JSON text, and if not, why not — in words that never change.
 * The reason lands in the `_error` column, so it is part of the file's bytes: V8's own
 * JSON.parse messages differ between Node versions (and quote the input), and a Lambda
 * runtime update would then break rebuilds. The reason is found here.
 * Positions are byte offsets into the value.
 *
 * Validity (RFC 8259 JSON text in UTF-8, nothing before or after it, no BOM) is decided by
 * `isJsonText`, a byte-level validator about four times as fast as decoding and
 * JSON.parse (bench/json-check.ts); the reason for an invalid value comes from
 * `jsonValueReason`, the check as it always was (a fatal UTF-8 decode and JSON.parse,
 * then `firstInvalidUtf8` or `locateJsonError` for the words; by the `engines` rules of
 * encoder v4 on, `locateLoneSurrogate` after a JSON.parse that took the value), so reasons
 * cannot drift. test/unit/parquet.json-validator.test.ts holds the validator to JSON.parse
 * and to Python's json module, and the `engines` rules to DuckDB's JSON reader.
 *
 * Also here: the bound on values decoded into JSON text (`JSON_NESTING_LIMIT`,
 * `untypedJsonProblem`), which the registry decoders share.
 */

import { isUtf8 } from 'node:buffer';

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Which JSON text a file's encoder takes (issue 46). `engines`, from encoder v4 on: what
 * every engine we serve parses, so an escaped surrogate must be half of a pair (`\ud83d\ude00`);
 * DuckDB's JSON reader (yyjson) refuses a lone one (`"\ud800"`, `"\udc00"`, a high one
 * followed by anything but a low one) and with it every query that reads the column.
 * `json-parse`, the encoders before v4: what JSON.parse takes, any `\uXXXX` escape; their
 * files keep being rebuilt with it.
 */
export type JsonRules = 'engines' | 'json-parse';

/** null when `value` is UTF-8 JSON text by `rules`, else the reason it is not. */
export function jsonValueError(value: Uint8Array, rules: JsonRules = 'engines'): string | null {
  // jsonValueReason decides too: a value the fast check refused that JSON.parse took would be valid
  return isJsonText(value, 0, value.length, rules) ? null : jsonValueReason(value, rules);
}

/** `jsonValueError` of bytes [start, start + length) of `bytes`: a view is made only for a value with a byte above 0x7F (its UTF-8 check) or one that is not JSON. */
export function jsonSpanError(bytes: Uint8Array, start: number, length: number, rules: JsonRules = 'engines'): string | null {
  return isJsonText(bytes, start, start + length, rules) ? null : jsonValueReason(bytes.subarray(start, start + length), rules);
}

/**
 * The reference check, slow (it builds the parsed value and discards it): null when
 * `value` is UTF-8 JSON text by a fatal TextDecoder and JSON.parse (and, by the `engines`
 * rules, holds no lone surrogate escape), else the reason.
 */
export function jsonValueReason(value: Uint8Array, rules: JsonRules = 'engines'): string | null {
  let text: string;
  try {
    text = decoder.decode(value);
  } catch {
    const at = firstInvalidUtf8(value);
    return at < 0 ? 'value is not valid UTF-8' : `value is not valid UTF-8: bad byte 0x${value[at]!.toString(16).padStart(2, '0')} at byte ${at}`;
  }
  try {
    JSON.parse(text);
  } catch {
    const reason = locateJsonError(text);
    return reason ? `value is not valid JSON: ${reason}` : 'value is not valid JSON';
  }
  if (rules === 'json-parse' || !text.includes('\\u')) return null;
  const lone = locateLoneSurrogate(text);
  return lone ? `value is not valid JSON: ${lone}` : null;
}

// Byte classes. In a string body: 0 an ASCII byte that stands for itself, 1 the closing
// quote, 2 a backslash, 3 a control character (U+0000 to U+001F must be escaped), 4 a byte
// above 0x7F, part of a UTF-8 sequence (outside strings JSON is ASCII: the grammar refuses
// any other byte). Once the whole value is known to be well-formed UTF-8 (the first byte
// above 0x7F asks Node's native isUtf8 about all of it), such a byte stands for itself too.
const IN_STRING = new Uint8Array(256);
IN_STRING.fill(3, 0, 0x20);
IN_STRING.fill(4, 0x80, 0x100);
IN_STRING[0x22] = 1;
IN_STRING[0x5c] = 2;
const IN_UTF8_STRING = IN_STRING.slice();
IN_UTF8_STRING.fill(0, 0x80, 0x100);
// JSON whitespace: space, tab, line feed, carriage return; nothing else (no BOM, no NBSP)
const SPACE = new Uint8Array(256);
for (const c of [0x20, 0x09, 0x0a, 0x0d]) SPACE[c] = 1;
const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;
// a hex digit's value (0 for any other byte, which HEX tells apart)
const HEX_VALUE = new Uint8Array(256);
for (const c of '0123456789abcdef') HEX_VALUE[c.charCodeAt(0)] = HEX_VALUE[c.toUpperCase().charCodeAt(0)] = parseInt(c, 16);
// the characters after a backslash other than `u`
const ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPE[c.charCodeAt(0)] = 1;

/** The value isJsonText is checking starts here; whether its bytes were found well-formed UTF-8 (parsing never yields, so no two checks share these). */
let valueFrom = 0;
let utf8Known = false;
/** Whether the value is checked by the `json-parse` rules (an escaped lone surrogate is JSON text). */
let loneSurrogatesTaken = false;

const IN_ARRAY = 0;
const IN_OBJECT = 1;
/** Open containers of the value being checked, innermost last; kept between calls up to 64 KiB. */
let openKept = new Uint8Array(64);

/**
 * Whether bytes [from, to) of `b` are one JSON text (RFC 8259) in UTF-8: well-formed
 * UTF-8 throughout (no overlong forms, surrogates or code points above U+10FFFF; only
 * strings can hold bytes above 0x7F, and the first one found asks Node's native `isUtf8`,
 * simdutf, about the whole value, many times the speed of a check per sequence here; an
 * ASCII value is never asked), and exactly the JSON grammar over the bytes — whitespace
 * only space, tab, LF and CR; strings without raw control characters and with only the
 * escapes \" \\ \/ \b \f \n \r \t \uXXXX (any four hex digits, but by the `engines`
 * rules an escape in D800–DFFF must be a high surrogate followed at once by an escaped low
 * one: only such escapes are looked at twice, so the common path costs nothing more);
 * numbers `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`; `true`, `false`, `null`;
 * nothing but whitespace after the value. A leading byte order mark is not JSON text.
 * Iterative: containers are counted in `open`, so nesting depth is bounded by memory, not
 * by the call stack.
 */
export function isJsonText(b: Uint8Array, from = 0, to = b.length, rules: JsonRules = 'engines'): boolean {
  valueFrom = from;
  utf8Known = false;
  loneSurrogatesTaken = rules === 'json-parse';
  const n = to;
  let i = from;
  let depth = 0;
  let open = openKept;
  value: for (;;) {
    // a value is due at i
    while (i < n && SPACE[b[i]!] === 1) i++;
    if (i >= n) return false;
    const c = b[i]!;
    if (c === 0x22) {
      i = stringEnd(b, i + 1, n);
      if (i < 0) return false;
    } else if (c === 0x7b || c === 0x5b) {
      // { or [: empty, or the first member is due
      i++;
      while (i < n && SPACE[b[i]!] === 1) i++;
      if (i >= n) return false;
      if (b[i] === c + 2) i++; // } is { + 2, ] is [ + 2
      else {
        if (depth === open.length) {
          const grown = new Uint8Array(open.length * 2);
          grown.set(open);
          open = grown;
          if (grown.length <= 65_536) openKept = grown;
        }
        if (c === 0x5b) {
          open[depth++] = IN_ARRAY;
          continue value;
        }
        open[depth++] = IN_OBJECT;
        // the first member's key and colon (written out twice: as a function it cost 8%)
        if (b[i] !== 0x22) return false;
        i = stringEnd(b, i + 1, n);
        if (i < 0) return false;
        while (i < n && SPACE[b[i]!] === 1) i++;
        if (i >= n || b[i] !== 0x3a) return false;
        i++;
        continue value;
      }
    } else if (c === 0x74) {
      if (i + 3 >= n || b[i + 1] !== 0x72 || b[i + 2] !== 0x75 || b[i + 3] !== 0x65) return false; // true
      i += 4;
    } else if (c === 0x66) {
      if (i + 4 >= n || b[i + 1] !== 0x61 || b[i + 2] !== 0x6c || b[i + 3] !== 0x73 || b[i + 4] !== 0x65) return false; // false
      i += 5;
    } else if (c === 0x6e) {
      if (i + 3 >= n || b[i + 1] !== 0x75 || b[i + 2] !== 0x6c || b[i + 3] !== 0x6c) return false; // null
      i += 4;
    } else {
      i = numberEnd(b, i, n);
      if (i < 0) return false;
    }
    // a value ended at i: close containers until a comma asks for the next value
    for (;;) {
      while (i < n && SPACE[b[i]!] === 1) i++;
      if (depth === 0) return i === n;
      if (i >= n) return false;
      const d = b[i]!;
      const inObject = open[depth - 1] === IN_OBJECT;
      if (d === 0x2c) {
        i++;
        if (inObject) {
          // the next member's key and colon
          while (i < n && SPACE[b[i]!] === 1) i++;
          if (i >= n || b[i] !== 0x22) return false;
          i = stringEnd(b, i + 1, n);
          if (i < 0) return false;
          while (i < n && SPACE[b[i]!] === 1) i++;
          if (i >= n || b[i] !== 0x3a) return false;
          i++;
        }
        continue value;
      }
      if (d !== (inObject ? 0x7d : 0x5d)) return false;
      depth--;
      i++;
    }
  }
}

/** The index after the closing quote of the string whose body starts at i, or -1. */
function stringEnd(b: Uint8Array, i: number, n: number): number {
  if (utf8Known) return utf8StringEnd(b, i, n);
  const kind = IN_STRING; // a constant local: read once, not per byte
  for (;;) {
    // four plain bytes at a time: one branch for a plain run (eight at a time wasted lookups on short keys and values: 9 % slower on the peers' JSON)
    while (i + 4 <= n && (kind[b[i]!]! | kind[b[i + 1]!]! | kind[b[i + 2]!]! | kind[b[i + 3]!]!) === 0) {
      i += 4;
    }
    let k = 0;
    while (i < n && (k = kind[b[i]!]!) === 0) i++;
    if (i >= n) return -1;
    if (k === 1) return i + 1;
    if (k === 4) {
      // the value's first byte above 0x7F: its whole UTF-8, natively, once (a view: isUtf8 reads a whole array)
      if (!isUtf8(b.subarray(valueFrom, n))) return -1;
      utf8Known = true;
      return utf8StringEnd(b, i, n);
    }
    i = escapeEnd(b, i, n, k);
    if (i < 0) return -1;
  }
}

/**
 * stringEnd in a value known to be well-formed UTF-8: a byte above 0x7F stands for itself.
 * The same loop as stringEnd's over another constant table, written twice on purpose: one
 * function given its table (as a parameter, or a local chosen per call) measured 15-16 %
 * slower on ASCII event JSON.
 */
function utf8StringEnd(b: Uint8Array, i: number, n: number): number {
  const kind = IN_UTF8_STRING;
  for (;;) {
    while (i + 4 <= n && (kind[b[i]!]! | kind[b[i + 1]!]! | kind[b[i + 2]!]! | kind[b[i + 3]!]!) === 0) {
      i += 4;
    }
    let k = 0;
    while (i < n && (k = kind[b[i]!]!) === 0) i++;
    if (i >= n) return -1;
    if (k === 1) return i + 1;
    i = escapeEnd(b, i, n, k);
    if (i < 0) return -1;
  }
}

/** The index after the escape at i (byte class `k`: a backslash), or -1 for a control character or a bad escape. */
function escapeEnd(b: Uint8Array, i: number, n: number, k: number): number {
  if (k !== 2 || i + 1 >= n) return -1; // a control character, or a backslash at the end
  const e = b[i + 1]!;
  if (e === 0x75) {
    if (i + 5 >= n || HEX[b[i + 2]!] === 0 || HEX[b[i + 3]!] === 0 || HEX[b[i + 4]!] === 0 || HEX[b[i + 5]!] === 0) return -1;
    // \uD800-\uDFFF (`d` or `D`, then 8-f): a surrogate, which must be a high one and its low one
    if ((b[i + 2]! | 0x20) === 0x64 && HEX_VALUE[b[i + 3]!]! >= 8 && !loneSurrogatesTaken) return surrogatePairEnd(b, i, n);
    return i + 6;
  }
  return ESCAPE[e] === 1 ? i + 2 : -1;
}

/** The index after the escaped surrogate pair at i (a `\uD8xx`-`\uDFxx` escape, checked as an escape), or -1 when it is not a high surrogate followed at once by an escaped low one. */
function surrogatePairEnd(b: Uint8Array, i: number, n: number): number {
  if (HEX_VALUE[b[i + 3]!]! >= 0xc) return -1; // a low surrogate with no high one before it
  const j = i + 6;
  if (j + 5 >= n || b[j] !== 0x5c || b[j + 1] !== 0x75 || (b[j + 2]! | 0x20) !== 0x64 || HEX_VALUE[b[j + 3]!]! < 0xc || HEX[b[j + 4]!] === 0 || HEX[b[j + 5]!] === 0) return -1;
  return j + 6;
}

/** The index after the number that starts at i (i < n), or -1 if none does. */
function numberEnd(b: Uint8Array, i: number, n: number): number {
  if (b[i] === 0x2d) i++;
  if (i >= n) return -1;
  let c = b[i]!;
  if (c === 0x30) i++;
  else if (c >= 0x31 && c <= 0x39) {
    i++;
    while (i < n && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
  } else return -1;
  if (i < n && b[i] === 0x2e) {
    const start = ++i;
    while (i < n && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
    if (i === start) return -1;
  }
  if (i < n && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < n && (b[i] === 0x2b || b[i] === 0x2d)) i++;
    const start = i;
    while (i < n && (c = b[i]!) >= 0x30 && c <= 0x39) i++;
    if (i === start) return -1;
  }
  return i;
}

/** The length of the UTF-8 sequence that lead byte `c` starts (2 to 4), or 0 when no well-formed one starts with it. */
function utf8SequenceLength(c: number): number {
  return c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/** The second byte's limits after lead byte `c`: they exclude overlongs, surrogates and code points above U+10FFFF. */
function secondByteFits(c: number, second: number): boolean {
  return second >= (c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80) && second <= (c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf);
}

/** Index of the first byte of [from, to) that does not start or continue a well-formed UTF-8 sequence there; -1 if none. */
export function firstInvalidUtf8(b: Uint8Array, from = 0, to = b.length): number {
  let i = from;
  while (i < to) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    const len = utf8SequenceLength(c);
    if (len === 0 || i + len > to) return i;
    if (!secondByteFits(c, b[i + 1]!)) return i + 1;
    for (let k = 2; k < len; k++) if ((b[i + k]! & 0xc0) !== 0x80) return i + k;
    i += len;
  }
  return -1;
}

const ARRAY = 0;
const OBJECT = 1;

/**
 * The first place where `text` stops being JSON, e.g. `unexpected "n" at byte 1` or
 * `unexpected end of input`; null if it is JSON after all. Iterative, so deep nesting
 * cannot overflow the stack.
 */
export function locateJsonError(text: string): string | null {
  const n = text.length;
  const stack: number[] = [];
  let i = 0;
  const skipSpace = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      i++;
    }
  };
  const fail = (): string => {
    if (i >= n) return 'unexpected end of input';
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    return `unexpected ${JSON.stringify(ch)} at byte ${Buffer.byteLength(text.slice(0, i), 'utf8')}`;
  };
  const digits = (): boolean => {
    const start = i;
    while (i < n && text.charCodeAt(i) >= 0x30 && text.charCodeAt(i) <= 0x39) i++;
    return i > start;
  };
  const scanString = (): boolean => {
    i++; // opening quote
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return true;
      }
      if (c < 0x20) return false;
      if (c !== 0x5c) {
        i++;
        continue;
      }
      i++;
      const e = text[i];
      if (e === 'u') {
        for (let k = 0; k < 4; k++) {
          i++;
          if (!/^[0-9a-fA-F]$/.test(text[i] ?? '')) return false;
        }
        i++;
      } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
      else return false;
    }
    return false;
  };
  const scanNumber = (): boolean => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else if (!digits()) return false;
    if (text[i] === '.') {
      i++;
      if (!digits()) return false;
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      if (!digits()) return false;
    }
    return true;
  };
  const scanWord = (word: string): boolean => {
    for (const ch of word) {
      if (text[i] !== ch) return false;
      i++;
    }
    return true;
  };

  let state: 'value' | 'key' | 'after' = 'value';
  for (;;) {
    skipSpace();
    if (state === 'key') {
      if (text[i] !== '"' || !scanString()) return fail();
      skipSpace();
      if (text[i] !== ':') return fail();
      i++;
      state = 'value';
    } else if (state === 'value') {
      const c = text[i];
      if (c === '{' || c === '[') {
        i++;
        skipSpace();
        if (text[i] === (c === '{' ? '}' : ']')) {
          i++;
          state = 'after';
        } else {
          stack.push(c === '{' ? OBJECT : ARRAY);
          state = c === '{' ? 'key' : 'value';
        }
      } else if (c === '"') {
        if (!scanString()) return fail();
        state = 'after';
      } else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
        if (!scanNumber()) return fail();
        state = 'after';
      } else if (c === 't' || c === 'f' || c === 'n') {
        if (!scanWord(c === 't' ? 'true' : c === 'f' ? 'false' : 'null')) return fail();
        state = 'after';
      } else return fail();
    } else {
      const top = stack[stack.length - 1];
      if (top === undefined) return i < n ? fail() : null;
      const c = text[i];
      if (c === ',') {
        i++;
        state = top === OBJECT ? 'key' : 'value';
      } else if (c === (top === OBJECT ? '}' : ']')) {
        i++;
        stack.pop();
      } else return fail();
    }
  }
}

/**
 * Where JSON text (one JSON.parse takes) holds an escaped surrogate that is not half of a
 * pair, e.g. `lone surrogate escape \ud800 at byte 6`; null if none. A high surrogate
 * (D800–DBFF) must be followed at once by an escaped low one (DC00–DFFF), as DuckDB's
 * reader demands.
 */
export function locateLoneSurrogate(text: string): string | null {
  const n = text.length;
  const unit = (at: number): number => (text[at] === '\\' && text[at + 1] === 'u' ? Number.parseInt(text.slice(at + 2, at + 6), 16) : -1);
  let inString = false;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) inString = !inString;
    else if (inString && c === 0x5c) {
      const u = unit(i);
      if (u < 0) {
        i++; // a one-character escape
        continue;
      }
      if (u >= 0xd800 && u <= 0xdfff) {
        const low = unit(i + 6);
        if (u >= 0xdc00 || low < 0xdc00 || low > 0xdfff) return `lone surrogate escape ${text.slice(i, i + 6)} at byte ${Buffer.byteLength(text.slice(0, i), 'utf8')}`;
        i += 6; // the low half too
      }
      i += 5;
    }
  }
  return null;
}

/**
 * How deep arrays and objects may nest in a value that becomes JSON text from a decoded
 * value (a registry table's untyped value, by the `engines` rules): JSON.stringify and
 * every walk over a decoded value recurse, and the smallest stack any of our threads runs
 * on (a main thread's, about 984 KiB; build workers get 4 MiB) stringifies some 2,200
 * levels with a replacer and 4,100 without. 1,000 leaves room for the callers' frames, and
 * is the depth the decode gives whatever thread it runs on (docs/design.md).
 */
export const JSON_NESTING_LIMIT = 1000;

/**
 * Why a decoded value cannot be JSON text by the `engines` rules, or null: nesting deeper
 * than JSON_NESTING_LIMIT, or a string or key holding a lone surrogate. The value is
 * JSON.parse's (arrays, plain objects, strings, numbers, booleans, null) or avsc's (also
 * Maps, which become objects, byte arrays and bigints, which become one string or number).
 * Iterative, so that any depth is answered on any stack.
 */
export function untypedJsonProblem(value: unknown): string | null {
  const pending: unknown[] = [value];
  const depths: number[] = [0];
  while (pending.length > 0) {
    const v = pending.pop();
    const depth = depths.pop()!;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return LONE_SURROGATE;
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (ArrayBuffer.isView(v)) continue; // bytes (an Avro value's), written as one string
    if (depth === JSON_NESTING_LIMIT) return NESTED_TOO_DEEP;
    if (Array.isArray(v) || v instanceof Map) {
      const items = Array.isArray(v) ? v : [...v.values()];
      for (let k = items.length - 1; k >= 0; k--) {
        pending.push(items[k]);
        depths.push(depth + 1);
      }
      continue;
    }
    const keys = Object.keys(v);
    for (let k = keys.length - 1; k >= 0; k--) {
      if (!keys[k]!.isWellFormed()) return LONE_SURROGATE;
      pending.push((v as Record<string, unknown>)[keys[k]!]);
      depths.push(depth + 1);
    }
  }
  return null;
}

const LONE_SURROGATE = 'a string holds a lone surrogate, which UTF-8 text cannot hold';
/** Why a decoded value nested too deep is an error row. */
export const NESTED_TOO_DEEP = `arrays and objects nest deeper than ${JSON_NESTING_LIMIT} levels, the limit of a JSON value decoded into JSON text`;
