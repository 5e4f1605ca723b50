import { describe, expect, it } from 'vitest';
import { defaultSettings, fileAgeOf, formatSettings, parseBytes, parseDuration, parseHistory, resolveSettings, type TableSettings } from '../../src/table/settings.js';
import { sealingRules } from '../../src/ranges/sealer.js';

describe('table settings', () => {
  it('defaults are those of the specification', () => {
    expect(defaultSettings).toMatchObject({
      file_bytes: 128 * 1024 * 1024,
      file_window: 60_000,
      granularity: 'hour',
      history: { kind: 'all' },
      backfill_offsets: 100_000,
      lease_ttl: 30_000,
    });
  });

  it('parses sizes and durations with units', () => {
    expect(parseBytes('file_bytes', '128MiB')).toBe(134_217_728);
    expect(parseBytes('file_bytes', '64MB')).toBe(64_000_000);
    expect(parseBytes('file_bytes', '4096')).toBe(4096);
    expect(parseDuration('file_window', '500ms')).toBe(500);
    expect(parseDuration('file_window', '90s')).toBe(90_000);
    expect(parseDuration('retention_check', '5m')).toBe(300_000);
    expect(parseDuration('lease_ttl', '1h')).toBe(3_600_000);
  });

  it('refuses bad values with the setting and the value in the message', () => {
    expect(() => parseBytes('file_bytes', '12 parsecs')).toThrow('file_bytes: "12 parsecs" is not a positive size');
    expect(() => parseDuration('file_window', '60')).toThrow('file_window: "60" is not a positive duration with a unit');
    expect(() => parseDuration('file_window', '0s')).toThrow(/file_window/);
    expect(() => resolveSettings({ granularity: 'fortnight' })).toThrow('granularity: "fortnight" is not one of minute, hour, day');
    expect(() => resolveSettings({ backfill_offsets: '-5' })).toThrow('backfill_offsets: "-5" is not a positive whole number');
    expect(() => resolveSettings({ file_size: '1MiB' })).toThrow('unknown table setting "file_size"');
    expect(() => resolveSettings({ compression: 'gzip' })).toThrow('compression: "gzip" is not one of zstd, snappy, lz4_raw, none');
  });

  it('compression: zstd unless another is asked for (every engine docs/operations.md names reads ZSTD; Trino has no LZ4_RAW); a table stored before the setting existed keeps lz4_raw, what it was built with', () => {
    expect(resolveSettings({}).compression).toBe('zstd');
    for (const codec of ['snappy', 'lz4_raw', 'none', 'zstd']) expect(resolveSettings({ compression: codec }).compression).toBe(codec);
    const { compression: _, ...stored } = resolveSettings({});
    expect(formatSettings(stored as ReturnType<typeof resolveSettings>).compression).toBe('lz4_raw');
  });

  it('reads history as all, none, or since an RFC 3339 time, in both spellings', () => {
    expect(parseHistory('all')).toEqual({ kind: 'all' });
    expect(parseHistory('none')).toEqual({ kind: 'none' });
    expect(parseHistory('since=2026-01-02T03:04:05Z')).toEqual({ kind: 'since', since: '2026-01-02T03:04:05.000Z' });
    expect(parseHistory('{ since = "2026-01-02T05:04:05+02:00" }')).toEqual({ kind: 'since', since: '2026-01-02T03:04:05.000Z' });
    expect(() => parseHistory('since=yesterday')).toThrow('history: "since=yesterday"');
    expect(() => parseHistory('some')).toThrow(/RFC 3339/);
  });

  it('resolves given settings over defaults and formats them back as a user writes them', () => {
    const settings = resolveSettings({ file_bytes: '64MiB', file_window: '30s', history: 'none' });
    expect(settings).toEqual({ ...defaultSettings, file_bytes: 64 * 1024 * 1024, file_window: 30_000, file_age: 30_000, history: { kind: 'none' } });
    expect(formatSettings(settings)).toMatchObject({ file_bytes: '64MiB', file_window: '30s', history: 'none', lease_ttl: '30s' });
    expect(resolveSettings(formatSettings(settings))).toEqual(settings);
  });

  it('file_age is a setting of its own, apart from file_window; a table stored before it ages by its file_window', () => {
    const settings = resolveSettings({ file_window: '1h', file_age: '1500ms' });
    expect(settings).toMatchObject({ file_window: 3_600_000, file_age: 1500 });
    expect(sealingRules(settings)).toMatchObject({ fileWindowMs: 3_600_000, fileAgeMs: 1500 });
    expect(formatSettings(settings)).toMatchObject({ file_window: '1h', file_age: '1500ms' });
    expect(resolveSettings({ file_window: '1h' }).file_age, 'not given: as file_window').toBe(3_600_000);
    expect(() => resolveSettings({ file_age: '0s' })).toThrow('file_age: "0s" is not a positive duration');
    const stored = JSON.parse(JSON.stringify({ ...settings, file_age: undefined })) as TableSettings;
    expect(fileAgeOf(stored)).toBe(3_600_000);
    expect(sealingRules(stored).fileAgeMs).toBe(3_600_000);
    expect(formatSettings(stored).file_age).toBe('1h');
  });
});
