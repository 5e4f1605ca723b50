/**
 * The byte-level JSON check (`isJsonText`) against two independent oracles, and its
 * reasons against the reference check's.
 *
 * Oracles, each deciding "this value is one JSON text in UTF-8":
 *   V8      JSON.parse of a fatal, BOM-keeping TextDecoder's text — the check indexing
 *           made before the byte-level one (so also the definition we must keep).
 *   Python  json.loads(value.decode('utf-8'), parse_constant=refuse, parse_int=…,
 *           parse_float=…) with CPython's C scanner. Chosen with care:
 *           - bytes.decode('utf-8') is strict: it refuses overlong forms, encoded
 *             surrogates (ED A0 80: Python needs 'surrogatepass' to take them) and code
 *             points above U+10FFFF, and keeps a BOM as U+FEFF ('utf-8-sig' would drop it);
 *             json.loads of bytes would guess the encoding and drop a BOM, so it is not used;
 *           - json.loads refuses U+FEFF before the value itself ("Unexpected UTF-8 BOM");
 *           - it takes NaN, Infinity and -Infinity unless parse_constant refuses them;
 *           - it refuses integers of more than 4300 digits (CPython's int conversion limit,
 *             not the grammar), so parse_int / parse_float are given a function that
 *             converts nothing: the scanner has matched the grammar before calling it;
 *           - the C scanner matches only ASCII digits (the pure-Python one's regex `\d`
 *             would take other Unicode digits), and is recursive: nesting beyond the
 *             recursion limit is a RecursionError, so Python abstains on the deep cases.
 *           Lone surrogate escapes ("\ud800") are JSON text for both (RFC 8259 §8.2
 *           leaves their meaning open, not their validity).
 * These are the `json-parse` rules (encoders before v4). The `engines` rules (v4 on) also
 * refuse a lone surrogate escape, as DuckDB does: their oracles are DuckDB's JSON cast and
 * Python's json with every string and key encoded as UTF-8 after.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isJsonText, jsonValueError, jsonValueReason, type JsonRules } from '../../src/parquet/index.js';

const utf8 = new TextEncoder();
/** isJsonText of a whole value by `rules`. */
const jsonTextBy = (b: Uint8Array, rules: JsonRules): boolean => isJsonText(b, 0, b.length, rules);
const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function prng(seed: number): () => number {
  return () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}

/** Bytes from text (well-formed: encoded as UTF-8) and byte arrays, concatenated. */
function bytes(...parts: (string | readonly number[])[]): Uint8Array {
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? utf8.encode(p) : Uint8Array.from(p))));
}

function v8Oracle(b: Uint8Array): boolean {
  try {
    JSON.parse(fatal.decode(b));
    return true;
  } catch {
    return false;
  }
}

const PYTHON_ORACLE = `
import json, sys
def refuse(name):
    raise ValueError('not JSON: ' + name)
def keep(text):
    return 0
engines = sys.argv[1] == 'engines'
out = []
for line in sys.stdin.read().split('\\n'):
    if line == '':
        continue
    value = bytes.fromhex(line[1:])
    try:
        # by the engines rules objects are kept as lists of (key, value) pairs: a repeated key keeps every value
        hook = list if engines else None
        parsed = json.loads(value.decode('utf-8'), parse_constant=refuse, parse_int=keep, parse_float=keep, object_pairs_hook=hook)
        if engines:
            # every string and key Unicode text: a lone surrogate cannot be encoded (UnicodeEncodeError)
            json.dumps(parsed, ensure_ascii=False).encode('utf-8')
        out.append('y')
    except RecursionError:
        out.append('r')
    except ValueError:  # UnicodeDecodeError and json.JSONDecodeError are ValueErrors
        out.append('n')
sys.stdout.write(''.join(out))
`;

/**
 * Python's verdict per value: true, false, or undefined when it ran out of recursion. By
 * the `engines` rules the parsed value's strings and keys must also encode as UTF-8, which
 * a lone surrogate does not (Python's json joins an escaped pair into one character).
 */
function pythonOracle(values: readonly Uint8Array[], rules: JsonRules = 'json-parse'): (boolean | undefined)[] {
  const input = values.map((v) => `x${Buffer.from(v).toString('hex')}\n`).join('');
  const out = execFileSync('python3', ['-c', PYTHON_ORACLE, rules], { input, maxBuffer: 1 << 30, encoding: 'utf8' });
  expect(out.length).toBe(values.length);
  return [...out].map((c) => (c === 'y' ? true : c === 'n' ? false : undefined));
}

const show = (b: Uint8Array): string => (b.length > 80 ? `${Buffer.from(b.subarray(0, 80)).toString('hex')}… (${b.length} bytes)` : Buffer.from(b).toString('hex'));

// ---------------------------------------------------------------------------------------
// Edge cases from the RFC 8259 grammar (written here, not taken from JSONTestSuite).
// y_: JSON text. n_: not, with the reason the check gave before the byte-level validator
// (computed with the jsonValueError of 370e2bc; the reason is part of a file's bytes).

type Case = { name: string; value: Uint8Array; deep?: boolean };
const deep = (name: string, value: Uint8Array): Case => ({ name, value, deep: true });

