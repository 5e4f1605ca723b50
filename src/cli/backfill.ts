import type { ChunkResult } from '../backfill/index.js';
import { discoverPartitions } from '../retention/discovery.js';
import { maxChunksPerExecution } from '../backfill/limits.js';
import { checkRetention, type PartitionRetention } from '../retention/check.js';
import { withEngine } from './engine.js';
import { printJson, printTable, progress, UsageError } from './output.js';
import { backfillUsage } from './help.js';
import { parseCommandArgs, wholeNumberFlag } from './args.js';

const options = {
  json: { type: 'boolean' },
  'chunks-per-execution': { type: 'string' },
  'database-url': { type: 'string' },
  'kafka-brokers': { type: 'string' },
} as const;

function describeChunk(chunk: ChunkResult): string {
  const where = `${chunk.table} partition ${chunk.partition}`;
  const offsets = chunk.chunk ? ` [${chunk.chunk.start}, ${chunk.chunk.end})` : '';
  const rate = chunk.elapsedMs > 0 && chunk.chunk ? `, ${Math.round((Number(BigInt(chunk.chunk.end) - BigInt(chunk.chunk.start)) * 1000) / chunk.elapsedMs)} offsets/s` : '';
  const left = chunk.done ? 'done' : `${BigInt(chunk.cursor) - BigInt(chunk.target)} offsets left`;
  return `${where}${offsets}: ${chunk.outcome}, ${chunk.records} records, ${chunk.files} files in ${chunk.elapsedMs} ms${rate}; ${left}`;
}

/** `backfill NAME`: the table's history below its indexed ranges, chunk by chunk, with progress. */
export async function backfillCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('backfill', args, options);
  const name = positionals[0];
  if (!name) throw new UsageError(`backfill needs a table NAME; usage: ${backfillUsage}`);
  const budget = values['chunks-per-execution'];
  const chunksPerExecution = budget === undefined ? undefined : wholeNumberFlag('chunks-per-execution', budget, 0, maxChunksPerExecution);
  const summary = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    // The state machine's definition, executed locally (loads aws-local-stepfunctions: imported only here).
    const { runBackfillStateMachine } = await import('../backfill/local-execution.js');
    return runBackfillStateMachine(engine, name, (chunk) => progress(describeChunk(chunk)), {
      ...(chunksPerExecution !== undefined ? { chunksPerExecution } : {}),
      onExecution: (execution, _input, executionName) => progress(`${name}: state machine execution ${executionName}${execution > 1 ? ' (continued from the last)' : ''}`),
    });
  });
  if (values.json) {
    printJson(summary);
    return 0;
  }
  printTable(summary.partitions.map((p) => ({ partition: p.partition, indexed_start: p.indexedStart, cursor: p.cursor, target: p.target, done: p.done })));
  process.stdout.write(`${summary.chunks} chunks in ${summary.executions} executions, ${summary.records} records, ${summary.files} files in ${summary.elapsedMs} ms\n`);
  // Left only where another run holds the claim: it goes on with them, or its claims expire after lease_ttl.
  const left = summary.partitions.filter((p) => !p.done).length;
  if (left > 0) process.stdout.write(`${left} partitions have history left that another backfill run holds; it continues them, or run this again after their claims expire (the table's lease_ttl)\n`);
  return 0;
}

/** What one partition's check did and planned, in sentences; nothing when it changed nothing and nothing is due. */
export function retentionPlan(p: PartitionRetention): string[] {
  const where = `${p.table} partition ${p.partition}`;
  const lines: string[] = [];
  if (p.expiredFiles > 0) {
    lines.push(`${where}: ${p.expiredFiles} file${p.expiredFiles === 1 ? '' : 's'} expired (Kafka now starts at offset ${p.earliest}); its live files now start at ${p.indexedStart} (were from ${p.before.indexedStart})`);
  }
  if (p.backfillTarget !== p.before.backfillTarget && p.backfillTarget !== null) {
    lines.push(`${where}: backfill will stop at Kafka's earliest offset ${p.backfillTarget} (was ${p.before.backfillTarget})`);
  }
  if (p.backfillDue && p.backfillCursor !== null && p.backfillTarget !== null) {
    lines.push(`${where}: offsets ${p.backfillTarget} to ${p.backfillCursor} are planned for backfill: run \`offsetlake backfill ${p.table}\``);
  }
  return lines;
}

/** `retention [NAME]`: one retention check of every partition, then partition discovery. */
export async function retentionCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('retention', args, options);
  const table = positionals[0];
  const result = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    const retention = await checkRetention(engine.catalog, engine.kafka, table === undefined ? {} : { table });
    const discovered = await discoverPartitions(engine.catalog, engine.kafka, { ...(table === undefined ? {} : { table }), failed: retention.failedTables });
    return { ...retention, discovered };
  });
  for (const f of result.failedTables) progress(`table ${f.table} (topic ${f.topic}): ${f.step === 'retention' ? 'retention was not checked' : 'partition discovery was not done'}: ${f.reason}`);
  const exit = result.failedTables.length > 0 ? 1 : 0;
  if (values.json) {
    printJson(result);
    return exit;
  }
  printTable(result.partitions.map((p) => ({
    table: p.table, partition: p.partition, earliest: p.earliest, expired_now: p.expiredFiles, indexed_start: p.indexedStart, backfill_target: p.backfillTarget,
  })));
  for (const partition of result.partitions) for (const line of retentionPlan(partition)) process.stdout.write(`${line}\n`);
  for (const d of result.discovered) {
    const what = d.found === 'topic' ? `new partition ${d.partition} of ${d.table} (topic ${d.topic}): indexed from its LSO ${d.start}` : `partition ${d.partition} of ${d.table}: planned`;
    process.stdout.write(`${what}${d.backfill ? `; history below ${d.start} is due for \`offsetlake backfill ${d.table}\`` : ''}\n`);
  }
  const added = result.discovered.filter((d) => d.found === 'topic').length;
  const failed = result.failedTables.length > 0 ? `; ${new Set(result.failedTables.map((f) => f.table)).size} table(s) could not be checked (named above)` : '';
  process.stdout.write(`${result.expiredFiles} files expired, ${added} partitions discovered${failed}\n`);
  return exit;
}
