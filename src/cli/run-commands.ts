import { watchDuckLakeSessions } from '../catalog/reader-login.js';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { findFile, listFiles } from '../catalog/file-reads.js';
import { findTable, listTables } from '../catalog/tables.js';
import { rangeBuilder } from '../files/files.js';
import { BuildPool, defaultBuildThreads } from '../files/pool.js';
import { kafkaSource } from '../kafka/source.js';
import { defaultRunnerOptions, LocalRunner, type RunSummary } from '../local/runner.js';
import { checkFiles, rebuildFile } from '../files/rebuild.js';
import { parseBytes, parseDuration } from '../table/settings.js';
import { partitionStatus } from '../tables/status.js';
import type { Engine } from '../runtime/engine.js';
import { withEngine } from './engine.js';
import { printJson, progress, UsageError } from './output.js';
import { indexUsage } from './help.js';
import { buildThreadsFlag, parseCommandArgs, portFlag, useLogFormat, wholeNumberFlag } from './args.js';
import { listenOn } from './listen.js';
import { metricsServer } from '../local/metrics-server.js';

const engineOptions = { 'database-url': { type: 'string' }, 'kafka-brokers': { type: 'string' }, json: { type: 'boolean' } } as const;

/** `run --once` gives a catalog that is not there this many tries (about 15 s), like its failing rounds. */
const onceCatalogTries = 6;

/** `run`: every partition of every table in one process, until interrupted (or caught up, with --once). */
export async function runCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs('run', args, {
    ...engineOptions, once: { type: 'boolean' }, memory: { type: 'string' }, builds: { type: 'string' }, 'build-threads': { type: 'string' }, 'batch-size': { type: 'string' }, 'batch-window': { type: 'string' }, 'progress-every': { type: 'string' },
    'metrics-port': { type: 'string' }, 'metrics-host': { type: 'string' }, 'log-format': { type: 'string' },
  }, false);
  useLogFormat(values['log-format']);
  const metricsPort = values['metrics-port'] === undefined ? undefined : portFlag('--metrics-port', values['metrics-port'], 0);
  if (values['metrics-host'] !== undefined && metricsPort === undefined) throw new UsageError('--metrics-host needs --metrics-port: give the port the metrics are served on');
  const metricsHost = values['metrics-host'] ?? '127.0.0.1';
  // a line every few seconds on a terminal (or as often as asked), none in a pipe unless asked
  const progressEvery = values['progress-every'] ? parseDuration('--progress-every', values['progress-every']) : process.stderr.isTTY ? 5000 : undefined;
  const buildThreads = buildThreadsFlag(values['build-threads'], defaultBuildThreads, 'build on the thread that reads Kafka');
  const costs = defaultRunnerOptions.memoryCosts;
  const options = {
    ...defaultRunnerOptions,
    once: values.once ?? false,
    memoryBudgetBytes: values.memory ? parseBytes('--memory', values.memory) : defaultRunnerOptions.memoryBudgetBytes,
    memoryBudgetGiven: values.memory !== undefined,
    // a build on a worker works on a packed copy of its range's records, besides them
    memoryCosts: buildThreads > 0 ? { ...costs, buildFactor: costs.buildFactor + 1 } : costs,
    maxConcurrentBuilds: wholeNumberFlag('builds', values.builds, Math.max(defaultRunnerOptions.maxConcurrentBuilds, buildThreads), 64),
    // Like the event source mapping's batching window: how long records may wait to be delivered.
    pollIntervalMs: values['batch-window'] ? parseDuration('--batch-window', values['batch-window']) : defaultRunnerOptions.pollIntervalMs,
    emulator: { ...defaultRunnerOptions.emulator, batchSize: wholeNumberFlag('batch-size', values['batch-size'], defaultRunnerOptions.emulator.batchSize, 10_000) },
  };
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const pool = buildThreads > 0 ? new BuildPool(buildThreads) : undefined;
  // A merged file (up to file_bytes) is always built on a worker: on the thread that reads
  // Kafka it would hold every partition's deliveries for the build (docs/measurements.md,
  // "Compaction"). The worker starts only when a merge is first built.
  const mergePool = pool ?? new BuildPool(1);
  try {
    const summary = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
      const runner = new LocalRunner(engine, rangeBuilder(engine.catalog, undefined, undefined, pool?.range), { ...options, mergeBuild: mergePool.range }, progress);
      const metrics = metricsPort === undefined ? undefined : metricsServer(() => runner.metricFamilies());
      const metricsAt = metrics && `http://${metricsHost}:${await listenOn(metrics, metricsPort!, metricsHost, { port: '--metrics-port', host: '--metrics-host' })}/metrics`;
      progress(`indexing as ${runner.owner}${options.once ? ' until caught up' : '; Ctrl-C stops'}${metricsAt ? `; metrics at ${metricsAt}` : ''}`);
      const report = progressReporter(engine, progressEvery ?? 0);
      const timer = progressEvery === undefined ? undefined : setInterval(() => void report(runner.progress), progressEvery);
      // DuckLake reader logins can lift their own timeouts: a long-lived run holds them to the bounds, as serve does.
      const watch = options.once ? undefined : watchDuckLakeSessions(engine.catalog);
      try {
        return await runner.run(stop.signal);
      } finally {
        watch?.stop();
        clearInterval(timer);
        if (metrics) {
          metrics.closeAllConnections();
          await new Promise((resolve) => metrics.close(resolve));
        }
      }
    }, { tries: options.once ? onceCatalogTries : Infinity, signal: stop.signal, log: progress });
    if (values.json) printJson(summary);
    else process.stdout.write(`${summary.records} records in ${summary.events} events; ${summary.rangesCommitted} ranges, ${summary.filesCommitted} files committed\n`);
    for (const { partition, error } of summary.failed) progress(`${partition} could not be indexed: ${error}`);
    for (const { index, error } of summary.indexesFailed) progress(`${index} could not be backfilled: ${error}`);
    return summary.failed.length > 0 || summary.indexesFailed.length > 0 ? 1 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await mergePool.close();
  }
}