const yes: Case[] = [
  // values of every kind at the top level
  ...['null', 'true', 'false', '0', '-0', '""', '"a"', '123', '-1', '1.5', '-0.0', '1e5', '1E5', '1e+5', '1e-5', '-0.0e-0', '0e0', '1.0E+2', '9007199254740993'].map(
    (t) => ({ name: `y_scalar ${t}`, value: bytes(t) }),
  ),
  { name: 'y_number 400 digits', value: bytes('1'.repeat(400)) },
  { name: 'y_number 5000 digits (beyond CPython int conversion)', value: bytes('-1' + '0'.repeat(5000)) },
  { name: 'y_number huge exponent', value: bytes('1e99999') },
  { name: 'y_number tiny exponent', value: bytes('-1.5e-99999') },
  { name: 'y_number long fraction', value: bytes('0.' + '0'.repeat(300) + '1') },
  // whitespace: exactly SP, HT, LF, CR, anywhere between tokens
  { name: 'y_ws around scalar', value: bytes(' \t\n\r1 \t\n\r') },
  { name: 'y_ws CRLF array', value: bytes('\r\n[\r\n]\r\n') },
  { name: 'y_ws everywhere in object', value: bytes(' \t\n\r{ \t\n\r"a" \t\n\r: \t\n\r1 \t\n\r, "b" :[ 2 , 3 ] } ') },
  // containers
  ...['[]', '{}', '[ ]', '{ }', '[[]]', '[{}]', '{"a":{}}', '[1,[2,[3]]]', '{"":0}', '{"a":1,"a":2}', '[null,true,false]', '[-0]', '[1e1,0.5,-2E-2]', '{"a":[{"b":[]}],"c":{"d":null}}', '[""]', '[[],[[]],{}]'].map(
    (t) => ({ name: `y_container ${t}`, value: bytes(t) }),
  ),
  // strings and escapes
  { name: 'y_string all simple escapes', value: bytes('"\\"\\\\\\/\\b\\f\\n\\r\\t"') },
  { name: 'y_string \\u0000', value: bytes('"\\u0000"') },
  { name: 'y_string lone high surrogate escape', value: bytes('"\\uD800"') },
  { name: 'y_string lone low surrogate escape', value: bytes('"\\udc00"') },
  { name: 'y_string reversed surrogate escapes', value: bytes('"\\uDFFF\\uD800"') },
  { name: 'y_string surrogate pair escape', value: bytes('"\\uD83D\\uDE00"') },
  { name: 'y_string \\uFFFF and mixed-case hex', value: bytes('"\\uFFFF\\u00e9\\u00E9\\uAbCd"') },
  { name: 'y_string raw DEL', value: bytes([0x22, 0x7f, 0x22]) },
  { name: 'y_string unescaped slash and brackets', value: bytes('"/[]{}:,"') },
  { name: 'y_string escaped backslash before quote', value: bytes('"a\\\\"') },
  { name: 'y_string escaped quote', value: bytes('"a\\"b"') },
  { name: 'y_string key with escapes', value: bytes('{"\\u0041\\n":"\\t"}') },
  // UTF-8 at its boundaries, raw inside strings
  { name: 'y_utf8 U+0080 (C2 80)', value: bytes([0x22, 0xc2, 0x80, 0x22]) },
  { name: 'y_utf8 U+07FF (DF BF)', value: bytes([0x22, 0xdf, 0xbf, 0x22]) },
  { name: 'y_utf8 U+0800 (E0 A0 80)', value: bytes([0x22, 0xe0, 0xa0, 0x80, 0x22]) },
  { name: 'y_utf8 U+D7FF (ED 9F BF)', value: bytes([0x22, 0xed, 0x9f, 0xbf, 0x22]) },
  { name: 'y_utf8 U+E000 (EE 80 80)', value: bytes([0x22, 0xee, 0x80, 0x80, 0x22]) },
  { name: 'y_utf8 U+FEFF inside a string', value: bytes([0x22, 0xef, 0xbb, 0xbf, 0x22]) },
  { name: 'y_utf8 noncharacters U+FFFE U+FFFF', value: bytes([0x22, 0xef, 0xbf, 0xbe, 0xef, 0xbf, 0xbf, 0x22]) },
  { name: 'y_utf8 U+10000 (F0 90 80 80)', value: bytes([0x22, 0xf0, 0x90, 0x80, 0x80, 0x22]) },
  { name: 'y_utf8 U+10FFFF (F4 8F BF BF)', value: bytes([0x22, 0xf4, 0x8f, 0xbf, 0xbf, 0x22]) },
  { name: 'y_utf8 text', value: bytes('{"ünïcødé":"日本語 😀"}') },
  // nesting
  { name: 'y_nesting 500 objects', value: bytes('{"a":'.repeat(500) + '1' + '}'.repeat(500)) },
  deep('y_nesting 100000 arrays', bytes('['.repeat(100_000) + ']'.repeat(100_000))),
  deep('y_nesting 50000 objects', bytes('{"":'.repeat(50_000) + '[]' + '}'.repeat(50_000))),
];

