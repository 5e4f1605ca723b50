/**
 * Table settings, named as in the specification. Pure: parsing, defaults, formatting.
 * A table stores every setting resolved, so changing a default here never changes how
 * an existing table is indexed.
 */

export type Granularity = 'minute' | 'hour' | 'day';
export type History = { kind: 'all' } | { kind: 'none' } | { kind: 'since'; since: string };
/** json: `_value` is checked JSON text; raw: bytes as they are; the rest: decoded with the Schema Registry. */
export type TableFormat = 'json' | 'raw' | 'avro' | 'protobuf' | 'json-schema';
/** Page compression of a table's new files (docs/formats.md, "Encoder v2"; docs/operations.md, which engine reads which). */
export type Compression = 'zstd' | 'snappy' | 'lz4_raw' | 'none';

export interface TableSettings {
  /** A range seals when its key + value + header bytes reach this. */
  file_bytes: number;
  /** A range seals when its timestamps span this, or its first record was read this long ago (ms). */
  file_window: number;
  /** Records of one range are split into one file per time bucket of this size. */
  granularity: Granularity;
  history: History;
  /** Offsets per backfill chunk. */
  backfill_offsets: number;
  /** How often Kafka's earliest offset is read to expire files (ms). */
  retention_check: number;
  /** How long a lease lives without renewal (ms). */
  lease_ttl: number;
  /** Rows per Parquet row group: fixed, so that secondary indexes can summarise row groups. */
  row_group_rows: number;
  /**
   * Page compression of new files: zstd (the default: every engine we name reads it, the
   * smallest files at about LZ4's CPU), snappy, lz4_raw (the cheapest to read for engines
   * that have it; Trino has not) or none (for engines beside serve). A table created
   * before this setting existed has none stored and keeps what it was built with, lz4_raw.
   */
  compression: Compression;
  /**
   * Compaction (issue 49; docs/design.md, "Files that grow with age"): a merge takes this
   * many consecutive files of one size tier (their Kafka bytes within a factor of it) of
   * one time bucket; 0: files are never merged.
   */
  merge_files: number;
  /** Once a time bucket ended this long ago, its consecutive files are merged whatever their tiers, up to `file_bytes` (ms). */
  merge_after: number;
}

export const defaultSettings: Readonly<TableSettings> = Object.freeze<TableSettings>({
  file_bytes: 128 * 1024 * 1024,
  file_window: 60_000,
  granularity: 'hour',
  history: { kind: 'all' },
  backfill_offsets: 100_000,
  retention_check: 5 * 60_000,
  lease_ttl: 30_000,
  row_group_rows: 10_000,
  compression: 'zstd',
  merge_files: 0,
  merge_after: 10 * 60_000,
});

export const settingNames = Object.keys(defaultSettings) as (keyof TableSettings)[];
export const tableFormats: readonly TableFormat[] = ['avro', 'protobuf', 'json-schema', 'json', 'raw'];
export const granularities: readonly Granularity[] = ['minute', 'hour', 'day'];
export const compressions: readonly Compression[] = ['zstd', 'snappy', 'lz4_raw', 'none'];

export class SettingError extends Error {
  override name = 'SettingError';
  constructor(setting: string, value: string, expected: string) {
    super(`${setting}: "${value}" is not ${expected}`);
  }
}

const byteUnits: Record<string, number> = {
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3,
};
const durationUnits: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

function parseQuantity(setting: string, text: string, units: Record<string, number>, expected: string, bareUnit?: number): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!match) throw new SettingError(setting, text, expected);
  const [, amount, unitText] = match as unknown as [string, string, string];
  const unit = unitText === '' ? bareUnit : units[unitText.toLowerCase()];
  if (unit === undefined) throw new SettingError(setting, text, expected);
  const value = Math.round(Number(amount) * unit);
  if (!Number.isSafeInteger(value) || value <= 0) throw new SettingError(setting, text, expected);
  return value;
}

export function parseBytes(setting: string, text: string): number {
  return parseQuantity(setting, text, byteUnits, 'a positive size such as 134217728, 128MiB or 64MB', 1);
}

export function parseDuration(setting: string, text: string): number {
  return parseQuantity(setting, text, durationUnits, 'a positive duration with a unit such as 500ms, 60s, 5m or 1h');
}

/** `off` or 0: no merges; otherwise at least 2 files a merge. */
function parseMergeFiles(text: string): number {
  if (text.trim() === 'off' || text.trim() === '0') return 0;
  const value = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(value) || value < 2) throw new SettingError('merge_files', text, 'off, 0, or a whole number of files of at least 2');
  return value;
}

function parseCount(setting: string, text: string): number {
  const value = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(value) || value <= 0) throw new SettingError(setting, text, 'a positive whole number');
  return value;
}

