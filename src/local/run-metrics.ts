/**
 * What `run --metrics-port` publishes: records and bytes indexed per table, commit
 * durations, rounds, deliveries and failures, and each partition's lag as the runner sees
 * it (the LSO its event source last learnt, minus the partition's indexed_end).
 */
import { Histogram, type MetricFamily } from '../common/exposition.js';
import { lagFamilies, type PartitionLag } from '../common/lag-metrics.js';
import type { SealedRange } from '../ranges/sealer.js';

export type RunFailure = 'delivery' | 'partition' | 'discovery';

export class RunMetrics {
  private readonly indexed = new Map<string, { records: number; bytes: number; files: number }>();
  readonly commitDurations = new Histogram();
  rounds = 0;
  private readonly failures: Record<RunFailure, number> = { delivery: 0, partition: 0, discovery: 0 };

  /** A commit of `ranges` of `table` that took `seconds`. */
  committed(table: string, ranges: readonly SealedRange[], seconds: number): void {
    const sums = this.indexed.get(table) ?? { records: 0, bytes: 0, files: 0 };
    for (const range of ranges) {
      sums.records += range.recordCount;
      sums.bytes += range.bytes;
      sums.files += range.files.length;
    }
    this.indexed.set(table, sums);
    this.commitDurations.observe(seconds);
  }

  failed(kind: RunFailure): void {
    this.failures[kind] += 1;
  }

  /** Every family, with the runner's own figures of the moment (`reads`: what its indexers read from Kafka). */
  families(lags: readonly PartitionLag[], reads: { records: number; bytes: number }, deliveries: { events: number; redelivered: number }): MetricFamily[] {
    const perTable = (pick: (sums: { records: number; bytes: number; files: number }) => number) => [...this.indexed].map(([table, sums]) => ({ labels: { table }, value: pick(sums) }));
    return [
      { name: 'offsetlake_indexed_records_total', help: 'Committed records put into files by this process, per table.', type: 'counter', samples: perTable((s) => s.records) },
      { name: 'offsetlake_indexed_bytes_total', help: 'Key + value + header bytes of the records put into files by this process, per table.', type: 'counter', samples: perTable((s) => s.bytes) },
      { name: 'offsetlake_indexed_files_total', help: 'Data files committed by this process, per table.', type: 'counter', samples: perTable((s) => s.files) },
      { name: 'offsetlake_commit_duration_seconds', help: 'Time of each catalog transaction that added files (lease check, files, statistics, indexed_end).', type: 'histogram', samples: [this.commitDurations.snapshot()] },
      { name: 'offsetlake_run_rounds_total', help: 'Rounds of the runner: every partition delivered to, idle ranges ticked, leases renewed.', type: 'counter', samples: [{ value: this.rounds }] },
      { name: 'offsetlake_run_deliveries_total', help: 'Deliveries of the emulated event source that succeeded.', type: 'counter', samples: [{ value: deliveries.events }] },
      { name: 'offsetlake_run_redeliveries_total', help: 'Deliveries repeated after a failure.', type: 'counter', samples: [{ value: deliveries.redelivered }] },
      { name: 'offsetlake_run_failures_total', help: 'Failures: a delivery that threw, a partition whose tick, flush or renewal failed, a discovery of tables that failed.', type: 'counter', samples: Object.entries(this.failures).map(([kind, value]) => ({ labels: { kind }, value })) },
      { name: 'offsetlake_run_kafka_records_total', help: 'Committed records the indexers read from Kafka (a record read again after its range was dropped counts again).', type: 'counter', samples: [{ value: reads.records }] },
      { name: 'offsetlake_run_kafka_bytes_total', help: 'Key + value + header bytes of the committed records the indexers read from Kafka.', type: 'counter', samples: [{ value: reads.bytes }] },
      ...lagFamilies(lags),
    ];
  }
}