const BOM = [0xef, 0xbb, 0xbf];
const no: [name: string, value: Uint8Array, reason: string, deep?: boolean][] = [
  // nothing, or only whitespace
  ['n_empty', bytes(''), 'value is not valid JSON: unexpected end of input'],
  ['n_only whitespace', bytes(' \t\n\r'), 'value is not valid JSON: unexpected end of input'],
  // a byte order mark is not whitespace
  ['n_bom before object', bytes(BOM, '{}'), 'value is not valid JSON: unexpected "\ufeff" at byte 0'],
  ['n_bom before number', bytes(BOM, '1'), 'value is not valid JSON: unexpected "\ufeff" at byte 0'],
  ['n_bom after value', bytes('{}', BOM), 'value is not valid JSON: unexpected "\ufeff" at byte 2'],
  ['n_bom after space', bytes(' ', BOM, '1'), 'value is not valid JSON: unexpected "\ufeff" at byte 1'],
  // other whitespace
  ['n_ws no-break space', bytes('\u00a01'), 'value is not valid JSON: unexpected "\u00a0" at byte 0'],
  ['n_ws form feed', bytes('\f1'), 'value is not valid JSON: unexpected "\\f" at byte 0'],
  ['n_ws vertical tab', bytes('[1\v]'), 'value is not valid JSON: unexpected "\\u000b" at byte 2'],
  ['n_ws line separator', bytes('1\u2028'), 'value is not valid JSON: unexpected "\u2028" at byte 1'],
  ['n_ws NUL', bytes([0x00]), 'value is not valid JSON: unexpected "\\u0000" at byte 0'],
  ['n_ws NUL after value', bytes('[1]', [0x00]), 'value is not valid JSON: unexpected "\\u0000" at byte 3'],
  // literals
  ['n_literal nul', bytes('nul'), 'value is not valid JSON: unexpected end of input'],
  ['n_literal tru', bytes('[tru]'), 'value is not valid JSON: unexpected "]" at byte 4'],
  ['n_literal fals', bytes('fals'), 'value is not valid JSON: unexpected end of input'],
  ['n_literal True', bytes('True'), 'value is not valid JSON: unexpected "T" at byte 0'],
  ['n_literal NULL', bytes('NULL'), 'value is not valid JSON: unexpected "N" at byte 0'],
  ['n_literal nulll', bytes('nulll'), 'value is not valid JSON: unexpected "l" at byte 4'],
  ['n_literal NaN', bytes('NaN'), 'value is not valid JSON: unexpected "N" at byte 0'],
  ['n_literal Infinity', bytes('Infinity'), 'value is not valid JSON: unexpected "I" at byte 0'],
  ['n_literal -Infinity', bytes('-Infinity'), 'value is not valid JSON: unexpected "I" at byte 1'],
  ['n_literal [NaN]', bytes('[NaN]'), 'value is not valid JSON: unexpected "N" at byte 1'],
  ['n_literal undefined', bytes('undefined'), 'value is not valid JSON: unexpected "u" at byte 0'],
  ['n_literal truefalse', bytes('truefalse'), 'value is not valid JSON: unexpected "f" at byte 4'],
  ['n_literal null null', bytes('null null'), 'value is not valid JSON: unexpected "n" at byte 5'],
  // numbers
  ['n_number 01', bytes('01'), 'value is not valid JSON: unexpected "1" at byte 1'],
  ['n_number -01', bytes('-01'), 'value is not valid JSON: unexpected "1" at byte 2'],
  ['n_number 00', bytes('00'), 'value is not valid JSON: unexpected "0" at byte 1'],
  ['n_number +1', bytes('+1'), 'value is not valid JSON: unexpected "+" at byte 0'],
  ['n_number -', bytes('-'), 'value is not valid JSON: unexpected end of input'],
  ['n_number [-]', bytes('[-]'), 'value is not valid JSON: unexpected "]" at byte 2'],
  ['n_number .5', bytes('.5'), 'value is not valid JSON: unexpected "." at byte 0'],
  ['n_number 1.', bytes('1.'), 'value is not valid JSON: unexpected end of input'],
  ['n_number 1.e5', bytes('1.e5'), 'value is not valid JSON: unexpected "e" at byte 2'],
  ['n_number 1e', bytes('1e'), 'value is not valid JSON: unexpected end of input'],
  ['n_number 1e+', bytes('[1e+]'), 'value is not valid JSON: unexpected "]" at byte 4'],
  ['n_number 1E-', bytes('1E-'), 'value is not valid JSON: unexpected end of input'],
  ['n_number 0x10', bytes('0x10'), 'value is not valid JSON: unexpected "x" at byte 1'],
  ['n_number 1_000', bytes('1_000'), 'value is not valid JSON: unexpected "_" at byte 1'],
  ['n_number - 1', bytes('- 1'), 'value is not valid JSON: unexpected " " at byte 1'],
  ['n_number --1', bytes('--1'), 'value is not valid JSON: unexpected "-" at byte 1'],
  ['n_number 1.5.5', bytes('1.5.5'), 'value is not valid JSON: unexpected "." at byte 3'],
  ['n_number 1e5e5', bytes('1e5e5'), 'value is not valid JSON: unexpected "e" at byte 3'],
  ['n_number -.5', bytes('-.5'), 'value is not valid JSON: unexpected "." at byte 1'],
  ['n_number 1ee5', bytes('1ee5'), 'value is not valid JSON: unexpected "e" at byte 2'],
  ['n_number 1e5.5', bytes('1e5.5'), 'value is not valid JSON: unexpected "." at byte 3'],
  ['n_number Arabic-Indic digit', bytes('[\u0661]'), 'value is not valid JSON: unexpected "\u0661" at byte 1'],
  ['n_number fullwidth digit', bytes('\uff11'), 'value is not valid JSON: unexpected "\uff11" at byte 0'],
  ['n_number [01]', bytes('[01]'), 'value is not valid JSON: unexpected "1" at byte 2'],
  ['n_number e5', bytes('e5'), 'value is not valid JSON: unexpected "e" at byte 0'],
  ['n_number 1,', bytes('1,'), 'value is not valid JSON: unexpected "," at byte 1'],
  // strings
  ['n_string unterminated', bytes('"'), 'value is not valid JSON: unexpected end of input'],
  ['n_string unterminated text', bytes('"abc'), 'value is not valid JSON: unexpected end of input'],
  ['n_string escaped closing quote', bytes('"\\"'), 'value is not valid JSON: unexpected end of input'],
  ['n_string backslash at end', bytes('"a\\'), 'value is not valid JSON: unexpected end of input'],
  ['n_string single quotes', bytes("'a'"), 'value is not valid JSON: unexpected "\'" at byte 0'],
  ['n_string \\x41', bytes('"\\x41"'), 'value is not valid JSON: unexpected "x" at byte 2'],
  ['n_string \\u12"', bytes('"\\u12"'), 'value is not valid JSON: unexpected "\\"" at byte 5'],
  ['n_string \\u12g4', bytes('"\\u12g4"'), 'value is not valid JSON: unexpected "g" at byte 5'],
  ['n_string \\u at end', bytes('"\\u'), 'value is not valid JSON: unexpected end of input'],
  ['n_string \\U0041', bytes('"\\U0041"'), 'value is not valid JSON: unexpected "U" at byte 2'],
  ['n_string \\a', bytes('"\\a"'), 'value is not valid JSON: unexpected "a" at byte 2'],
  ['n_string \\0', bytes('"\\0"'), 'value is not valid JSON: unexpected "0" at byte 2'],
  ['n_string \\ space', bytes('"\\ "'), 'value is not valid JSON: unexpected " " at byte 2'],
  ['n_string \\ then é', bytes('"\\é"'), 'value is not valid JSON: unexpected "é" at byte 2'],
  ['n_string raw tab', bytes('"\t"'), 'value is not valid JSON: unexpected "\\t" at byte 1'],
  ['n_string raw LF', bytes('["a\nb"]'), 'value is not valid JSON: unexpected "\\n" at byte 3'],
  ['n_string raw NUL', bytes([0x22, 0x00, 0x22]), 'value is not valid JSON: unexpected "\\u0000" at byte 1'],
  ['n_string raw U+001F', bytes([0x22, 0x1f, 0x22]), 'value is not valid JSON: unexpected "\\u001f" at byte 1'],
  ['n_string raw control after UTF-8', bytes('"日本\r"'), 'value is not valid JSON: unexpected "\\r" at byte 7'],
  ['n_string unterminated key', bytes('{"a'), 'value is not valid JSON: unexpected end of input'],
  // UTF-8 that is not: overlongs, surrogates, above U+10FFFF, stray and cut sequences
  ['n_utf8 overlong NUL (C0 80)', bytes([0x22, 0xc0, 0x80, 0x22]), 'value is not valid UTF-8: bad byte 0xc0 at byte 1'],
  ['n_utf8 overlong (C1 BF)', bytes([0x22, 0xc1, 0xbf, 0x22]), 'value is not valid UTF-8: bad byte 0xc1 at byte 1'],
  ['n_utf8 overlong slash (E0 80 AF)', bytes([0x22, 0xe0, 0x80, 0xaf, 0x22]), 'value is not valid UTF-8: bad byte 0x80 at byte 2'],
  ['n_utf8 overlong U+07FF (E0 9F BF)', bytes([0x22, 0xe0, 0x9f, 0xbf, 0x22]), 'value is not valid UTF-8: bad byte 0x9f at byte 2'],
  ['n_utf8 overlong 4-byte (F0 8F BF BF)', bytes([0x22, 0xf0, 0x8f, 0xbf, 0xbf, 0x22]), 'value is not valid UTF-8: bad byte 0x8f at byte 2'],
  ['n_utf8 high surrogate (ED A0 80)', bytes([0x22, 0xed, 0xa0, 0x80, 0x22]), 'value is not valid UTF-8: bad byte 0xa0 at byte 2'],
  ['n_utf8 low surrogate (ED BF BF)', bytes([0x22, 0xed, 0xbf, 0xbf, 0x22]), 'value is not valid UTF-8: bad byte 0xbf at byte 2'],
  ['n_utf8 CESU-8 pair', bytes([0x22, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80, 0x22]), 'value is not valid UTF-8: bad byte 0xa0 at byte 2'],
  ['n_utf8 above U+10FFFF (F4 90 80 80)', bytes([0x22, 0xf4, 0x90, 0x80, 0x80, 0x22]), 'value is not valid UTF-8: bad byte 0x90 at byte 2'],
  ['n_utf8 F5 lead', bytes([0x22, 0xf5, 0x80, 0x80, 0x80, 0x22]), 'value is not valid UTF-8: bad byte 0xf5 at byte 1'],
  ['n_utf8 5-byte form (F8)', bytes([0x22, 0xf8, 0x88, 0x80, 0x80, 0x80, 0x22]), 'value is not valid UTF-8: bad byte 0xf8 at byte 1'],
  ['n_utf8 FE', bytes([0x22, 0xfe, 0x22]), 'value is not valid UTF-8: bad byte 0xfe at byte 1'],
  ['n_utf8 FF', bytes([0x22, 0xff, 0x22]), 'value is not valid UTF-8: bad byte 0xff at byte 1'],
  ['n_utf8 stray continuation 80', bytes([0x22, 0x80, 0x22]), 'value is not valid UTF-8: bad byte 0x80 at byte 1'],
  ['n_utf8 stray continuation BF after text', bytes('"ab', [0xbf], '"'), 'value is not valid UTF-8: bad byte 0xbf at byte 3'],
  ['n_utf8 cut 2-byte (C3 ")', bytes([0x22, 0xc3, 0x22]), 'value is not valid UTF-8: bad byte 0x22 at byte 2'],
  ['n_utf8 cut 3-byte at end (E2 82)', bytes([0x22, 0xe2, 0x82]), 'value is not valid UTF-8: bad byte 0xe2 at byte 1'],
  ['n_utf8 cut 4-byte (F0 9F 98 ")', bytes([0x22, 0xf0, 0x9f, 0x98, 0x22]), 'value is not valid UTF-8: bad byte 0x22 at byte 4'],
  ['n_utf8 bad byte outside strings', bytes('[1,', [0xff], ']'), 'value is not valid UTF-8: bad byte 0xff at byte 3'],
  ['n_utf8 bad byte after a grammar error', bytes('[1,]', [0xc0]), 'value is not valid UTF-8: bad byte 0xc0 at byte 4'],
  ['n_utf8 valid UTF-8 outside strings', bytes('[é]'), 'value is not valid JSON: unexpected "é" at byte 1'],
  ['n_utf8 emoji as a key', bytes('{😀:1}'), 'value is not valid JSON: unexpected "😀" at byte 1'],
  // structure
  ['n_structure [', bytes('['), 'value is not valid JSON: unexpected end of input'],
  ['n_structure ]', bytes(']'), 'value is not valid JSON: unexpected "]" at byte 0'],
  ['n_structure {', bytes('{'), 'value is not valid JSON: unexpected end of input'],
  ['n_structure }', bytes('}'), 'value is not valid JSON: unexpected "}" at byte 0'],
  ['n_structure [1', bytes('[1'), 'value is not valid JSON: unexpected end of input'],
  ['n_structure [1,', bytes('[1,'), 'value is not valid JSON: unexpected end of input'],
  ['n_structure [1,]', bytes('[1,]'), 'value is not valid JSON: unexpected "]" at byte 3'],
  ['n_structure [,1]', bytes('[,1]'), 'value is not valid JSON: unexpected "," at byte 1'],
  ['n_structure [,]', bytes('[,]'), 'value is not valid JSON: unexpected "," at byte 1'],
  ['n_structure [1 2]', bytes('[1 2]'), 'value is not valid JSON: unexpected "2" at byte 3'],
  ['n_structure [1:2]', bytes('[1:2]'), 'value is not valid JSON: unexpected ":" at byte 2'],
  ['n_structure {"a"}', bytes('{"a"}'), 'value is not valid JSON: unexpected "}" at byte 4'],
  ['n_structure {"a":}', bytes('{"a":}'), 'value is not valid JSON: unexpected "}" at byte 5'],
  ['n_structure {"a" 1}', bytes('{"a" 1}'), 'value is not valid JSON: unexpected "1" at byte 5'],
  ['n_structure {a:1}', bytes('{a:1}'), 'value is not valid JSON: unexpected "a" at byte 1'],
  ['n_structure {1:1}', bytes('{1:1}'), 'value is not valid JSON: unexpected "1" at byte 1'],
  ['n_structure {null:1}', bytes('{null:1}'), 'value is not valid JSON: unexpected "n" at byte 1'],
  ['n_structure {"a":1,}', bytes('{"a":1,}'), 'value is not valid JSON: unexpected "}" at byte 7'],
  ['n_structure {,"a":1}', bytes('{,"a":1}'), 'value is not valid JSON: unexpected "," at byte 1'],
  ['n_structure {"a":1 "b":2}', bytes('{"a":1 "b":2}'), 'value is not valid JSON: unexpected "\\"" at byte 7'],
  ['n_structure {"a",1}', bytes('{"a",1}'), 'value is not valid JSON: unexpected "," at byte 4'],
  ['n_structure {"a":1:2}', bytes('{"a":1:2}'), 'value is not valid JSON: unexpected ":" at byte 6'],
  ['n_structure {"a"::1}', bytes('{"a"::1}'), 'value is not valid JSON: unexpected ":" at byte 5'],
  ['n_structure ["a":1]', bytes('["a":1]'), 'value is not valid JSON: unexpected ":" at byte 4'],
  ["n_structure {'a':1}", bytes("{'a':1}"), 'value is not valid JSON: unexpected "\'" at byte 1'],
  ['n_structure [}', bytes('[}'), 'value is not valid JSON: unexpected "}" at byte 1'],
  ['n_structure {]', bytes('{]'), 'value is not valid JSON: unexpected "]" at byte 1'],
  ['n_structure [1}', bytes('[1}'), 'value is not valid JSON: unexpected "}" at byte 2'],
  ['n_structure {"a":1]', bytes('{"a":1]'), 'value is not valid JSON: unexpected "]" at byte 6'],
  ['n_structure {"a":[}', bytes('{"a":[}'), 'value is not valid JSON: unexpected "}" at byte 6'],
  ['n_structure [[]}', bytes('[[]}'), 'value is not valid JSON: unexpected "}" at byte 3'],
  ['n_structure 1 2', bytes('1 2'), 'value is not valid JSON: unexpected "2" at byte 2'],
  ['n_structure [] []', bytes('[] []'), 'value is not valid JSON: unexpected "[" at byte 3'],
  ['n_structure {}x', bytes('{}x'), 'value is not valid JSON: unexpected "x" at byte 2'],
  ['n_structure []]', bytes('[]]'), 'value is not valid JSON: unexpected "]" at byte 2'],
  ['n_structure {}}', bytes('{}}'), 'value is not valid JSON: unexpected "}" at byte 2'],
  ['n_structure :', bytes(':'), 'value is not valid JSON: unexpected ":" at byte 0'],
  ['n_structure ,', bytes(','), 'value is not valid JSON: unexpected "," at byte 0'],
  ['n_structure "a":1', bytes('"a":1'), 'value is not valid JSON: unexpected ":" at byte 3'],
  ['n_structure comment', bytes('/* */1'), 'value is not valid JSON: unexpected "/" at byte 0'],
  ['n_structure line comment after', bytes('1//'), 'value is not valid JSON: unexpected "/" at byte 1'],
  ['n_structure "a" "b"', bytes('"a" "b"'), 'value is not valid JSON: unexpected "\\"" at byte 4'],
  ['n_nesting 100000 unclosed arrays', bytes('['.repeat(100_000)), 'value is not valid JSON: unexpected end of input', true],
  ['n_nesting 50000 arrays, one bracket short', bytes('['.repeat(50_000) + ']'.repeat(49_999)), 'value is not valid JSON: unexpected end of input', true],
  ['n_nesting 50000 objects closed by ]', bytes('{"":'.repeat(50_000) + '1' + ']'.repeat(50_000)), 'value is not valid JSON: unexpected "]" at byte 200001', true],
];
const noCases: Case[] = no.map(([name, value, , isDeep]) => ({ name, value, deep: isDeep }));