/** `all`, `none`, `since=<RFC 3339>` or the specification's `{ since = "<RFC 3339>" }`. */
export function parseHistory(text: string): History {
  const trimmed = text.trim();
  if (trimmed === 'all' || trimmed === 'none') return { kind: trimmed };
  const match = /^(?:\{\s*since\s*=\s*"?([^"}]+?)"?\s*\}|since\s*=\s*(.+))$/.exec(trimmed);
  const time = match?.[1] ?? match?.[2];
  const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  if (time === undefined || !rfc3339.test(time.trim()) || Number.isNaN(Date.parse(time))) {
    throw new SettingError('history', text, 'all, none, or since=<RFC 3339 time> such as since=2026-01-01T00:00:00Z');
  }
  return { kind: 'since', since: new Date(Date.parse(time)).toISOString() };
}

export function parseGranularity(text: string): Granularity {
  if ((granularities as readonly string[]).includes(text)) return text as Granularity;
  throw new SettingError('granularity', text, `one of ${granularities.join(', ')}`);
}

export function parseCompression(text: string): Compression {
  if ((compressions as readonly string[]).includes(text)) return text as Compression;
  throw new SettingError('compression', text, `one of ${compressions.join(', ')}`);
}

/**
 * The compaction settings of a table, also of tables stored before they existed: those
 * merge by the defaults (a merge changes no file's bytes, only which files are live).
 */
export function mergeSettingsOf(settings: TableSettings): { mergeFiles: number; mergeAfterMs: number } {
  return { mergeFiles: settings.merge_files ?? defaultSettings.merge_files, mergeAfterMs: settings.merge_after ?? defaultSettings.merge_after };
}

/**
 * What a table stored before `compression` existed was built with: its new files keep it
 * (a default never changes how an existing table is indexed).
 */
const compressionBeforeTheSetting: Compression = 'lz4_raw';

/** A table's compression, also for tables stored before the setting existed. */
export function compressionOf(settings: TableSettings): Compression {
  return settings.compression ?? compressionBeforeTheSetting;
}

export function parseFormat(text: string): TableFormat {
  if ((tableFormats as readonly string[]).includes(text)) return text as TableFormat;
  throw new SettingError('format', text, `one of ${tableFormats.join(', ')}`);
}

const parsers: { [K in keyof TableSettings]: (text: string) => TableSettings[K] } = {
  file_bytes: (text) => parseBytes('file_bytes', text),
  file_window: (text) => parseDuration('file_window', text),
  granularity: parseGranularity,
  history: parseHistory,
  backfill_offsets: (text) => parseCount('backfill_offsets', text),
  retention_check: (text) => parseDuration('retention_check', text),
  lease_ttl: (text) => parseDuration('lease_ttl', text),
  row_group_rows: (text) => parseCount('row_group_rows', text),
  compression: parseCompression,
  merge_files: parseMergeFiles,
  merge_after: (text) => parseDuration('merge_after', text),
};

export function isSettingName(name: string): name is keyof TableSettings {
  return Object.hasOwn(parsers, name);
}

/** Resolves the given settings (text, by specification name) over the defaults. */
export function resolveSettings(given: Record<string, string>): TableSettings {
  const settings: TableSettings = { ...defaultSettings, history: { ...defaultSettings.history } };
  for (const [name, text] of Object.entries(given)) {
    if (!isSettingName(name)) throw new Error(`unknown table setting "${name}"; the settings are ${settingNames.join(', ')}`);
    (settings as unknown as Record<string, unknown>)[name] = parsers[name](text);
  }
  return settings;
}

export function formatBytes(bytes: number): string {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes}B`;
}

export function formatDuration(ms: number): string {
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

export function formatHistory(history: History): string {
  return history.kind === 'since' ? `since=${history.since}` : history.kind;
}

/** Settings as a user writes them, e.g. for `table list`. */
export function formatSettings(settings: TableSettings): Record<keyof TableSettings, string> {
  return {
    file_bytes: formatBytes(settings.file_bytes),
    file_window: formatDuration(settings.file_window),
    granularity: settings.granularity,
    history: formatHistory(settings.history),
    backfill_offsets: String(settings.backfill_offsets),
    retention_check: formatDuration(settings.retention_check),
    lease_ttl: formatDuration(settings.lease_ttl),
    row_group_rows: String(settings.row_group_rows),
    compression: compressionOf(settings),
    merge_files: mergeSettingsOf(settings).mergeFiles === 0 ? 'off' : String(mergeSettingsOf(settings).mergeFiles),
    merge_after: formatDuration(mergeSettingsOf(settings).mergeAfterMs),
  };
}
