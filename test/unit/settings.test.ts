import { describe, expect, it } from 'vitest';
import { defaultSettings, formatSettings, parseBytes, parseDuration, parseHistory, resolveSettings, storedSettings } from '../../src/table/settings.js';
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
    expect(storedSettings('old', JSON.parse(JSON.stringify(stored))).compression).toBe('lz4_raw');
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

  it('stored settings (lake_table.settings as Postgres hands the JSON back) are read once into the typed settings they were written from, every shape of each', () => {
    const given: Record<string, string>[] = [
      {},
      { file_bytes: '64MiB', file_window: '500ms', granularity: 'minute', history: 'none', compression: 'snappy' },
      { history: 'since=2026-01-02T05:04:05+02:00', granularity: 'day', backfill_offsets: '7', retention_check: '1h', lease_ttl: '5s', row_group_rows: '3', compression: 'none' },
    ];
    for (const settings of given.map((g) => resolveSettings(g))) expect(storedSettings('t', JSON.parse(JSON.stringify(settings)))).toEqual(settings);
    // as written by hand, from the specification's units: bytes, milliseconds, counts
    expect(storedSettings('t', { file_bytes: 1000, file_window: 60000, granularity: 'hour', history: { kind: 'since', since: '2026-01-01T00:00:00Z' }, backfill_offsets: 5, retention_check: 300000, lease_ttl: 30000, row_group_rows: 10 }))
      .toEqual({ file_bytes: 1000, file_window: 60_000, granularity: 'hour', history: { kind: 'since', since: '2026-01-01T00:00:00.000Z' }, backfill_offsets: 5, retention_check: 300_000, lease_ttl: 30_000, row_group_rows: 10, compression: 'lz4_raw', merge_files: 0, merge_after: 600_000, file_age: 60_000 });
    // a table stored before the compaction settings existed merges by their defaults
    const { merge_files: _files, merge_after: _after, ...before } = JSON.parse(JSON.stringify(resolveSettings({}))) as Record<string, unknown>;
    expect(storedSettings('t', before)).toEqual(resolveSettings({}));
    expect(() => storedSettings('t', { ...JSON.parse(JSON.stringify(resolveSettings({}))), merge_files: 1 })).toThrow('stored setting merge_files is 1, not 0 (off) or a whole number of at least 2');
  });

  it('a stored setting of another shape, missing or unknown is refused by name, with the table, the value and what it should be', () => {
    const stored = JSON.parse(JSON.stringify(resolveSettings({}))) as Record<string, unknown>;
    const without = (name: string) => Object.fromEntries(Object.entries(stored).filter(([key]) => key !== name));
    expect(() => storedSettings('orders', { ...stored, lease_ttl: 'broken' })).toThrow('table "orders": its stored setting lease_ttl is "broken", not a positive whole number of milliseconds');
    expect(() => storedSettings('orders', { ...stored, file_window: '60s' })).toThrow('stored setting file_window is "60s", not a positive whole number of milliseconds');
    expect(() => storedSettings('orders', { ...stored, file_bytes: 1.5 })).toThrow('stored setting file_bytes is 1.5, not a positive whole number of bytes');
    expect(() => storedSettings('orders', { ...stored, row_group_rows: 0 })).toThrow('row_group_rows is 0, not a positive whole number');
    expect(() => storedSettings('orders', without('file_window'))).toThrow('stored setting file_window is missing');
    expect(() => storedSettings('orders', { ...stored, granularity: 'week' })).toThrow('granularity is "week", not one of minute, hour, day');
    expect(() => storedSettings('orders', { ...stored, compression: 'gzip' })).toThrow('compression is "gzip", not one of zstd, snappy, lz4_raw, none');
    expect(() => storedSettings('orders', { ...stored, history: 'all' })).toThrow('history is "all", not {"kind":"all"}');
    expect(() => storedSettings('orders', { ...stored, history: { kind: 'since', since: 'yesterday' } })).toThrow('stored setting history is {"kind":"since","since":"yesterday"}');
    expect(() => storedSettings('orders', { ...stored, file_size: 5 })).toThrow('stored setting file_size is 5, not a setting (the settings are file_bytes, file_window');
    expect(() => storedSettings('orders', [])).toThrow('table "orders": its stored setting settings is [], not an object of settings');
  });

  it('file_age is a setting of its own, apart from file_window; a table stored before it ages by its file_window', () => {
    const settings = resolveSettings({ file_window: '1h', file_age: '1500ms' });
    expect(settings).toMatchObject({ file_window: 3_600_000, file_age: 1500 });
    expect(sealingRules(settings)).toMatchObject({ fileWindowMs: 3_600_000, fileAgeMs: 1500 });
    expect(formatSettings(settings)).toMatchObject({ file_window: '1h', file_age: '1500ms' });
    expect(resolveSettings({ file_window: '1h' }).file_age, 'not given: as file_window').toBe(3_600_000);
    expect(() => resolveSettings({ file_age: '0s' })).toThrow('file_age: "0s" is not a positive duration');
    const stored = storedSettings('t', JSON.parse(JSON.stringify({ ...settings, file_age: undefined })));
    expect(stored.file_age).toBe(3_600_000);
    expect(sealingRules(stored).fileAgeMs).toBe(3_600_000);
    expect(formatSettings(stored).file_age).toBe('1h');
  });
});
