/**
 * The freshness probe, short (issue 49; the figures: bench/freshness.ts, docs/measurements.md):
 * `offsetlake run` and `offsetlake serve` up as a user starts them, a table at the DEFAULT
 * settings, records produced one by one, and each face (DuckDB over the DuckLake attach,
 * DuckDB's iceberg extension and pyiceberg over the Iceberg catalog, `query`) polled until
 * it returns every record. What is asserted is that each face returns each record, and
 * nothing else is checked by our code: the engines are DuckDB and pyiceberg. How long each
 * took is written to stderr, never asserted (timing belongs in the bench).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { allFaces, probeFreshness, quantile, type ProbeResult } from '../../bench/freshness-probe.js';
import { asStackReader } from '../helpers/database.js';
import { testEngine } from '../helpers/engine.js';

let engine: Engine;
let result: ProbeResult;

beforeAll(async () => {
  engine = await testEngine('freshness');
  result = await probeFreshness({
    engine, readerDatabaseUrl: asStackReader(engine.config.databaseUrl), records: 16, rate: 2, partitions: 2, waitMs: 240_000,
    log: (line) => process.stderr.write(`freshness: ${line}\n`),
  });
  for (const face of result.faces) {
    const visible = face.visibleMs.filter((ms): ms is number => ms !== undefined);
    process.stderr.write(`freshness: ${face.face}: ${face.seen}/${result.produced.length} returned, visible after p50 ${Math.round(quantile(visible, 0.5))} ms, max ${Math.round(Math.max(...visible))} ms; polls p50 ${Math.round(quantile(face.pollMs, 0.5))} ms\n`);
  }
}, 420_000);

afterAll(async () => {
  await engine?.close();
});

describe('freshness: every committed record becomes visible through every face, with run and serve up at default settings', () => {
  it('the probe produced one record at a time, over both partitions', () => {
    expect(result.produced).toHaveLength(16);
    expect(new Set(result.produced.map((record) => record.partition))).toEqual(new Set([0, 1]));
  });

  for (const face of allFaces) {
    it(`${face}: returns every record produced`, () => {
      const figures = result.faces.find((candidate) => candidate.face === face)!;
      expect(figures.error, `${face} failed`).toBeUndefined();
      const missing = result.produced.filter((_, i) => figures.visibleMs[i] === undefined).map((record) => `${record.partition}:${record.offset}`);
      expect(missing, `${face} never returned these records (partition:offset)`).toEqual([]);
      expect(figures.pollMs.length).toBeGreaterThan(0);
    });
  }
});