/** Progress lines for one run: records per second and files since the line before, lag per table. */
function progressReporter(engine: Engine, everyMs: number): (now: RunSummary) => Promise<void> {
  let last = { records: 0, files: 0 };
  return async (now) => {
    const lag = new Map<string, bigint>();
    for (const s of await partitionStatus(engine).catch(() => [])) if (s.lag !== null) lag.set(s.table, (lag.get(s.table) ?? 0n) + s.lag);
    const rate = Math.round(((now.records - last.records) * 1000) / everyMs);
    const lags = [...lag].map(([table, behind]) => `${table} ${behind}`).join(', ');
    // Where resident memory goes (--memory budgets it): the JS heap, and Buffers outside it.
    const memory = process.memoryUsage();
    const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;
    progress(`${rate} records/s, ${now.filesCommitted - last.files} files committed; lag (offsets): ${lags || 'no tables'}; rss ${mib(memory.rss)} (JS heap ${mib(memory.heapTotal)}, ${mib(memory.heapUsed)} used; Buffers ${mib(memory.arrayBuffers)})`);
    last = { records: now.records, files: now.filesCommitted };
  };
}

/**
 * `check [NAME]`: every live file rebuilt from Kafka; the ones that do not match are named,
 * and so are the ones whose catalog statistics are not those of their rows. Exit 1 if any.
 */
