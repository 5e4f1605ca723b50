import { describe, expect, it } from 'vitest';
import { ByteBoundedCache } from '../../src/reader/cache.js';
import { parseRange } from '../../src/reader/range.js';

describe('Range header', () => {
  it('reads first-last, first- and -suffix as half-open ranges clamped to the file', () => {
    expect(parseRange('bytes=0-9', 100)).toEqual({ kind: 'range', start: 0, end: 10 });
    expect(parseRange('bytes=90-', 100)).toEqual({ kind: 'range', start: 90, end: 100 });
    expect(parseRange('bytes=-8', 100)).toEqual({ kind: 'range', start: 92, end: 100 });
    expect(parseRange('bytes=-500', 100)).toEqual({ kind: 'range', start: 0, end: 100 });
    expect(parseRange('bytes=50-5000', 100)).toEqual({ kind: 'range', start: 50, end: 100 });
  });

  it('RFC 9110 §14.2: another unit, a header that cannot be parsed, or several ranges are ignored (the whole file is served)', () => {
    for (const header of ['bytes=', 'bytes=-', 'bytes=a-b', 'items=0-1', 'bytes 0-1', '', 'bytes=0-1, 4-5', 'bytes=0-1,x']) expect(parseRange(header, 100).kind, header).toBe('ignore');
    expect(parseRange('BYTES=0-1', 100)).toEqual({ kind: 'range', start: 0, end: 2 });
  });

  it('RFC 9110 §14.1.1: a valid range with no byte in the file, or an invalid one (last before first, suffix of 0), is unsatisfiable (416)', () => {
    for (const header of ['bytes=100-', 'bytes=-0', 'bytes=5-2']) expect(parseRange(header, 100).kind, header).toBe('unsatisfiable');
    // positions beyond 2^53 are named as written
    expect(parseRange('bytes=100000000000000000000000-', 100)).toEqual({ kind: 'unsatisfiable', reason: 'Range "bytes=100000000000000000000000-" starts at byte 100000000000000000000000, but the file has 100 bytes' });
    expect(parseRange('bytes=5-100000000000000000000000', 100)).toEqual({ kind: 'range', start: 5, end: 100 });
    expect(parseRange('bytes=-100000000000000000000000', 100)).toEqual({ kind: 'range', start: 0, end: 100 });
  });
});

describe('byte-bounded cache', () => {
  it('keeps at most its budget, dropping the least recently used; never keeps what is larger than the budget', () => {
    const cache = new ByteBoundedCache(10);
    cache.set('a', new Uint8Array(4));
    cache.set('b', new Uint8Array(4));
    expect(cache.get('a')).toBeDefined(); // a is now the most recently used
    cache.set('c', new Uint8Array(4));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.size).toEqual({ entries: 2, bytes: 8 });
    cache.set('huge', new Uint8Array(11));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.size.bytes).toBe(8);
  });

  it('keys by file id and sha256: bytes kept for one file or one content never answer for another', () => {
    const cache = new ByteBoundedCache(100);
    cache.set(ByteBoundedCache.key(7n, new Uint8Array([1, 2])), new Uint8Array([9]));
    expect(cache.get(ByteBoundedCache.key(7n, new Uint8Array([1, 2])))).toEqual(new Uint8Array([9]));
    expect(cache.get(ByteBoundedCache.key(7n, new Uint8Array([1, 3])))).toBeUndefined(); // same file, other content
    expect(cache.get(ByteBoundedCache.key(8n, new Uint8Array([1, 2])))).toBeUndefined(); // same content, other file
  });
});
