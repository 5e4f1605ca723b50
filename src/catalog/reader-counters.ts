/**
 * What readers count, kept in the catalog (migration 7) so that `status` can show reads
 * beside indexing: each reader (a serve process, a Lambda instance) upserts its own
 * counters now and then; status sums the readers heard from recently.
 */
import type { Catalog } from './db.js';

export type Counters = Readonly<Record<string, number>>;

export async function publishReaderCounters(catalog: Catalog, readerId: string, startedAt: Date, counters: Counters): Promise<void> {
  await catalog.query(
    `INSERT INTO offsetlake.reader_counters (reader_id, counters, started_at) VALUES ($1, $2, $3)
     ON CONFLICT (reader_id) DO UPDATE SET counters = excluded.counters, updated_at = now()`,
    [readerId, JSON.stringify(counters), startedAt],
  );
}

export interface ReaderTotals {
  readers: number;
  counters: Record<string, number>;
}

/** The sum of every counter over the readers that reported within `withinMinutes`. */
export async function readerTotals(catalog: Catalog, withinMinutes = 60): Promise<ReaderTotals> {
  const result = await catalog.query<{ counters: Record<string, unknown> }>(
    `SELECT counters FROM offsetlake.reader_counters WHERE updated_at > now() - make_interval(mins => $1)`,
    [withinMinutes],
  );
  const counters: Record<string, number> = {};
  for (const row of result.rows) {
    for (const [name, value] of Object.entries(row.counters)) if (typeof value === 'number') counters[name] = (counters[name] ?? 0) + value;
  }
  return { readers: result.rows.length, counters };
}

/** Kafka bytes read per byte served, to 3 decimals; null before anything was served. */
export function kafkaPerServed(kafkaBytes: number, bytesServed: number): number | null {
  return bytesServed > 0 ? Math.round((kafkaBytes / bytesServed) * 1000) / 1000 : null;
}
