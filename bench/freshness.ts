/**
 * Freshness (issue 49): how long after a record is committed each face returns it, with
 * `offsetlake run` and `offsetlake serve` up as a user starts them, at the table's default
 * settings unless given (on the local stack, or KAFKA_BROKERS / DATABASE_URL):
 *
 *   node --import tsx bench/freshness.ts [--records 300] [--rate 2] [--partitions 3]
 *        [--setting file_window=60s ...] [--serve-arg=--iceberg-snapshot-interval=60s ...]
 *        [--faces ducklake,iceberg,pyiceberg,query] [--wait 180s]
 *
 * Prints, per face: records returned, the time to visibility p50 / p99 / max, and the
 * duration of its polls (reads of fresh data) p50 / p99, overall and for the polls during
 * which a file was committed. How it measures: bench/freshness-probe.ts.
 */
import { parseArgs } from 'node:util';
import { localReaderDatabaseUrl } from '../src/stack/postgres.js';
import { stackConfig } from '../src/stack/config.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { parseDuration } from '../src/table/settings.js';
import { useProjectPython } from '../test/helpers/project-python.js';
import { allFaces, probeFreshness, quantile, type Face } from './freshness-probe.js';

// the engines (DuckDB, pyiceberg) are the project's pinned Python
useProjectPython();

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '300' },
    rate: { type: 'string', default: '2' },
    partitions: { type: 'string', default: '3' },
    setting: { type: 'string', multiple: true, default: [] },
    'serve-arg': { type: 'string', multiple: true, default: [] },
    'run-arg': { type: 'string', multiple: true, default: [] },
    faces: { type: 'string', default: allFaces.join(',') },
    wait: { type: 'string', default: '180s' },
  },
});

useLocalStackDefaults();
const readerDatabaseUrl = process.env.OFFSETLAKE_READER_URL ?? localReaderDatabaseUrl(stackConfig());
if (!readerDatabaseUrl) throw new Error('no reader login: run `offsetlake stack up` first, or give OFFSETLAKE_READER_URL');
const settings = Object.fromEntries(values.setting.map((pair) => {
  const at = pair.indexOf('=');
  if (at < 0) throw new Error(`--setting ${pair}: give NAME=VALUE, e.g. --setting file_window=60s`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}));
const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const engine = await openEngine();
try {
  const result = await probeFreshness({
    engine, readerDatabaseUrl, records: Number(values.records), rate: Number(values.rate), partitions: Number(values.partitions), settings,
    serveArgs: values['serve-arg'], runArgs: values['run-arg'], faces: values.faces.split(',') as Face[], waitMs: parseDuration('--wait', values.wait), log,
  });
  const seconds = (ms: number) => (ms / 1000).toFixed(2);
  const millis = (ms: number) => ms.toFixed(0);
  console.log(`table ${result.table}: ${result.produced.length} records, ${result.files} files committed meanwhile; settings ${JSON.stringify(settings)}, serve ${JSON.stringify(values['serve-arg'])}; CPU s: run ${result.cpuSeconds.run.toFixed(1)}, serve ${result.cpuSeconds.serve.toFixed(1)}`);
  console.log('| face | returned | visible after p50 | p99 | max | p50 / p99 to the start of that poll | poll p50 | poll p99 | polls during a commit: p50 | p99 (n) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const face of result.faces) {
    const visible = face.visibleMs.filter((ms): ms is number => ms !== undefined);
    const fromStart = face.visibleFromStartMs.filter((ms): ms is number => ms !== undefined);
    console.log(`| ${face.face} | ${face.seen}/${result.produced.length}${face.error ? ` (${face.error})` : ''} | ${seconds(quantile(visible, 0.5))} s | ${seconds(quantile(visible, 0.99))} s | ${seconds(Math.max(...visible))} s | `
      + `${seconds(quantile(fromStart, 0.5))} / ${seconds(quantile(fromStart, 0.99))} s | `
      + `${millis(quantile(face.pollMs, 0.5))} ms | ${millis(quantile(face.pollMs, 0.99))} ms | ${millis(quantile(face.pollDuringCommitMs, 0.5))} ms | ${millis(quantile(face.pollDuringCommitMs, 0.99))} ms (${face.pollDuringCommitMs.length}) |`);
  }
} finally {
  await engine.close();
}
