import { describe, expect, it } from 'vitest';
import { columnValues, firstInvalidUtf8, jsonValueError, kafkaColumnArrays, kafkaTableColumns, locateJsonError, prepare, ValueError } from '../../src/parquet/index.js';
import { wellFormed } from '../helpers/strings.js';

const utf8 = new TextEncoder();
const error = (text: string): string | null => jsonValueError(utf8.encode(text));

function prng(seed: number): () => number {
  return () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}


const parses = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

describe('jsonValueError', () => {
  it('accepts JSON text of any kind, kept as written', () => {
    for (const text of ['{}', '[]', ' {"a": [1, -2.5e+3, true, false, null, "x\\u00e9\\n"]} ', '"s"', '0', '-0.0e0', 'null', '{"😀":"日本"}']) {
      expect(error(text), text).toBeNull();
    }
  });

  it('says where the text stops being JSON, in words that do not depend on the runtime', () => {
    expect(error('{not json')).toBe('value is not valid JSON: unexpected "n" at byte 1');
    expect(error('{"a": ')).toBe('value is not valid JSON: unexpected end of input');
    expect(error('')).toBe('value is not valid JSON: unexpected end of input');
    expect(error('[1, 2,]')).toBe('value is not valid JSON: unexpected "]" at byte 6');
    expect(error('{"ü": 01}')).toBe('value is not valid JSON: unexpected "1" at byte 8');
    expect(error('{"a": 1} x')).toBe('value is not valid JSON: unexpected "x" at byte 9');
    expect(error('"tab\there"')).toBe('value is not valid JSON: unexpected "\\t" at byte 4');
    expect(error('\ufeff{}')).toBe('value is not valid JSON: unexpected "\ufeff" at byte 0');
    expect(error('{"a": NaN}')).toBe('value is not valid JSON: unexpected "N" at byte 6');
    expect(error('"\\x"')).toBe('value is not valid JSON: unexpected "x" at byte 2');
  });

  it('says where the bytes stop being UTF-8', () => {
    expect(jsonValueError(Uint8Array.of(0x22, 0xff, 0x22))).toBe('value is not valid UTF-8: bad byte 0xff at byte 1');
    expect(jsonValueError(Uint8Array.of(0x22, 0xe2, 0x82))).toBe('value is not valid UTF-8: bad byte 0xe2 at byte 1');
    expect(jsonValueError(Uint8Array.of(0xed, 0xa0, 0x80))).toBe('value is not valid UTF-8: bad byte 0xa0 at byte 1'); // a surrogate
  });

  it('agrees with JSON.parse on mutated JSON', () => {
    const rnd = prng(7);
    const seeds = ['{"a":[1,2.5,{"b":null}],"c":"d\\"e","f":true}', '[[[]],{},"x",-1e-7,0]', '{"k":"v😀","n":123456789}'];
    const alphabet = '{}[]":,.-+eE0123456789 \\abtfnulrsx\n\t😀';
    for (let round = 0; round < 3000; round++) {
      let text = seeds[round % seeds.length]!;
      for (let m = 0; m < 1 + Math.floor(rnd() * 3); m++) {
        const at = Math.floor(rnd() * (text.length + 1));
        const ch = alphabet[Math.floor(rnd() * alphabet.length)]!;
        const op = Math.floor(rnd() * 3);
        text = op === 0 ? text.slice(0, at) + ch + text.slice(at) : op === 1 ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + ch + text.slice(at + 1);
      }
      text = wellFormed(text);
      expect(locateJsonError(text) === null, text).toBe(parses(text));
      expect(error(text) === null, text).toBe(parses(text));
    }
  });

  it('survives deep nesting', () => {
    expect(locateJsonError('['.repeat(200_000))).toBe('unexpected end of input');
    expect(locateJsonError('['.repeat(100_000) + ']'.repeat(100_000))).toBeNull();
  });
});

describe('firstInvalidUtf8', () => {
  it('agrees with a fatal TextDecoder on random bytes', () => {
    const rnd = prng(11);
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const interesting = [0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xa0, 0xed, 0x9f, 0xef, 0xf0, 0x90, 0xf4, 0x8f, 0xf5, 0xff];
    for (let round = 0; round < 5000; round++) {
      const bytes = Uint8Array.from({ length: Math.floor(rnd() * 6) }, () => (rnd() < 0.7 ? interesting[Math.floor(rnd() * interesting.length)]! : Math.floor(rnd() * 256)));
      let valid = true;
      try {
        decoder.decode(bytes);
      } catch {
        valid = false;
      }
      expect(firstInvalidUtf8(bytes) === -1, Buffer.from(bytes).toString('hex')).toBe(valid);
    }
  });
});

describe('kafkaColumnArrays', () => {
  it('keeps every record as a row, with the reason when its value is not JSON', () => {
    const records = [
      { offset: 0n, timestamp: 1, key: null, value: utf8.encode('{"ok":1}'), headers: [] },
      { offset: 1n, timestamp: 2, key: utf8.encode('k'), value: utf8.encode('nope'), headers: [['h', null]] as const },
      { offset: 2n, timestamp: 3, key: null, value: null, headers: [] },
    ];
    const json = kafkaColumnArrays(4, records, 'json');
    expect(columnValues(json._partition!)).toEqual([4, 4, 4]);
    expect(columnValues(json._offset!)).toEqual([0n, 1n, 2n]);
    expect(columnValues(json._timestamp!)).toEqual([1n, 2n, 3n]);
    expect(columnValues(json._key!)).toEqual([null, utf8.encode('k'), null]);
    expect(columnValues(json._value!)).toEqual([records[0]!.value, null, null]);
    expect(columnValues(json._error!)).toEqual([null, 'value is not valid JSON: unexpected "o" at byte 1', null]);
    // header keys as the UTF-8 bytes the column holds (normalized where they are made)
    expect(columnValues(json._headers!)).toEqual([[], [{ key: new Uint8Array([0x68]), value: null }], []]);
    const raw = kafkaColumnArrays(4, records, 'raw');
    expect(columnValues(raw._value!)).toEqual(records.map((r) => r.value));
    expect(raw._error).toBeUndefined();
  });

  it('a header name that is not well-formed text (a lone surrogate) is refused by the file\'s build, naming the headers column, not written', () => {
    const records = [
      { offset: 0n, timestamp: 1, key: null, value: utf8.encode('{}'), headers: [['ok', null]] as const },
      { offset: 1n, timestamp: 2, key: null, value: utf8.encode('{}'), headers: [['bad\ud800', null]] as const },
    ];
    const arrays = kafkaColumnArrays(0, records, 'json');
    expect(() => prepare(kafkaTableColumns('json'), arrays)).toThrow(ValueError);
    expect(() => prepare(kafkaTableColumns('json'), arrays)).toThrow(/_headers\.element\.key \(row 1\) must be well-formed text \(it holds a lone surrogate\)/);
  });
});
