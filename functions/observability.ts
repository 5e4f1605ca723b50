/**
 * What every Lambda entry logs and measures, through Powertools for AWS Lambda: JSON log
 * lines (the engine's own lines too, src/common/log.ts, with their table and partition
 * keys) and CloudWatch metrics as EMF lines in the function's log, namespace `offsetlake`.
 * `observed` wraps an entry: it counts its errors, and publishes what the invocation
 * measured when it ends. The metric names are infra's too (its alarms and dashboard).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { setLogSink } from '../src/common/log.js';
import type { SealedRange } from '../src/ranges/sealer.js';
import type { TableRecord } from '../src/table/record.js';
import { lambdaMetricNames as names, lambdaMetricsNamespace, lambdaServiceName } from '../infra/metric-names.js';

export const logger = new Logger({ serviceName: lambdaServiceName });
export const metrics = new Metrics({ namespace: lambdaMetricsNamespace, serviceName: lambdaServiceName });

setLogSink((level, message, fields) => logger[level](message, fields));

/** One metric with the dimensions of its own (a table, a job), published at once. */
type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];

function single(name: string, unit: Unit, value: number, dimensions: Record<string, string>): void {
  const metric = metrics.singleMetric();
  for (const [key, dimension] of Object.entries(dimensions)) metric.addDimension(key, dimension);
  metric.addMetric(name, unit, value);
}

/** A commit of files (the indexer runtime's `onCommit`): records, bytes and the commit's duration, per table. */
export function recordCommit(table: TableRecord, partition: number, ranges: readonly SealedRange[], seconds: number): void {
  const records = ranges.reduce((sum, range) => sum + range.recordCount, 0);
  const bytes = ranges.reduce((sum, range) => sum + range.bytes, 0);
  single(names.recordsIndexed, MetricUnit.Count, records, { table: table.name });
  single(names.bytesIndexed, MetricUnit.Bytes, bytes, { table: table.name });
  metrics.addMetric(names.commitDuration, MetricUnit.Milliseconds, seconds * 1000);
  logger.debug('files committed', { table: table.name, partition, ranges: ranges.length, records, bytes });
}

/** A rebuild from Kafka by the reader (`kind`: a whole file or a granule) and its duration. */
export function recordRebuild(kind: 'file' | 'granule', seconds: number): void {
  metrics.addMetric(kind === 'file' ? names.fileRebuildDuration : names.granuleRebuildDuration, MetricUnit.Milliseconds, seconds * 1000);
}

/** Each table's lag (the sum over its partitions) and the largest, as the tick sees them. */
export function recordLag(lags: readonly { table: string; records: bigint | number }[]): void {
  const perTable = new Map<string, number>();
  for (const lag of lags) perTable.set(lag.table, (perTable.get(lag.table) ?? 0) + Number(lag.records));
  for (const [table, records] of perTable) single(names.tableLag, MetricUnit.Count, records, { table });
  metrics.addMetric(names.maxTableLag, MetricUnit.Count, Math.max(0, ...perTable.values()));
}

/** A scheduled job's failures (partitions or tables it could not do, or 1 when it threw). */
export function recordJobFailures(job: string, count: number): void {
  single(names.jobFailures, MetricUnit.Count, count, { job });
}

/**
 * The entry `handler` with its errors counted and logged (then thrown on, for Lambda's
 * retries) and the invocation's metrics published when it ends. `job`: a scheduled job,
 * whose failure is also a JobFailures datum.
 */
export function observed<E, R>(name: string, handler: (event: E) => Promise<R>, job?: string): (event?: E, context?: Parameters<Logger['addContext']>[0]) => Promise<R> {
  return async (event, context) => {
    if (context) logger.addContext(context);
    try {
      return await handler(event as E);
    } catch (error) {
      metrics.addMetric(names.errors, MetricUnit.Count, 1);
      if (job) recordJobFailures(job, 1);
      logger.error(`${name} failed`, { error: error as Error });
      throw error;
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  };
}
