/**
 * `serve`'s /metrics and `run --metrics-port` as a Prometheus server scrapes them, read by
 * prometheus_client's own parser (test/helpers/exposition_parse.py), against what the test
 * knows without our code: the records and bytes it produced with confluent-kafka, the bytes
 * and requests of the HTTP answers it got, lag in seconds 0 while caught up and, behind,
 * more than 0 and no more than the test's own clock has run since it saw the partition
 * caught up. Then the JSON logs of both processes: every
 * stderr line an object with time, level and message, and a request's trace id in its lines
 * and its response header.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { deleteTopic } from '../../src/kafka/topics.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { produceWithLibrdkafka, type ProducedRecord } from '../helpers/independent-producers.js';
import { parseExposition, sampleValue, type ParsedFamily } from '../helpers/exposition.js';
import { runCli } from '../helpers/cli.js';

interface Child {
  child: ChildProcess;
  /** Every stderr line so far. */
  lines: string[];
  /** Resolves with the first line `match` finds. */
  waitFor(match: RegExp): Promise<string>;
}

function start(engine: Engine, args: string[]): Child {
  const child = spawn(process.execPath, ['bin/offsetlake.js', ...args], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl }, stdio: ['ignore', 'ignore', 'pipe'] });
  const lines: string[] = [];
  const waiting: { match: RegExp; resolve: (line: string) => void }[] = [];
  let partial = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    partial += chunk.toString();
    const complete = partial.split('\n');
    partial = complete.pop()!;
    for (const line of complete) {
      lines.push(line);
      for (const wait of waiting.filter((w) => w.match.test(line))) wait.resolve(line);
    }
  });
  return {
    child,
    lines,
    waitFor: (match) => {
      const seen = lines.find((line) => match.test(line));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiting.push({ match, resolve });
        child.once('exit', (code) => reject(new Error(`offsetlake ${args[0]} exited (${code}) before saying ${match}: ${lines.join('\n')}`)));
      });
    },
  };
}

async function stop(started: Child): Promise<void> {
  if (started.child.exitCode !== null) return;
  const exited = new Promise((resolve) => started.child.once('exit', resolve));
  started.child.kill('SIGTERM');
  await exited;
}

/** What each record weighs as the indexer counts it: key + value (+ header) bytes. */
const weight = (r: ProducedRecord) => (r.key?.length ?? 0) + (r.value?.length ?? 0);

function records(partition: number, count: number): ProducedRecord[] {
  // one timestamp hour for all: no bucket seal, whatever the clock says
  return Array.from({ length: count }, (_, i) => ({ key: Buffer.from(`k${partition}-${i}`), value: Buffer.from(JSON.stringify({ n: i, pad: 'x'.repeat(i % 17) })), timestamp: Date.UTC(2025, 5, 1, 12, 0, 0) + i }));
}

const number = (families: ParsedFamily[], name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels) as number | undefined;