export async function checkCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('check', args, engineOptions);
  const checks = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    const tables = positionals[0] ? [await findTable(engine.catalog, positionals[0])] : await listTables(engine.catalog);
    let done = 0;
    return checkFiles(engine.catalog, kafkaSource(engine.kafka), tables, (table) => listFiles(engine.catalog, table.tableId), (check) => {
      done += 1;
      const file = `${check.table} file ${check.file} (partition ${check.partition}, offsets ${check.offsets})`;
      if (check.problem) progress(`${file} cannot be rebuilt: ${check.problem}`);
      else {
        if (check.statistics.length > 0) progress(`${file} rebuilds byte for byte, but the catalog's statistics are not its rows': ${check.statistics.join('; ')}`);
        if (check.pieces.length > 0) progress(`${file} rebuilds byte for byte, but pieces the catalog keeps to serve it are not the rebuilt file's: ${check.pieces.join('; ')}`);
        if (check.indexEntries.length > 0) progress(`${file} rebuilds byte for byte, but its index entries in the catalog are not those its rows give: ${check.indexEntries.join('; ')}`);
        if (check.statistics.length === 0 && check.pieces.length === 0 && check.indexEntries.length === 0 && done % 100 === 0) progress(`${done} files rebuilt`);
      }
    });
  });
  const failed = checks.filter((c) => c.problem !== null);
  const wrongStatistics = checks.filter((c) => c.problem === null && c.statistics.length > 0);
  const wrongPieces = checks.filter((c) => c.problem === null && c.pieces.length > 0);
  const wrongIndexEntries = checks.filter((c) => c.problem === null && c.indexEntries.length > 0);
  const identical = checks.filter((c) => c.problem === null && c.statistics.length === 0 && c.pieces.length === 0 && c.indexEntries.length === 0).length;
  if (values.json) {
    printJson({
      checked: checks.length, identical, failed: failed.map(({ statistics: _, pieces: __, indexEntries: ___, ...check }) => check),
      wrongStatistics: wrongStatistics.map(({ pieces: _, indexEntries: __, ...check }) => check), wrongPieces: wrongPieces.map(({ statistics: _, indexEntries: __, ...check }) => check),
      wrongIndexEntries: wrongIndexEntries.map(({ statistics: _, pieces: __, ...check }) => check),
    });
  } else {
    const statistics = wrongStatistics.length > 0 ? `, ${wrongStatistics.length} with statistics that are not the file's (named above: engines and queries may skip rows they hold)` : '';
    const pieces = wrongPieces.length > 0 ? `, ${wrongPieces.length} with stored pieces that are not the file's (named above; reads of them are refused)` : '';
    const entries = wrongIndexEntries.length > 0 ? `, ${wrongIndexEntries.length} with index entries that are not the file's (named above: query may skip rows they hold)` : '';
    process.stdout.write(`${checks.length} files checked: ${identical} rebuilt byte for byte with their statistics and stored pieces, ${failed.length} cannot be rebuilt${failed.length > 0 ? ' (named above; they are never served)' : ''}${statistics}${pieces}${entries}\n`);
  }
  return failed.length > 0 || wrongStatistics.length > 0 || wrongPieces.length > 0 || wrongIndexEntries.length > 0 ? 1 : 0;
}

/** `rebuild NAME FILE`: the file's bytes from Kafka, checked against the catalog. */
export async function rebuildCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('rebuild', args, { ...engineOptions, output: { type: 'string', short: 'o' } });
  const [name, fileText] = positionals;
  // checked before the rebuild, which may take a while, not after
  if (values.output) {
    const folder = dirname(resolve(values.output));
    if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new UsageError(`-o ${values.output}: the folder ${folder} does not exist; create it first`);
  }
  if (!name || !fileText) throw new UsageError(`rebuild needs a table NAME and a FILE id; usage: ${indexUsage}`);
  if (!/^\d+$/.test(fileText)) throw new UsageError(`FILE must be a file id (a number, as \`files\` lists), got "${fileText}"`);
  const result = await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    const table = await findTable(engine.catalog, name);
    const file = await findFile(engine.catalog, table.tableId, BigInt(fileText));
    if (!file) throw new Error(`table ${name} has no file ${fileText}; \`offsetlake files ${name}\` lists its files`);
    // rebuildFile compares size, footer and sha256 with the catalog and throws on any difference.
    const rebuilt = await rebuildFile(engine.catalog, kafkaSource(engine.kafka), table, file);
    if (values.output) writeFileSync(values.output, rebuilt.bytes);
    return { file: fileText, records: rebuilt.records, bytes: rebuilt.bytes.byteLength, sha256: Buffer.from(rebuilt.sha256).toString('hex'), sameAsCatalog: ['size', 'footer', 'sha256'], output: values.output };
  });
  if (values.json) printJson(result);
  else process.stdout.write(`file ${result.file}: ${result.records} records, ${result.bytes} bytes, sha256 ${result.sha256}: identical to the catalog${result.output ? `; written to ${result.output}` : ''}\n`);
  return 0;
}