describe('isJsonText: the grammar edge cases', () => {
  it('takes every y_ case, as JSON.parse and Python do', () => {
    const python = pythonOracle(yes.map((c) => c.value));
    yes.forEach((c, k) => {
      expect(jsonTextBy(c.value, 'json-parse'), c.name).toBe(true);
      expect(jsonValueError(c.value, 'json-parse'), c.name).toBeNull();
      expect(v8Oracle(c.value), `V8: ${c.name}`).toBe(true);
      expect(python[k], `Python: ${c.name}`).toBe(c.deep ? undefined : true);
    });
  });

  it('refuses every n_ case, as JSON.parse and Python do, with the reason given before the byte-level check', () => {
    const python = pythonOracle(noCases.map((c) => c.value));
    no.forEach(([name, value, reason, isDeep], k) => {
      expect(jsonTextBy(value, 'json-parse'), name).toBe(false);
      expect(v8Oracle(value), `V8: ${name}`).toBe(false);
      expect(python[k], `Python: ${name}`).toBe(isDeep ? undefined : false);
      expect(jsonValueError(value, 'json-parse'), name).toBe(reason);
      expect(jsonValueReason(value, 'json-parse'), name).toBe(reason);
    });
  });

  it('decides a view by its own bytes, not by the buffer around it', () => {
    const buffer = bytes([0xff, 0x5b], '{"a":"ü"}', [0x2c, 0xc0]);
    const view = buffer.subarray(2, buffer.length - 2);
    expect(jsonTextBy(view, 'json-parse')).toBe(true);
    expect(jsonValueError(view, 'json-parse')).toBeNull();
    expect(isJsonText(buffer.subarray(2, buffer.length - 3))).toBe(false);
    const cut = bytes('{"a":"ü"}', [0xc0]); // 10 bytes of JSON, then a byte that is not UTF-8
    expect(jsonValueError(cut.subarray(0, 10), 'json-parse')).toBeNull();
    expect(jsonValueError(cut.subarray(0, 9), 'json-parse')).toBe('value is not valid JSON: unexpected end of input');
    expect(jsonValueError(cut, 'json-parse')).toBe('value is not valid UTF-8: bad byte 0xc0 at byte 10');
    expect(isJsonText(buffer.subarray(2, 2))).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------
// A generated corpus: random JSON text, written with random whitespace and escapes, and
// mutations of it.

const INTERESTING_BYTES = [
  ...'{}[]":,.-+eE0123456789 \t\n\r\\utfnalrsb/xUN'.split('').map((c) => c.charCodeAt(0)),
  0x00, 0x08, 0x0b, 0x0c, 0x1f, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xfe, 0xff,
];
const INTERESTING_RUNS = [
  BOM, [0xed, 0xa0, 0x80], [0xc0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf0, 0x9f, 0x98, 0x80], [0xc3, 0xa9], [0xe6, 0x97, 0xa5],
  ...['\\u', '\\uD800', '\\"', '\\\\', 'true', 'null', 'false', '[', ']', '{', '}', '"', '","', '":', '-0', '1e', '.5', 'NaN', 'Infinity', ' \t\r\n', '\u00a0', '\u2028'].map((t) => [...utf8.encode(t)]),
];

function randomJson(rnd: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const ws = (): string => (rnd() < 0.7 ? '' : Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick([' ', '\t', '\n', '\r'])).join(''));
  const digits = (min: number): string => {
    let s = '';
    const n = min + Math.floor(rnd() * (rnd() < 0.05 ? 40 : 4));
    for (let k = 0; k < n; k++) s += String(Math.floor(rnd() * 10));
    return s;
  };
  const number = (): string => {
    let s = rnd() < 0.3 ? '-' : '';
    s += rnd() < 0.2 ? '0' : String(1 + Math.floor(rnd() * 9)) + digits(0);
    if (rnd() < 0.3) s += '.' + digits(1);
    if (rnd() < 0.2) s += pick(['e', 'E']) + pick(['', '+', '-']) + digits(1);
    return s;
  };
  const hex = (): string => Math.floor(rnd() * 16).toString(16)[rnd() < 0.5 ? 'toLowerCase' : 'toUpperCase']();
  const chars = ['a', 'Z', ' ', '/', '\u007f', 'é', 'ß', '日', '本', '\u0800', '\uffff', '\ufeff', '😀', '\u{10ffff}', '{', '}', '[', ']', ':', ','];
  const string = (): string => {
    let s = '"';
    const n = Math.floor(rnd() * (rnd() < 0.1 ? 200 : 8));
    for (let k = 0; k < n; k++) {
      const r = rnd();
      if (r < 0.6) s += pick(chars);
      else if (r < 0.8) s += '\\' + pick(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
      else if (r < 0.9) s += '\\u' + hex() + hex() + hex() + hex();
      else s += '\\u' + pick(['d8', 'D8', 'db', 'DC', 'dc', 'df']) + hex() + hex(); // surrogate escapes, paired or not
    }
    return s + '"';
  };
  const value = (depth: number): string => {
    const r = rnd();
    if (depth < 6 && r < 0.2) {
      const n = Math.floor(rnd() * 5);
      return '[' + ws() + Array.from({ length: n }, () => ws() + value(depth + 1) + ws()).join(',') + ws() + ']';
    }
    if (depth < 6 && r < 0.4) {
      const n = Math.floor(rnd() * 5);
      return '{' + ws() + Array.from({ length: n }, () => ws() + string() + ws() + ':' + ws() + value(depth + 1) + ws()).join(',') + ws() + '}';
    }
    if (r < 0.6) return string();
    if (r < 0.85) return number();
    return pick(['true', 'false', 'null']);
  };
  return ws() + value(rnd() < 0.1 ? 6 : 0) + ws();
}

function mutate(rnd: () => number, source: Uint8Array): Uint8Array {
  let b = [...source];
  const at = (extra = 0): number => Math.floor(rnd() * (b.length + extra));
  const pickByte = (): number => (rnd() < 0.8 ? INTERESTING_BYTES[Math.floor(rnd() * INTERESTING_BYTES.length)]! : Math.floor(rnd() * 256));
  for (let m = 1 + Math.floor(rnd() * 3); m > 0; m--) {
    const op = Math.floor(rnd() * 7);
    if (op === 0 && b.length > 0) {
      const k = at();
      b[k] = b[k]! ^ (1 << Math.floor(rnd() * 8)); // flip a bit
    }
    else if (op === 1 && b.length > 0) b[at()] = pickByte(); // replace a byte
    else if (op === 2) b.splice(at(1), 0, pickByte()); // insert a byte
    else if (op === 3) b.splice(at(1), 0, ...INTERESTING_RUNS[Math.floor(rnd() * INTERESTING_RUNS.length)]!); // insert a run
    else if (op === 4) b.splice(at(), 1 + Math.floor(rnd() * 3)); // delete bytes
    else if (op === 5) b = b.slice(0, at()); // truncate
    else {
      const from = at();
      b.splice(at(1), 0, ...b.slice(from, from + 1 + Math.floor(rnd() * 8))); // repeat a piece
    }
  }
  return Uint8Array.from(b);
}

describe('isJsonText against JSON.parse and Python on a generated corpus', () => {
  it('decides random JSON and its mutations as both oracles do, and gives the reference reasons', () => {
    const rnd = prng(20_260_513);
    const corpus: Uint8Array[] = [];
    for (let k = 0; k < 6_000; k++) {
      const json = utf8.encode(randomJson(rnd));
      corpus.push(json);
      for (let m = 0; m < 6; m++) corpus.push(mutate(rnd, json));
    }
    const python = pythonOracle(corpus);
    const disagreements: string[] = [];
    let valid = 0;
    let badUtf8 = 0;
    corpus.forEach((value, k) => {
      const ours = jsonTextBy(value, 'json-parse');
      const v8 = v8Oracle(value);
      if (ours !== v8) disagreements.push(`V8 says ${v8}: ${show(value)}`);
      if (ours !== python[k]) disagreements.push(`Python says ${python[k]}: ${show(value)}`);
      const reason = jsonValueError(value, 'json-parse');
      const reference = jsonValueReason(value, 'json-parse');
      if (reason !== reference || (reason === null) !== ours) disagreements.push(`reason ${reason}, reference ${reference}: ${show(value)}`);
      if (ours) valid++;
      if (reason?.startsWith('value is not valid UTF-8')) badUtf8++;
    });
    expect(disagreements).toEqual([]);
    // the corpus tests both ways: the generated texts are valid, most mutations are not
    expect(valid).toBeGreaterThan(corpus.length / 7);
    expect(valid).toBeLessThan((corpus.length * 2) / 3);
    expect(badUtf8).toBeGreaterThan(corpus.length / 50);
  });

  it('checks UTF-8 inside and outside strings as a fatal decoder does, on random bytes', () => {
    const rnd = prng(99);
    const lead = [0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff];
    const cont = [0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0x22, 0x41];
    const corpus: Uint8Array[] = [];
    for (let k = 0; k < 20_000; k++) {
      const body = Array.from({ length: Math.floor(rnd() * 6) }, () => {
        const set = rnd() < 0.5 ? lead : cont;
        return set[Math.floor(rnd() * set.length)]!;
      });
      corpus.push(rnd() < 0.8 ? bytes('"', body, '"') : bytes('[', body, ']'));
    }
    const python = pythonOracle(corpus);
    const disagreements: string[] = [];
    corpus.forEach((value, k) => {
      const ours = jsonTextBy(value, 'json-parse');
      if (ours !== v8Oracle(value) || ours !== python[k] || jsonValueError(value, 'json-parse') !== jsonValueReason(value, 'json-parse')) disagreements.push(show(value));
    });
    expect(disagreements).toEqual([]);
  });

  it('decides long mixed-script values with escapes as both oracles do', () => {
    // long runs of ASCII and multi-byte text, where the validator reads eight bytes at a
    // time, broken by escapes, raw control characters and mutations at any byte
    const rnd = prng(5);
    const words = ['alpha', 'ünïcødé', '日本語', '😀emoji', 'tab\tin', 'quote"in', 'back\\slash', '\u0001', '\u2028', '\ud800'];
    const corpus: Uint8Array[] = [];
    for (let k = 0; k < 3_000; k++) {
      const note = Array.from({ length: Math.floor(rnd() * 200) }, () => words[Math.floor(rnd() * words.length)]).join(' ');
      const text = JSON.stringify({ id: k, note, tags: [note.slice(0, 9)] });
      corpus.push(rnd() < 0.4 ? utf8.encode(text) : mutate(rnd, utf8.encode(text)));
    }
    const python = pythonOracle(corpus);
    const disagreements: string[] = [];
    corpus.forEach((value, k) => {
      const ours = jsonTextBy(value, 'json-parse');
      if (ours !== v8Oracle(value) || ours !== python[k] || jsonValueError(value, 'json-parse') !== jsonValueReason(value, 'json-parse')) disagreements.push(show(value));
    });
    expect(disagreements).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------
// The `engines` rules (encoder v4 on, issue 46): an escaped surrogate must be half of a
// pair, because DuckDB's JSON reader refuses any other and with it every query that reads
// the column.

const DUCKDB_ORACLE = `
import duckdb, sys
con = duckdb.connect()
out = []
for line in sys.stdin.read().split('\\n'):
    if line == '':
        continue
    try:
        con.execute('SELECT CAST(? AS JSON)', [bytes.fromhex(line).decode('utf-8')]).fetchall()
        out.append('y')
    except duckdb.Error:
        out.append('n')
sys.stdout.write(''.join(out))
`;

/** DuckDB's verdict per value (UTF-8 text): whether its JSON type takes it. */
function duckdbOracle(values: readonly Uint8Array[]): boolean[] {
  const out = execFileSync('python3', ['-c', DUCKDB_ORACLE], { input: values.map((v) => `${Buffer.from(v).toString('hex')}\n`).join(''), encoding: 'utf8' });
  expect(out.length).toBe(values.length);
  return [...out].map((c) => c === 'y');
}

const pairs: Case[] = [
  { name: 'y_surrogate pair', value: bytes('"\\uD83D\\uDE00"') },
  { name: 'y_surrogate pair, lower case', value: bytes('{"s":"\\ud83d\\ude00"}') },
  { name: 'y_surrogate pair, highest', value: bytes('"\\udbff\\udfff"') },
  { name: 'y_surrogate pair, lowest, then text', value: bytes('"\\ud800\\udc00\\u0041x"') },
  { name: 'y_surrogate pair as a key', value: bytes('{"\\ud83d\\ude00":1}') },
  { name: 'y_an escaped backslash, then ud800 as text', value: bytes('"\\\\ud800"') },
  { name: 'y_just below and above the surrogates', value: bytes('"\\ud7ff\\ue000\\uD7FF\\uE000"') },
];

const lone: [name: string, value: Uint8Array, reason: string][] = [
  ['n_lone high surrogate', bytes('{"s":"\\ud800"}'), 'value is not valid JSON: lone surrogate escape \\ud800 at byte 6'],
  ['n_lone low surrogate', bytes('"\\udc00"'), 'value is not valid JSON: lone surrogate escape \\udc00 at byte 1'],
  ['n_high surrogate then another escape', bytes('"\\uD800\\u0041"'), 'value is not valid JSON: lone surrogate escape \\uD800 at byte 1'],
  ['n_two high surrogates', bytes('"\\ud800\\ud800"'), 'value is not valid JSON: lone surrogate escape \\ud800 at byte 1'],
  ['n_reversed pair', bytes('"\\udfff\\ud800"'), 'value is not valid JSON: lone surrogate escape \\udfff at byte 1'],
  ['n_high surrogate then text', bytes('"\\udbffx"'), 'value is not valid JSON: lone surrogate escape \\udbff at byte 1'],
  ['n_high surrogate at the end of the string', bytes('["a","\\ud800"]'), 'value is not valid JSON: lone surrogate escape \\ud800 at byte 6'],
  ['n_high surrogate then an escaped backslash', bytes('"\\ud800\\\\udc00"'), 'value is not valid JSON: lone surrogate escape \\ud800 at byte 1'],
  ['n_a pair, then a low one', bytes('"\\ud800\\udc00\\udc00"'), 'value is not valid JSON: lone surrogate escape \\udc00 at byte 13'],
  ['n_lone surrogate in a key', bytes('{"\\ud800":1}'), 'value is not valid JSON: lone surrogate escape \\ud800 at byte 2'],
  ['n_lone surrogate after multi-byte text', bytes('"日本\\uDC00"'), 'value is not valid JSON: lone surrogate escape \\uDC00 at byte 7'],
];

describe('the engines rules (encoder v4 on): escaped surrogates in pairs only', () => {
  it('takes a pair and refuses a lone surrogate as DuckDB and Python (strings as UTF-8) do, with the reason naming the escape and its byte', () => {
    const values = [...pairs.map((c) => c.value), ...lone.map(([, value]) => value)];
    const expected = [...pairs.map(() => true), ...lone.map(() => false)];
    expect(duckdbOracle(values)).toEqual(expected);
    expect(pythonOracle(values, 'engines')).toEqual(expected);
    for (const c of pairs) {
      expect(jsonTextBy(c.value, 'engines'), c.name).toBe(true);
      expect(jsonValueError(c.value), c.name).toBeNull();
    }
    for (const [name, value, reason] of lone) {
      expect(jsonTextBy(value, 'engines'), name).toBe(false);
      expect(jsonValueError(value), name).toBe(reason);
      expect(jsonValueReason(value), name).toBe(reason);
      // the encoders before v4 took it, as JSON.parse does
      expect(jsonValueError(value, 'json-parse'), name).toBeNull();
    }
  });

  it('decides the generated corpus as Python with strings encoded as UTF-8 does, and as the json-parse rules wherever no surrogate is escaped', () => {
    const rnd = prng(46);
    const corpus: Uint8Array[] = [];
    for (let k = 0; k < 4_000; k++) {
      const json = utf8.encode(randomJson(rnd));
      corpus.push(json);
      for (let m = 0; m < 3; m++) corpus.push(mutate(rnd, json));
    }
    const python = pythonOracle(corpus, 'engines');
    const disagreements: string[] = [];
    let refusedForSurrogates = 0;
    corpus.forEach((value, k) => {
      const ours = jsonTextBy(value, 'engines');
      if (ours !== python[k]) disagreements.push(`Python says ${python[k]}: ${show(value)}`);
      const reason = jsonValueError(value);
      if (reason !== jsonValueReason(value) || (reason === null) !== ours) disagreements.push(`reason ${reason}, reference ${jsonValueReason(value)}: ${show(value)}`);
      if (reason?.includes('lone surrogate')) refusedForSurrogates++;
      else if (reason !== jsonValueError(value, 'json-parse')) disagreements.push(`reason ${reason}, by json-parse ${jsonValueError(value, 'json-parse')}: ${show(value)}`);
    });
    expect(disagreements).toEqual([]);
    expect(refusedForSurrogates).toBeGreaterThan(corpus.length / 50);
  });
});
