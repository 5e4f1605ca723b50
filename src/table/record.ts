/**
 * The table's vocabulary, below every stage that needs it (ranges, parquet, schema,
 * indexes, the catalog): what a table is, and the error that says a table is wrong. No I/O;
 * the catalog stores and reads it (catalog/tables.ts).
 */
import { StoredSettingError, type TableFormat, type TableSettings } from './settings.js';

export interface TableRecord {
  tableId: bigint;
  name: string;
  topic: string;
  format: TableFormat;
  /** Parsed once, where the table is read from the catalog; throws StoredSettingError for a row that cannot be read (catalog/tables.ts). */
  settings: TableSettings;
  createdAt: Date;
  /**
   * Kafka's id of the topic the table was made on (null for a table made before catalog
   * version 9 until its topic is first seen, table-topic/topic-identity.ts). A topic deleted
   * and created again under the same name has another id: its offsets are not the table's.
   */
  topicId: string | null;
}

export interface NewTable {
  name: string;
  topic: string;
  /** Kafka's id of the topic (null: not known, as for a table made before catalog version 9). */
  topicId: string | null;
  format: TableFormat;
  settings: TableSettings;
  /** Where each partition's indexed range starts (empty: [start, start)). */
  partitionStarts: ReadonlyMap<number, bigint>;
}

export class TableError extends Error {
  override name = 'TableError';
}

/** A name that cannot be a table's: the request named no table at all (a 400 where a missing table is a 404). */
export class TableNameError extends TableError {
  override name = 'TableNameError';
}

const tableNamePattern = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The one check of a table name, made before any SQL sees it (a NUL or invalid UTF-8 would
 * otherwise reach Postgres, which refuses it in its own words). The name is shown as JSON
 * text, so a control character is visible and the message stays one line.
 */
export function checkTableName(name: string): void {
  if (!tableNamePattern.test(name)) {
    throw new TableNameError(`table name ${JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name)} must start with a lowercase letter or _, then lowercase letters, digits or _ (at most 63)`);
  }
}

/** Read options that make a read of the table's topic refuse a topic created again under its name. */
export function tableTopic(table: Pick<TableRecord, 'name' | 'topicId'>): { topicId?: { id: string; table: string } } {
  return table.topicId === null ? {} : { topicId: { id: table.topicId, table: table.name } };
}


/** Why the table's stored settings cannot be read (a catalog row changed by hand), or undefined when they can. */
export function unreadableSettings(table: Pick<TableRecord, 'settings'>): StoredSettingError | undefined {
  try {
    void table.settings;
    return undefined;
  } catch (error) {
    if (error instanceof StoredSettingError) return error;
    throw error;
  }
}
