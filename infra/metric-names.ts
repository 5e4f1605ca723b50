/**
 * The CloudWatch metrics the functions publish as EMF (functions/observability.ts) and the
 * alarms and dashboard read (infra/stack.ts): one list, so the two cannot drift apart.
 * Every metric has the dimension `service` (Powertools' default), and those per table or
 * job `table` or `job` besides.
 */
export const lambdaMetricsNamespace = 'offsetlake';
export const lambdaServiceName = 'offsetlake';

export const lambdaMetricNames = {
  /** Committed records put into files, per table (indexer, tick). */
  recordsIndexed: 'RecordsIndexed',
  bytesIndexed: 'BytesIndexed',
  /** One catalog transaction adding files (ms). */
  commitDuration: 'CommitDuration',
  /** LSO − indexed_end summed over a table's partitions, per table (tick, every run). */
  tableLag: 'TableLagRecords',
  /** The largest of those. */
  maxTableLag: 'MaxTableLagRecords',
  /** A rebuild from Kafka by the reader (ms). */
  fileRebuildDuration: 'FileRebuildDuration',
  granuleRebuildDuration: 'GranuleRebuildDuration',
  /** An invocation that threw. */
  errors: 'Errors',
  /** What a scheduled job (tick, retention, rotate-token) could not do, per job. */
  jobFailures: 'JobFailures',
} as const;

/** The scheduled jobs whose failures raise an alarm (the `job` dimension of JobFailures). */
export const scheduledJobs = ['tick', 'retention', 'rotate-token'] as const;
