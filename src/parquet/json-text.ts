/**
 * Is a record value JSON text, and if not, why not — in words that never change.
 * The reason lands in the `_error` column, so it is part of the file's bytes: V8's own
 * JSON.parse messages differ between Node versions (and quote the input), and a Lambda
 * runtime update would then break rebuilds. So JSON.parse (and a fatal UTF-8 decode)
 * only decide validity, which the JSON grammar fixes; the reason is found here.
 * Positions are byte offsets into the value.
 */
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** null when `value` is UTF-8 JSON text, else the reason it is not. */
export function jsonValueError(value: Uint8Array): string | null {
  let text: string;
  try {
    text = decoder.decode(value);
  } catch {
    const at = firstInvalidUtf8(value);
    return at < 0 ? 'value is not valid UTF-8' : `value is not valid UTF-8: bad byte 0x${value[at]!.toString(16).padStart(2, '0')} at byte ${at}`;
  }
  try {
    JSON.parse(text);
    return null;
  } catch {
    const reason = locateJsonError(text);
    return reason ? `value is not valid JSON: ${reason}` : 'value is not valid JSON';
  }
}

/** Index of the first byte that does not start or continue a well-formed UTF-8 sequence. */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    const len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len === 0 || i + len > b.length) return i;
    // second-byte limits exclude overlongs, surrogates and code points above U+10FFFF
    const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
    if (b[i + 1]! < lo || b[i + 1]! > hi) return i + 1;
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
