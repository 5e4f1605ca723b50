import type { Granularity } from '../table/settings.js';

const bucketMs: Record<Exclude<Granularity, 'day'>, number> = { minute: 60_000, hour: 3_600_000 };

/** How long a time bucket of `granularity` lasts (ms). */
export function bucketLengthMs(granularity: Granularity): number {
  return granularity === 'day' ? 86_400_000 : bucketMs[granularity];
}

/** The start (epoch ms, UTC) of the time bucket holding `timestamp`. Days are UTC days. */
export function bucketOf(timestamp: number, granularity: Granularity): number {
  const size = bucketLengthMs(granularity);
  return Math.floor(timestamp / size) * size;
}
