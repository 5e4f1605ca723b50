/** Per-partition lag as exposition families: what `serve` and `run --metrics-port` both publish. */
import type { MetricFamily } from './exposition.js';

export interface PartitionLag {
  table: string;
  partition: number;
  /** LSO − indexed_end: committed offsets not yet in files. */
  records: bigint | number;
  /** Seconds since the partition was last seen caught up (0 while it is); absent where the process cannot date that (src/table-topic/lag.ts). */
  seconds?: number;
}

export function lagFamilies(lags: readonly PartitionLag[]): MetricFamily[] {
  const labels = (lag: PartitionLag) => ({ table: lag.table, partition: lag.partition });
  const timed = lags.filter((lag) => lag.seconds !== undefined);
  return [
    { name: 'offsetlake_partition_lag_records', help: 'Committed offsets of the partition not yet in files: its last stable offset minus indexed_end.', type: 'gauge', samples: lags.map((lag) => ({ labels: labels(lag), value: Number(lag.records) })) },
    ...(timed.length === 0 ? [] : [{ name: 'offsetlake_partition_lag_seconds', help: 'Seconds since the partition was last caught up (indexed_end at its last stable offset); 0 while it is.', type: 'gauge' as const, samples: timed.map((lag) => ({ labels: labels(lag), value: lag.seconds! })) }]),
  ];
}