describe('Prometheus metrics and JSON logs', () => {
  let engine: Engine;
  let serve: Child;
  let base: string;
  /** Every request this test sent to serve. */
  let requests = 0;
  const get = (path: string, headers: Record<string, string> = {}) => {
    requests += 1;
    return fetch(`${base}${path}`, { headers });
  };
  const scrape = async (url: string) => {
    const response = await fetch(url, { headers: { accept: 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2' } });
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parseExposition(await response.text());
  };

  beforeAll(async () => {
    engine = await testEngine('observability');
    serve = start(engine, ['serve', '--port', '0', '--no-auth', '--log-format', 'json', '--build-threads', '0']);
    base = /serving (http:\/\/127\.0\.0\.1:\d+)\/tables/.exec(JSON.parse(await serve.waitFor(/Ctrl-C stops/)).message)![1]!;
  }, 120_000);

  afterAll(async () => {
    await stop(serve);
    await engine.close();
  });

  it('serve and run --metrics-port publish lag in records and seconds, records and bytes indexed and read, bytes served and rebuild and commit durations that match what was produced and fetched', async () => {
    const topic = await newTopic(engine, 2, 'metrics');
    const sealed = await testTable(engine, topic, { file_window: '1s' });
    const held = await testTable(engine, topic, { file_window: '1h' });
    // Both tables start at the empty topic's LSO: serve sees them caught up (its sample begins after the scrape asks).
    const caughtUpSeen = Date.now();
    requests += 1;
    const empty = await scrape(`${base}/metrics`);
    for (const table of [sealed.name, held.name]) {
      for (const partition of ['0', '1']) {
        expect(number(empty, 'offsetlake_partition_lag_records', { table, partition })).toBe(0);
        expect(number(empty, 'offsetlake_partition_lag_seconds', { table, partition })).toBe(0);
      }
    }
    const produced = [records(0, 300), records(1, 120)];
    for (const [partition, batch] of produced.entries()) await produceWithLibrdkafka(engine.config.kafkaBrokers, topic, partition, 'none', batch);
    const total = produced.flat().length;
    const bytes = produced.flat().reduce((sum, r) => sum + weight(r), 0);
    /** Seconds since the test saw the caught-up sample asked for: more than any partition can have been behind since. */
    const sinceCaughtUpSeen = () => (Date.now() - caughtUpSeen) / 1000;

    // Before any indexing, serve's lag is every record produced, behind since a later sample than the caught-up one.
    requests += 1;
    const before = await scrape(`${base}/metrics`);
    const beforeAtMost = sinceCaughtUpSeen();
    for (const table of [sealed.name, held.name]) {
      for (const [partition, batch] of produced.entries()) {
        expect(number(before, 'offsetlake_partition_lag_records', { table, partition: String(partition) })).toBe(batch.length);
        expect(number(before, 'offsetlake_partition_lag_seconds', { table, partition: String(partition) })).toBeGreaterThan(0);
        expect(number(before, 'offsetlake_partition_lag_seconds', { table, partition: String(partition) })).toBeLessThanOrEqual(beforeAtMost);
      }
    }

    const run = start(engine, ['run', '--metrics-port', '0', '--batch-window', '100ms']);
    try {
      const metricsUrl = /metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(await run.waitFor(/metrics at http/))![1]!;
      let families = await scrape(metricsUrl);
      for (let tries = 0; number(families, 'offsetlake_indexed_records_total', { table: sealed.name }) !== total || number(families, 'offsetlake_partition_lag_records', { table: sealed.name, partition: '1' }) !== 0; tries++) {
        if (tries > 600) throw new Error(`run did not index ${total} records of ${sealed.name}: ${run.lines.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        families = await scrape(metricsUrl);
      }
      expect(number(families, 'offsetlake_indexed_bytes_total', { table: sealed.name })).toBe(bytes);
      // The table with file_window 1h holds its records in an open range: read, not in files, its lag all of them.
      expect(number(families, 'offsetlake_indexed_records_total', { table: held.name })).toBeUndefined();
      for (const [partition, batch] of produced.entries()) {
        expect(number(families, 'offsetlake_partition_lag_records', { table: sealed.name, partition: String(partition) })).toBe(0);
        expect(number(families, 'offsetlake_partition_lag_seconds', { table: sealed.name, partition: String(partition) })).toBe(0);
        expect(number(families, 'offsetlake_partition_lag_records', { table: held.name, partition: String(partition) })).toBe(batch.length);
        expect(number(families, 'offsetlake_partition_lag_seconds', { table: held.name, partition: String(partition) })).toBeGreaterThan(0);
      }
      // Both tables' indexers read every record once.
      expect(number(families, 'offsetlake_run_kafka_records_total')).toBe(2 * total);
      expect(number(families, 'offsetlake_run_kafka_bytes_total')).toBe(2 * bytes);
      const commits = number(families, 'offsetlake_commit_duration_seconds_count')!;
      expect(commits).toBeGreaterThanOrEqual(2); // at least one commit per partition of the sealed table
      expect(number(families, 'offsetlake_commit_duration_seconds_bucket', { le: '+Inf' })).toBe(commits);
      expect(number(families, 'offsetlake_commit_duration_seconds_sum')).toBeGreaterThan(0);
      expect(number(families, 'offsetlake_run_rounds_total')).toBeGreaterThan(0);
      expect(number(families, 'offsetlake_run_failures_total', { kind: 'delivery' })).toBe(0);
    } finally {
      await stop(run);
    }

    // serve: caught up now, and every file of the sealed table fetched whole once.
    const manifest = (await (await get(`/tables/${sealed.name}/files`)).json()) as { files: { path: string; sizeBytes: number; records: number }[] };
    expect(manifest.files.reduce((sum, f) => sum + f.records, 0)).toBe(total);
    let served = 0;
    for (const file of manifest.files) served += (await (await get(file.path)).arrayBuffer()).byteLength;
    requests += 1;
    const after = await scrape(`${base}/metrics`);
    const afterAtMost = sinceCaughtUpSeen();
    for (const [partition, batch] of produced.entries()) {
      const labels = { partition: String(partition) };
      expect(number(after, 'offsetlake_partition_lag_records', { table: sealed.name, ...labels })).toBe(0);
      expect(number(after, 'offsetlake_partition_lag_seconds', { table: sealed.name, ...labels })).toBe(0);
      // The held table's records are still in no file (run released its open range unsealed): behind since the same sample as before.
      expect(number(after, 'offsetlake_partition_lag_records', { table: held.name, ...labels })).toBe(batch.length);
      expect(number(after, 'offsetlake_partition_lag_seconds', { table: held.name, ...labels })).toBeGreaterThan(number(before, 'offsetlake_partition_lag_seconds', { table: held.name, ...labels })!);
      expect(number(after, 'offsetlake_partition_lag_seconds', { table: held.name, ...labels })).toBeLessThanOrEqual(afterAtMost);
    }
    expect(number(after, 'offsetlake_read_served_bytes_total')).toBe(served);
    expect(number(after, 'offsetlake_read_kafka_records_total')).toBe(total);
    expect(number(after, 'offsetlake_read_kafka_bytes_total')).toBe(bytes);
    expect(number(after, 'offsetlake_read_requests_total')).toBe(requests);
    expect(number(after, 'offsetlake_read_rebuild_mismatches_total')).toBe(0);
    const rebuilds = number(after, 'offsetlake_read_rebuilds_total', { kind: 'granule' })! + number(after, 'offsetlake_read_rebuilds_total', { kind: 'file' })!;
    expect(rebuilds).toBeGreaterThanOrEqual(manifest.files.length);
    expect(number(after, 'offsetlake_rebuild_duration_seconds_count', { kind: 'granule' })! + number(after, 'offsetlake_rebuild_duration_seconds_count', { kind: 'file' })!).toBe(rebuilds);

    // Asked for JSON first, /metrics is the JSON it always was.
    const json = await get('/metrics', { accept: 'application/json' });
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await json.json()).toMatchObject({ bytesServed: served, kafkaRecords: total, kafkaBytes: bytes, requests });
  }, 240_000);

  it('serve --log-format json and run --once --log-format json write one JSON object per stderr line, and a request\'s trace id is in its lines and its x-request-id header', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const traced = await get('/tables/no_such_table/files', { traceparent });
    expect(traced.status).toBe(404);
    expect(traced.headers.get('x-request-id')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    const named = await get('/tables', { 'x-request-id': 'my-request-42' });
    expect(named.headers.get('x-request-id')).toBe('my-request-42');
    const fresh = await get('/tables');
    const generated = fresh.headers.get('x-request-id')!;
    expect(generated).toMatch(/^[0-9a-f]{32}$/);
    expect(generated).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736');

    await serve.waitFor(new RegExp(generated));
    const lines = serve.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const line of lines) {
      expect(typeof line.message).toBe('string');
      expect(['debug', 'info', 'warn', 'error']).toContain(line.level);
      expect(new Date(line.time as string).toISOString()).toBe(line.time);
    }
    const of = (trace: string) => lines.filter((line) => line.trace === trace);
    expect(of('4bf92f3577b34da6a3ce929d0e0e4736')).toEqual([expect.objectContaining({ level: 'info', table: 'no_such_table', path: '/tables/no_such_table/files', status: 404, method: 'GET' })]);
    expect(of('my-request-42')).toEqual([expect.objectContaining({ path: '/tables', status: 200 })]);
    expect(of(generated)).toHaveLength(1);

    // run --once over a table whose topic is gone: its lines name the table, and it exits 1.
    const logs = await testEngine('observability_logs');
    try {
      const topic = await newTopic(logs, 1, 'gone');
      const table = await testTable(logs, topic);
      await deleteTopic(logs.kafka, topic);
      const once = await runCli(logs.config.databaseUrl, ['run', '--once', '--batch-window', '100ms'], { OFFSETLAKE_LOG_FORMAT: 'json' });
      expect(once.code).toBe(1);
      const runLines = once.stderr.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      for (const line of runLines) expect(Object.keys(line).slice(0, 3)).toEqual(['time', 'level', 'message']);
      expect(runLines.some((line) => line.table === table.name && String(line.message).includes(topic))).toBe(true);
      const bad = await runCli(logs.config.databaseUrl, ['run', '--once', '--log-format', 'yaml']);
      expect([bad.code, bad.stderr.trim()]).toEqual([2, 'offsetlake run: --log-format must be human or json, got "yaml"']);
    } finally {
      await logs.close();
    }
  }, 180_000);
});
